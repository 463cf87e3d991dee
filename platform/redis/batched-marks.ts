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

/** What a claim found: `null` when it took the key, else the value already there. */
export type ClaimAnswer = string | null;

interface PendingClaim {
  key: string;
  value: string;
  ttlMs: number;
  resolve(answer: ClaimAnswer | undefined): void;
}

/**
 * Short-lived marks in Redis, written in batches: a caller notes a mark without waiting, and
 * they go out together (one pipeline of SET ... PX) every `flushMs` or `maxBatch` marks, so a
 * steady flow of marks costs a round trip per batch, not per mark. A read is one GET bounded by
 * `readTimeoutMs`. A claim (SET NX) takes a key before the work it guards, in pipelines of its
 * own that go out at once when none is out. Best effort all ways: marks not written (Redis away)
 * are dropped, and a read or claim that fails or is late answers undefined.
 */
export class RedisBatchedMarks {
  private pending = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private lastFailureReport = 0;
  private writing: Promise<void> = Promise.resolve();
  /** Batches on their way to Redis. */
  private inWrite: Map<string, string>[] = [];
  /** Claims waiting for the next round trip, and whether one is out. */
  private claims: PendingClaim[] = [];
  private claiming = false;
  /** Keys to delete with the next batch of marks. */
  private releases = new Set<string>();

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly options: BatchedMarksOptions,
  ) {}

  set(key: string, value: string): void {
    this.releases.delete(key);
    this.pending.set(key, value);
    if (this.pending.size >= (this.options.maxBatch ?? 1_000)) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.options.flushMs ?? 20);
  }

  async get(key: string): Promise<string | undefined> {
    const local = this.unwritten(key);
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

  /**
   * Takes `key` for `ttlMs` unless it is set (`SET key value NX PX ttl GET`): answers null when
   * it took it, the value there when not, and undefined when Redis cannot say in time (down, or
   * later than `readTimeoutMs`). Claims of one turn of the event loop, and all those made while a
   * round trip of claims is out, go in one pipeline: one round trip for many claims, and an idle
   * store sends at once. A mark of this process not written yet answers for its key at once.
   */
  claim(key: string, value: string, ttlMs: number): Promise<ClaimAnswer | undefined> {
    // a release not sent yet is taken back: the key is this process's again
    this.releases.delete(key);
    const local = this.unwritten(key);
    if (local !== undefined) return Promise.resolve(local);
    if (DOWN.has(this.redis.status)) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined = setTimeout(() => {
        timer = undefined;
        resolve(undefined);
      }, this.options.readTimeoutMs ?? 250);
      this.claims.push({ key, value, ttlMs, resolve: (answer) => {
        if (timer === undefined) return;
        clearTimeout(timer);
        timer = undefined;
        resolve(answer);
      } });
      if (this.claims.length === 1 && !this.claiming) setImmediate(() => this.sendClaims());
    });
  }

  /** A mark of this process not written yet (pending, or in a batch on its way): read where it waits. */
  private unwritten(key: string): string | undefined {
    return this.pending.get(key) ?? this.inWrite.find((batch) => batch.has(key))?.get(key);
  }

  /** Lets go of a claim (deleted with the next batch of marks); a mark noted later for the key still goes out. */
  release(key: string): void {
    if (this.pending.has(key)) return;
    this.releases.add(key);
    this.timer ??= setTimeout(() => this.flush(), this.options.flushMs ?? 20);
  }

  /** One pipeline of the claims waiting now; the next goes out when it is answered. */
  private sendClaims(): void {
    if (this.claiming || this.claims.length === 0) return;
    const batch = this.claims;
    this.claims = [];
    this.claiming = true;
    const done = (answers: (ClaimAnswer | undefined)[]) => {
      batch.forEach((c, i) => c.resolve(answers[i]));
      this.claiming = false;
      if (this.claims.length > 0) this.sendClaims();
    };
    try {
      const pipeline = this.redis.pipeline();
      for (const c of batch) pipeline.call('SET', this.prefix + c.key, c.value, 'PX', String(c.ttlMs), 'NX', 'GET');
      pipeline.exec().then(
        (results) => done(batch.map((_, i) => {
          const [err, answer] = results?.[i] ?? [new Error('no answer')];
          return err ? undefined : ((answer as string | null) ?? null);
        })),
        () => done([]),
      );
    } catch {
      done([]);
    }
  }

  /** Writes what is pending now; resolves once every batch started so far is written (or failed). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.size > 0 || this.releases.size > 0) {
      const batch = this.pending;
      const releases = this.releases;
      this.pending = new Map();
      this.releases = new Set();
      this.inWrite.push(batch);
      const written = DOWN.has(this.redis.status) ? Promise.reject(new Error('redis is not reachable')) : this.write(batch, releases);
      const settled = written.then(() => undefined, (err: unknown) => this.failed(err)).finally(() => {
        this.inWrite = this.inWrite.filter((b) => b !== batch);
      });
      this.writing = Promise.all([this.writing, settled]).then(() => undefined);
    }
    return this.writing;
  }

  /** One pipeline of SET ... PX for the batch and DEL for the releases; a client that fails to build it fails the batch, never the timer. */
  private async write(batch: Map<string, string>, releases: Set<string>): Promise<void> {
    const pipeline = this.redis.pipeline();
    for (const [key, value] of batch) pipeline.set(this.prefix + key, value, 'PX', this.options.ttlMs);
    for (const key of releases) pipeline.del(this.prefix + key);
    await pipeline.exec();
  }

  private failed(err: unknown): void {
    const now = Date.now();
    if (now - this.lastFailureReport < 60_000) return;
    this.lastFailureReport = now;
    this.options.onWriteFailed?.(err);
  }
}
