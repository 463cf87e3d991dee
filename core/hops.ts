/**
 * The header every delivery carries: how many deliveries of this service the payload has gone
 * through. A Hook URL refuses what passed through more than MAX_HOPS, so a chain of destinations
 * and Hook URLs (here or on another deployment) cannot loop for ever.
 */
export const HOPS_HEADER = 'x-hookline-hops';

/** The hop count a header value states; only this service writes it, so anything else counts as none. */
export function hopsOf(value: string | string[] | undefined): number {
  if (value === undefined) return 0;
  const hops = Number(value);
  return Number.isSafeInteger(hops) && hops > 0 ? hops : 0;
}
