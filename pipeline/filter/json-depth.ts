const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const BOM = [0xef, 0xbb, 0xbf];
const opens = (c: number | undefined) => c === 0x5b || c === 0x7b; // [ {
const closes = (c: number) => c === 0x5d || c === 0x7d; // ] }
const isSpace = (c: number | undefined) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/**
 * Whether JSON text nests arrays and objects more than `max` levels deep, read in one pass over
 * the bytes with a counter: no recursion and no parse, so a body of a million `[` costs one
 * scan. Brackets inside strings do not count. A body that does not start like an array or an
 * object is not JSON nesting at all (form data, plain text) and never exceeds.
 */
export function jsonDepthExceeds(body: Buffer, max: number): boolean {
  let i = BOM.every((b, k) => body[k] === b) ? BOM.length : 0;
  while (isSpace(body[i])) i++;
  if (!opens(body[i])) return false;
  let depth = 0;
  let inString = false;
  for (; i < body.length; i++) {
    const c = body[i]!;
    // UTF-8 continuation bytes are all >= 0x80, so these ASCII tests never hit inside a character
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (opens(c)) {
      if (++depth > max) return true;
    } else if (closes(c)) depth--;
  }
  return false;
}
