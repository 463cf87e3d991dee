import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { AppError } from '../../core/errors';

// Deletes the lock only while it still holds our token: a lock that expired and was taken by
// another process is never released by us.
const RELEASE_IF_OWNER = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

export interface LockOptions {
  /** The lock lapses after this long, so a process that dies holding it blocks no one for longer. */
  ttlMs: number;
  /** How long to wait for a lock another request holds before giving up (503). */
  waitMs: number;
}

/**
 * Short mutual exclusion of one entity across API processes, for a read-check-write: SET NX PX
 * with a random token, polled while another holder has it, released by compare-and-delete.
 */
export class EntityLocks {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly options: LockOptions = { ttlMs: 10_000, waitMs: 5_000 },
  ) {}

  async withLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const key = `${this.prefix}lock:${name}`;
    const token = randomBytes(12).toString('base64url');
    const deadline = Date.now() + this.options.waitMs;
    for (let wait = 5; ; wait = Math.min(wait * 2, 100)) {
      let taken: string | null;
      try {
        taken = await this.redis.set(key, token, 'PX', this.options.ttlMs, 'NX');
      } catch (err) {
        throw new AppError('service-unavailable', 'the lock store (Redis) is unreachable; try again shortly', {}, true, { cause: err });
      }
      if (taken === 'OK') break;
      if (Date.now() >= deadline) throw new AppError('service-unavailable', 'another change of this object is still running; try again shortly', {}, true);
      await new Promise((r) => setTimeout(r, wait));
    }
    try {
      return await fn();
    } finally {
      await this.redis.eval(RELEASE_IF_OWNER, 1, key, token).catch(() => undefined);
    }
  }
}
