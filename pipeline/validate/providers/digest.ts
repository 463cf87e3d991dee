import { timingSafeEqual } from 'node:crypto';
import { hmacOf } from '../../../core/hmac-keys';
import { isBase64 } from '../../../core/providers';

/** HMAC over the parts in order, so that a signed prefix and the raw body need no concatenated copy. */
export function hmac(algorithm: 'sha1' | 'sha256' | 'sha512', key: string | Buffer, ...parts: (string | Buffer)[]): Buffer {
  const mac = typeof key === 'string' ? hmacOf(algorithm, `utf8:${key}`, () => Buffer.from(key, 'utf8')) : hmacOf(algorithm, `bytes:${key.toString('base64')}`, () => key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

/** Constant-time comparison; unequal lengths never match (timingSafeEqual would throw). */
export function digestsEqual(expected: Buffer, actual: Buffer): boolean {
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

/** True when any given signature equals any expected digest (one per secret). */
export function anyDigestMatches(expected: Buffer[], given: Buffer[]): boolean {
  return expected.some((e) => given.some((g) => digestsEqual(e, g)));
}

// Buffer.from stops silently at the first bad character, so text with trailing junk would still
// decode to a full digest; a strict check keeps "the header holds exactly this digest" true.
const HEX = /^(?:[0-9a-fA-F]{2})+$/;

export function strictHex(text: string): Buffer | null {
  return HEX.test(text) ? Buffer.from(text, 'hex') : null;
}

export function strictBase64(text: string): Buffer | null {
  return isBase64(text) ? Buffer.from(text, 'base64') : null;
}
