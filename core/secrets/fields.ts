/** Provider config members whose values are secrets: sealed at rest, masked in answers. */
export const SECRET_FIELDS = /secret|token|password|key/i;
export const MASK = '****';

/** A secret as the API shows it: its last four characters behind the mask. */
export function maskValue(v: unknown): unknown {
  return typeof v === 'string' ? `${MASK}${v.slice(-4)}` : MASK;
}
