import { DEFAULT_TOLERANCE_SECONDS, MAX_TOLERANCE_SECONDS } from '../../../core/providers';

/** `tolerance_seconds` of the config when it is usable, else the default. */
export function toleranceOf(config: Record<string, unknown>): number {
  const t = config.tolerance_seconds;
  return typeof t === 'number' && Number.isInteger(t) && t >= 1 && t <= MAX_TOLERANCE_SECONDS ? t : DEFAULT_TOLERANCE_SECONDS;
}

/** Unix seconds as the providers send them; null for anything else. */
export function parseUnixSeconds(text: string): number | null {
  return /^\d{1,12}$/.test(text.trim()) ? Number(text.trim()) : null;
}

/**
 * Whether a signed timestamp is close enough to when the request arrived. Compared with the
 * arrival time, not the clock at validation, so that a backlog or a replay of the received
 * topic does not turn requests that were fresh on arrival into failures.
 */
export function withinTolerance(timestampSeconds: number, receivedAtMs: number, toleranceSeconds: number): boolean {
  return Math.abs(receivedAtMs / 1000 - timestampSeconds) <= toleranceSeconds;
}
