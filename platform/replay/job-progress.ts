import type { Redis } from 'ioredis';

/**
 * What Redis holds of a running replay job, beside its entity: how far it got (written after
 * every batch, newer than the entity), the batch being sent, the cancel mark, and the tries that
 * failed in a row. A batch is sent only while the job is not cancelled, and a cancel reads the
 * progress in the same step as it sets its mark: so a cancel counts every batch begun before it
 * (waiting for one still being sent) and no batch begins after it.
 */

/** Redis keys of one job. */
export const replayKeys = (prefix: string, jobId: string) => ({
  lease: `${prefix}replay:lease:${jobId}`,
  progress: `${prefix}replay:progress:${jobId}`,
  cancelled: `${prefix}replay:cancelled:${jobId}`,
  tries: `${prefix}replay:tries:${jobId}`,
});
type Keys = ReturnType<typeof replayKeys>;

/** Where a job stands: matches up to (after_ms, after_id) are queued; `done` once all are. */
export interface Progress {
  after_ms: number;
  after_id: string;
  done: boolean;
  replayed: number;
  skipped: number;
}

/** Progress, marks and tries kept in Redis after their last write. */
const TTL_S = 30 * 86_400;
/** How long a cancel waits for a batch being sent when it comes (its runner sends with Kafka's timeouts). */
const IN_FLIGHT_WAIT_MS = 10_000;
/** First wait after a failed try; each further one doubles it, up to RETRY_MAX_MS. */
const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 60_000;

// the job not cancelled: the batch of ARGV[1] deliveries is marked as being sent
const BEGIN = `if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'sending', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1`;
// the mark, and the progress as it stands at that moment
const CANCEL = `redis.call('SET', KEYS[2], ARGV[1], 'EX', ARGV[2])
return redis.call('HMGET', KEYS[1], 'replayed', 'skipped', 'sending')`;
// one more failed try, with its reason and the time before which the job is not tried again
const FAILED_TRY = `local n = redis.call('HINCRBY', KEYS[1], 'count', 1)
local wait = math.min(tonumber(ARGV[2]) * 2 ^ (n - 1), tonumber(ARGV[3]))
redis.call('HSET', KEYS[1], 'reason', ARGV[1], 'next_at', tonumber(ARGV[4]) + wait)
redis.call('EXPIRE', KEYS[1], ARGV[5])
return n`;

/** The progress Redis holds, when a batch has been recorded. */
export async function readProgress(redis: Redis, keys: Keys): Promise<Progress | undefined> {
  const held = await redis.hgetall(keys.progress);
  if (held.after_id === undefined) return undefined;
  return { after_ms: Number(held.after_ms), after_id: held.after_id, done: held.done === '1', replayed: Number(held.replayed), skipped: Number(held.skipped ?? 0) };
}

/** Marks a batch of `size` as being sent; false when the job is cancelled (the batch must not go). */
export async function beginBatch(redis: Redis, keys: Keys, size: number): Promise<boolean> {
  return Number(await redis.eval(BEGIN, 2, keys.progress, keys.cancelled, size, TTL_S)) === 1;
}

/** Records how far the job got, and that no batch is being sent any more (one step). */
export async function recordProgress(redis: Redis, keys: Keys, p: Progress): Promise<void> {
  await redis
    .multi()
    .hset(keys.progress, { after_ms: p.after_ms, after_id: p.after_id, done: p.done ? '1' : '0', replayed: p.replayed, skipped: p.skipped })
    .hdel(keys.progress, 'sending')
    .expire(keys.progress, TTL_S)
    .exec();
}

/** A batch that was not sent: nothing is being sent any more, and the progress is unchanged. */
export async function abandonBatch(redis: Redis, keys: Keys): Promise<void> {
  await redis.hdel(keys.progress, 'sending');
}

/**
 * Marks the job cancelled: from here no batch begins. Answers what it had queued, once a batch
 * being sent at the mark is recorded or abandoned (undefined: no batch recorded yet). A batch
 * still being sent after IN_FLIGHT_WAIT_MS (its runner stuck or gone) is not counted.
 */
export async function markCancelled(redis: Redis, keys: Keys, at: string): Promise<{ replayed?: number; skipped?: number }> {
  let [replayed, skipped, sending] = (await redis.eval(CANCEL, 2, keys.progress, keys.cancelled, at, TTL_S)) as (string | null)[];
  const deadline = Date.now() + IN_FLIGHT_WAIT_MS;
  while (sending !== null && sending !== undefined && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 10));
    [replayed, skipped, sending] = await redis.hmget(keys.progress, 'replayed', 'skipped', 'sending');
  }
  const count = (v: string | null | undefined) => (v === null || v === undefined ? undefined : Number(v));
  return { replayed: count(replayed), skipped: count(skipped) };
}

/** Whether the job was cancelled (its mark is set). */
export async function isCancelled(redis: Redis, keys: Keys): Promise<boolean> {
  return (await redis.exists(keys.cancelled)) === 1;
}

/** The tries of the job that failed in a row, the last one's reason, and when it may be tried again (ms). */
export async function readTries(redis: Redis, keys: Keys): Promise<{ count: number; reason: string; nextAtMs: number }> {
  const [count, reason, nextAt] = await redis.hmget(keys.tries, 'count', 'reason', 'next_at');
  return { count: Number(count ?? 0), reason: reason ?? '', nextAtMs: Number(nextAt ?? 0) };
}

/** Counts a failed try; the next one waits 1 s, doubling with each failure in a row up to 60 s. Returns the count. */
export async function noteFailedTry(redis: Redis, keys: Keys, reason: string): Promise<number> {
  return Number(await redis.eval(FAILED_TRY, 1, keys.tries, reason, RETRY_FIRST_MS, RETRY_MAX_MS, Date.now(), TTL_S));
}

/** A try got through: the failures before it no longer count. */
export async function clearTries(redis: Redis, keys: Keys): Promise<void> {
  await redis.del(keys.tries);
}
