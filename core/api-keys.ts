import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { ulid } from './ids';
import type { ApiKey } from './model';

/**
 * API keys look like `hlk_<ulid>_<secret>`: the middle part names the key (`key_<ulid>`) so
 * it can be found without scanning, and only the SHA-256 of the whole key is stored. The
 * secret has 256 bits of entropy, so a fast hash is enough (no password-style stretching).
 */
export function newApiKey(): { keyId: string; apiKey: string; sha256: string } {
  const id = ulid();
  const apiKey = `hlk_${id}_${randomBytes(32).toString('base64url')}`;
  return { keyId: `key_${id}`, apiKey, sha256: hashApiKey(apiKey) };
}

export function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey).digest('hex');
}

/** The key id an API key names, or undefined when it is not shaped like one of ours. */
export function keyIdOf(apiKey: string): string | undefined {
  const m = /^hlk_([0-9a-hjkmnp-tv-z]{26})_[A-Za-z0-9_-]{43}$/.exec(apiKey);
  return m ? `key_${m[1]}` : undefined;
}

export function apiKeyMatches(apiKey: string, storedSha256: string): boolean {
  const given = Buffer.from(hashApiKey(apiKey), 'hex');
  const stored = Buffer.from(storedSha256, 'hex');
  return given.length === stored.length && timingSafeEqual(given, stored);
}

export type ApiKeyStatus = 'active' | 'expired' | 'revoked';

/** Revocation wins over expiry: a key revoked before it expired still reads as revoked. */
export function keyStatus(key: Pick<ApiKey, 'expires_at' | 'revoked_at'>, now = Date.now()): ApiKeyStatus {
  if (key.revoked_at) return 'revoked';
  if (key.expires_at && Date.parse(key.expires_at) <= now) return 'expired';
  return 'active';
}
