import { createHmac, createSecretKey, type Hmac, type KeyObject } from 'node:crypto';

/** Most keys kept: destinations' and ingesters' secrets in use at once in one process. */
const MAX_KEYS = 10_000;
const keys = new Map<string, KeyObject>();

/**
 * An HMAC over `key`, its KeyObject made once per key. Node 22 and later check whether a key
 * given as a Buffer or string is a KeyObject by way of a thrown and caught error, which made
 * `createHmac` about five times dearer (15 µs against 3 here, on Node 24) for every signed
 * delivery and every verified webhook; a KeyObject takes the cheap path. The oldest key goes
 * first once MAX_KEYS are kept. `id` names the key in the cache (the key's own text).
 */
export function hmacOf(algorithm: string, id: string, key: () => Buffer): Hmac {
  let object = keys.get(id);
  if (!object) {
    object = createSecretKey(key());
    if (keys.size >= MAX_KEYS) keys.delete(keys.keys().next().value!);
    keys.set(id, object);
  }
  return createHmac(algorithm, object);
}
