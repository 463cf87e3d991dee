import { isUtf8 } from 'node:buffer';
import { hash } from 'node:crypto';

/**
 * How a webhook body is kept in a ClickHouse String column reached through JSON: UTF-8 text as
 * it is, anything else as `base64:<data>`. A text body that itself starts with the marker is
 * encoded too, so every stored value reads back one way only.
 */
const MARKER = 'base64:';

export function encodeStoredBody(bytes: Buffer): string {
  if (!isUtf8(bytes)) return MARKER + bytes.toString('base64');
  const text = bytes.toString('utf8');
  return text.startsWith(MARKER) ? MARKER + bytes.toString('base64') : text;
}

/** SHA-256 of `bytes`, hex: the one-shot digest, since every event's body is hashed on its way. */
export function sha256Hex(bytes: Buffer): string {
  return hash('sha256', bytes, 'hex');
}

/**
 * The exact bytes of a stored body, checked against the SHA-256 recorded with it; undefined
 * when no reading gives those bytes. Rows written before the marker was always encoded may hold
 * a text body starting with it as text: the digest tells the two readings apart.
 */
export function decodeStoredBody(stored: string, expectedSha256: string): Buffer | undefined {
  const readings = stored.startsWith(MARKER) ? [Buffer.from(stored.slice(MARKER.length), 'base64'), Buffer.from(stored, 'utf8')] : [Buffer.from(stored, 'utf8')];
  return readings.find((bytes) => sha256Hex(bytes) === expectedSha256);
}
