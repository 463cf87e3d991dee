import type { Redis } from 'ioredis';

/** Known to be down: a read answers "no mark" at once instead of waiting for a timeout. */
const DOWN = new Set(['reconnecting', 'close', 'end']);

export interface BatchedMarksOptions {
  /** How long a mark is kept, ms. */
  ttlMs: number;
  /** Longest a mark waits to be written with others, ms (default 20). */
  flushMs?: number;
  /** Marks written in one round trip at most (default 1000). */
  maxBatch?: number;
  /** Longest a read waits for Redis before it answers "no mark", ms (default 250). */
  readTimeoutMs?: number;
  /** Told when a batch of marks could not be written (at most once a minute). */
  onWriteFailed?(err: unknown): void;
}

/**
 * Short-lived marks in Redis, written in batches: a caller notes a mark without waiting, and
 * they go out together (one pipeline of SET ... PX) every `flushMs` or `maxBatch` marks, so a
 * steady flow of marks costs a round trip per batch, not per mark. A read is one GET bounded by
 * `readTimeoutMs`. Best effort both ways: marks not written (Redis away) are dropped, and a read
 * that fails or is late answers undefined.
 */
export class RedisBatchedMarks {
  private pending = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private lastFailureReport = 0;
  private writing: Promise<void> = Promise.resolve();
  /** Batches on their way to Redis. */
  private inWrite: Map<string, string>[] = [];

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly options: BatchedMarksOptions,
  ) {}

  set(key: string, value: string): void {
    this.pending.set(key, value);
    if (this.pending.size >= (this.options.maxBatch ?? 1_000)) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.options.flushMs ?? 20);
  }

  async get(key: string): Promise<string | undefined> {
    // a mark of this process not written yet is read where it waits
    const local = this.pending.get(key) ?? this.inWrite.find((batch) => batch.has(key))?.get(key);
    if (local !== undefined) return local;
    if (DOWN.has(this.redis.status)) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), this.options.readTimeoutMs ?? 250);
    });
    try {
      const value = await Promise.race([this.redis.get(this.prefix + key).catch(() => null), late]);
      return value ?? undefined;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Writes what is pending now; resolves once every batch started so far is written (or failed). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.size > 0) {
      const batch = this.pending;
      this.pending = new Map();
      this.inWrite.push(batch);
      const written = DOWN.has(this.redis.status) ? Promise.reject(new Error('redis is not reachable')) : this.write(batch);
      const settled = written.then(() => undefined, (err: unknown) => this.failed(err)).finally(() => {
        this.inWrite = this.inWrite.filter((b) => b !== batch);
      });
      this.writing = Promise.all([this.writing, settled]).then(() => undefined);
    }
    return this.writing;
  }

  /** One pipeline of SET ... PX for the batch; a client that fails to build it fails the batch, never the timer. */
  private async write(batch: Map<string, string>): Promise<void> {
    const pipeline = this.redis.pipeline();
    for (const [key, value] of batch) pipeline.set(this.prefix + key, value, 'PX', this.options.ttlMs);
    await pipeline.exec();
  }

  private failed(err: unknown): void {
    const now = Date.now();
    if (now - this.lastFailureReport < 60_000) return;
    this.lastFailureReport = now;
    this.options.onWriteFailed?.(err);
  }
}
