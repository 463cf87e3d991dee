import type { Redis } from 'ioredis';

/** A claim older than this whose owner never appeared in the configuration is abandoned. */
const ABANDONED_AFTER_MS = 30_000;

// Replaces the claim only if it still holds the value we read (compare-and-set).
const REPLACE_IF = `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]) return 1 end return 0`;
const DELETE_IF_OWNER = `local v = redis.call('GET', KEYS[1]) if v and string.sub(v, 1, string.len(ARGV[1]) + 1) == ARGV[1] .. '|' then return redis.call('DEL', KEYS[1]) end return 0`;

/**
 * Uniqueness of names within a tenant (destination names): the first creator to SET NX the
 * claim wins, so concurrent creates of one name give exactly one winner. A claim left by a
 * creator that died before writing its entity is taken over once it is old enough.
 */
export class RedisNameClaims {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  private key(tenantId: string, kind: string, name: string): string {
    return `${this.prefix}claim:${tenantId}:${kind}:${name.toLowerCase()}`;
  }

  async claim(tenantId: string, kind: string, name: string, ownerId: string, isLive: (owner: string) => boolean): Promise<boolean> {
    const key = this.key(tenantId, kind, name);
    const value = `${ownerId}|${Date.now()}`;
    if ((await this.redis.set(key, value, 'NX')) === 'OK') return true;
    const current = await this.redis.get(key);
    if (current === null) return (await this.redis.set(key, value, 'NX')) === 'OK';
    const [owner, at] = current.split('|');
    if (owner === ownerId) return true;
    if (owner && isLive(owner)) return false;
    if (Date.now() - Number(at) < ABANDONED_AFTER_MS) return false;
    return (await this.redis.eval(REPLACE_IF, 1, key, current, value)) === 1;
  }

  async release(tenantId: string, kind: string, name: string, ownerId: string): Promise<void> {
    await this.redis.eval(DELETE_IF_OWNER, 1, this.key(tenantId, kind, name), ownerId);
  }
}
