/** Provider config members whose values are secrets: sealed at rest, masked in answers. */
export const SECRET_FIELDS = /secret|token|password|key/i;
export const MASK = '****';
/** The most characters of a secret a mask shows. */
const MAX_SHOWN = 4;

/**
 * A secret as the API shows it: its last characters behind the mask, never more than a quarter
 * of it (at most four), so that a short secret is not half given away; under four, the mask alone.
 */
export function maskValue(v: unknown): unknown {
  if (typeof v !== 'string') return MASK;
  // by code point: a character outside the BMP is never cut in half
  const chars = [...v];
  const shown = Math.min(MAX_SHOWN, Math.floor(chars.length / 4));
  return shown > 0 ? `${MASK}${chars.slice(-shown).join('')}` : MASK;
}
