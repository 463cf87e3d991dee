import type { Redis } from 'ioredis';
import { errorMessage, type Logger } from '../../core/log';

/**
 * When each API key was last used, kept in Redis: one hash per tenant, key id → epoch ms.
 * A process writes a key's time at most once per `intervalMs` (the first use after the
 * interval), never once per request, so `last_used_at` is accurate to about the interval.
 * Writes never hold a request up and a failing Redis only costs freshness; the stored time only
 * moves forward, whichever process writes last.
 */
export class KeyUsage {
  /** Key id → when this process last wrote it (bounded by the keys that exist, per the quotas). */
  private readonly written = new Map<string, number>();
  private warned = false;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly intervalMs: number,
    private readonly log?: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  private hashOf(tenantId: string): string {
    return `${this.prefix}api-keys.last-used.${tenantId}`;
  }

  /** Notes a use of the key; writes to Redis only when this process has not for `intervalMs`. */
  record(tenantId: string, keyId: string): void {
    const now = this.now();
    const last = this.written.get(keyId);
    if (last !== undefined && now - last < this.intervalMs) return;
    this.written.set(keyId, now);
    // only forward: a process whose write arrives late never moves the time back
    this.redis
      .eval(
        "local t = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0') if tonumber(ARGV[2]) > t then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end return 0",
        1,
        this.hashOf(tenantId),
        keyId,
        String(now),
      )
      .then(
        () => {
          this.warned = false;
        },
        (err: unknown) => {
          // the next use tries again
          this.written.delete(keyId);
          if (!this.warned) this.log?.warn('could not record the last use of an API key', { key_id: keyId, error: errorMessage(err) });
          this.warned = true;
        },
      );
  }

  /** The last use of each key, as ISO times (null: never used, or not known because Redis failed). */
  async lastUsed(tenantId: string, keyIds: readonly string[]): Promise<Map<string, string | null>> {
    const out = new Map<string, string | null>(keyIds.map((id) => [id, null]));
    if (keyIds.length === 0) return out;
    let values: (string | null)[];
    try {
      values = await this.redis.hmget(this.hashOf(tenantId), ...keyIds);
    } catch (err) {
      this.log?.warn('could not read the last use of API keys', { error: errorMessage(err) });
      return out;
    }
    keyIds.forEach((id, i) => {
      const v = values[i];
      if (v && /^\d+$/.test(v)) out.set(id, new Date(Number(v)).toISOString());
    });
    return out;
  }
}
