import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Admin, Consumer, EachBatchPayload, Kafka } from 'kafkajs';
import { fetchTopicOffsets } from './client';

/** Where a record sits in its topic. */
export interface RecordPosition {
  partition: number;
  offset: string;
}

export interface TopicTableOptions<V> {
  kafka: Kafka;
  topic: string;
  /** Prefix of the throw-away consumer group; each process reads the whole topic with its own group. */
  groupIdPrefix: string;
  /** Turns a record value into the table's value. Tombstones (null values) never reach it. */
  decode(value: Buffer): Promise<V> | V;
  /** Called once per record, in offset order per partition; `value` is null for a tombstone. */
  apply(key: string, value: V | null, position: RecordPosition): void;
  /** Longest wait of one fetch; bounds how stale a reader can be while idle. Default 100 ms. */
  maxWaitTimeInMs?: number;
}

interface Waiter {
  partition: number;
  nextOffset: bigint;
  resolve(): void;
}

/**
 * Materialises a log-compacted topic in memory (the KTable / config-topic pattern):
 * every process reads the whole topic from the beginning and then follows it.
 * `start` resolves once the reader has caught up with the end of the topic as it was
 * when `start` was called; `waitFor` and `catchUp` give read-your-writes.
 */
export class TopicTable<V> {
  private readonly next = new Map<number, bigint>();
  private waiters: Waiter[] = [];
  private consumer: Consumer | undefined;
  private admin: Admin | undefined;
  private failure: Error | undefined;
  private stopped = false;

  constructor(private readonly options: TopicTableOptions<V>) {}

  async start(timeoutMs = 60_000): Promise<void> {
    const { kafka, topic } = this.options;
    this.admin = kafka.admin();
    await this.admin.connect();
    const groupId = `${this.options.groupIdPrefix}-${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
    this.consumer = await reader(kafka, topic, groupId, {
      maxWaitTimeInMs: this.options.maxWaitTimeInMs ?? 100,
      // a crash after stop() must not bring the consumer back
      restart: () => !this.stopped,
      onFailure: (error) => {
        this.failure = error;
      },
      passed: (partition, lastOffset) => this.advance(partition, BigInt(lastOffset) + 1n),
      eachBatch: async ({ batch, heartbeat }) => {
        for (const message of batch.messages) {
          const key = message.key?.toString('utf8') ?? '';
          const value = message.value === null ? null : await this.options.decode(message.value);
          this.options.apply(key, value, { partition: batch.partition, offset: message.offset });
          // per record, not per batch: a reader that sees this record's effect also sees the
          // position move past it (the config store's version must never lag what it shows)
          this.advance(batch.partition, BigInt(message.offset) + 1n);
        }
        if (batch.messages.length > 0) {
          this.advance(batch.partition, BigInt(batch.lastOffset()) + 1n);
        } else {
          // an empty batch at the end of a compacted range still moves the reader forward
          this.advance(batch.partition, BigInt(batch.highWatermark));
        }
        await heartbeat();
      },
    });
    await this.catchUp(timeoutMs);
  }

  /** The next offset of `partition` to apply: every record before it has been applied (or compacted away). */
  nextOffset(partition: number): bigint {
    return this.next.get(partition) ?? 0n;
  }

  /** Resolves once the record at `offset` of `partition` (and all before it) has been applied. */
  waitFor(position: RecordPosition, timeoutMs = 10_000): Promise<void> {
    return this.waitForNext(position.partition, BigInt(position.offset) + 1n, timeoutMs);
  }

  /** Resolves once every record written before this call has been applied. */
  async catchUp(timeoutMs = 10_000): Promise<void> {
    if (!this.admin) throw new Error(`topic table ${this.options.topic} is not started`);
    const offsets = await fetchTopicOffsets(this.admin, this.options.topic);
    await Promise.all(
      offsets.map((o) => this.waitForNext(o.partition, BigInt(o.high), timeoutMs)),
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const pending = this.waiters;
    this.waiters = [];
    for (const w of pending) w.resolve();
    await this.consumer?.disconnect().catch(() => undefined);
    await this.admin?.disconnect().catch(() => undefined);
    this.consumer = undefined;
    this.admin = undefined;
  }

  private waitForNext(partition: number, nextOffset: bigint, timeoutMs: number): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if ((this.next.get(partition) ?? 0n) >= nextOffset) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${this.options.topic}[${partition}] to reach offset ${nextOffset}`));
      }, timeoutMs);
      const waiter: Waiter = {
        partition,
        nextOffset,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      this.waiters.push(waiter);
    });
  }

  private advance(partition: number, nextOffset: bigint): void {
    if ((this.next.get(partition) ?? 0n) >= nextOffset) return;
    this.next.set(partition, nextOffset);
    const still: Waiter[] = [];
    for (const w of this.waiters) {
      if (w.partition === partition && w.nextOffset <= nextOffset) w.resolve();
      else still.push(w);
    }
    this.waiters = still;
  }
}

interface ReaderOptions {
  maxWaitTimeInMs: number;
  restart(): boolean;
  onFailure?(error: Error): void;
  eachBatch(payload: EachBatchPayload): Promise<void>;
  /**
   * Told the last offset of a fetched batch that held no record to hand over: only transaction
   * markers or aborted records, which kafkajs filters out without calling `eachBatch`.
   */
  passed?(partition: number, lastOffset: string): void;
  /** Runs between subscribing and the first fetch (a seek). */
  beforeFirstFetch?(consumer: Consumer): void;
}

/**
 * A reader of a whole topic outside the pipeline's groups: a throw-away group that never
 * commits, reading from the beginning unless told where. The stages' consumers are
 * pipeline/runtime/consume.ts; this is the other consumer loop of the project.
 *
 * It reads committed records only (kafkajs's default isolation, read_committed): a transactional
 * writer's aborted records and its commit / abort markers never reach `eachBatch`, and the end
 * offsets the admin client reports are the last stable ones. A marker still takes an offset, so
 * progress is followed by offsets passed, never by the offset of the last record handed over.
 */
async function reader(kafka: Kafka, topic: string, groupId: string, options: ReaderOptions): Promise<Consumer> {
  const consumer = kafka.consumer({
    groupId,
    maxWaitTimeInMs: options.maxWaitTimeInMs,
    sessionTimeout: 30_000,
    rebalanceTimeout: 10_000,
    allowAutoTopicCreation: false,
    retry: { retries: 8, restartOnFailure: async () => options.restart() },
  });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  consumer.on(consumer.events.CRASH, (event) => {
    if (!event.payload.restart) options.onFailure?.(event.payload.error);
  });
  const passed = options.passed;
  if (passed) {
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
      if (payload.batchSize === 0) passed(payload.partition, payload.lastOffset);
    });
  }
  await consumer.run({ autoCommit: false, eachBatch: options.eachBatch });
  options.beforeFirstFetch?.(consumer);
  return consumer;
}

/** What `readUntil` hands over of one fetched batch: its records, and the last offset it covered (a marker's, maybe). */
interface ReadBatch {
  partition: number;
  messages: EachBatchPayload['batch']['messages'];
  lastOffset: string;
}

/**
 * Reads `topic` with a throw-away group (from `seek`, else from the beginning) until `take` says
 * a batch completed what it wanted, or fails after `timeoutMs`; then leaves and deletes the group.
 */
async function readUntil(kafka: Kafka, admin: Admin, topic: string, timeoutMs: number, take: (batch: ReadBatch) => boolean, seek?: { partition: number; offset: string }): Promise<void> {
  const groupId = `${topic}.reader-${process.pid}-${randomBytes(4).toString('hex')}`;
  let done = false;
  let started: Promise<Consumer> | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out reading ${topic}`)), timeoutMs);
      started = reader(kafka, topic, groupId, {
        maxWaitTimeInMs: 100,
        restart: () => !done,
        onFailure: reject,
        eachBatch: async ({ batch }) => {
          if (done || !take({ partition: batch.partition, messages: batch.messages, lastOffset: batch.lastOffset() })) return;
          done = true;
          resolve();
        },
        passed: (partition, lastOffset) => {
          if (done || !take({ partition, messages: [], lastOffset })) return;
          done = true;
          resolve();
        },
        beforeFirstFetch: seek ? (c) => c.seek({ topic, ...seek }) : undefined,
      });
      started.catch(reject);
    });
  } finally {
    done = true;
    clearTimeout(timer);
    await started?.then((c) => c.disconnect()).catch(() => undefined);
    await admin.deleteGroups([groupId]).catch(() => undefined);
  }
}

/**
 * The newest `count` records of one partition (fewer when it holds fewer), oldest first. It reads
 * back from the end a window at a time, so the cost does not grow with the topic; the window
 * widens while transaction markers and aborted records leave it short of `count` records.
 */
export async function readTail(kafka: Kafka, topic: string, count: number, partition = 0, timeoutMs = 30_000): Promise<{ offset: string; value: Buffer }[]> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const p = (await fetchTopicOffsets(admin, topic)).find((o) => o.partition === partition);
    if (!p) return [];
    const [low, end] = [BigInt(p.low), BigInt(p.high)];
    for (let window = BigInt(Math.max(8, 4 * count)); ; window *= 4n) {
      const from = end - window > low ? end - window : low;
      if (from >= end) return [];
      const found: { offset: string; value: Buffer }[] = [];
      await readUntil(kafka, admin, topic, timeoutMs, (batch) => {
        if (batch.partition !== partition) return false;
        for (const m of batch.messages) if (m.value && BigInt(m.offset) < end) found.push({ offset: m.offset, value: m.value });
        return BigInt(batch.lastOffset) + 1n >= end;
      }, { partition, offset: from.toString() });
      if (found.length >= count || from === low) return found.slice(-count);
    }
  } finally {
    await admin.disconnect();
  }
}

/** The newest record of one partition, or null when it holds none. */
export async function readLastRecord(kafka: Kafka, topic: string, partition = 0, timeoutMs = 30_000): Promise<{ offset: string; value: Buffer } | null> {
  return (await readTail(kafka, topic, 1, partition, timeoutMs))[0] ?? null;
}

/** A record as read back, with its place. */
export interface StoredRecord {
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, unknown>;
  timestamp: string;
}

/**
 * Every record a topic holds now (up to each partition's end when called), as its bytes, read
 * from the beginning by a throw-away group: for tools and checks that look at a topic whole.
 */
export async function readTopic(kafka: Kafka, topic: string, timeoutMs = 30_000): Promise<StoredRecord[]> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const ends = new Map((await fetchTopicOffsets(admin, topic)).map((o) => [o.partition, BigInt(o.high)]));
    const left = new Set([...ends].filter(([, high]) => high > 0n).map(([p]) => p));
    const records: StoredRecord[] = [];
    if (left.size === 0) return records;
    await readUntil(kafka, admin, topic, timeoutMs, (batch) => {
      const end = ends.get(batch.partition)!;
      for (const m of batch.messages) {
        if (BigInt(m.offset) < end) records.push({ partition: batch.partition, offset: m.offset, key: m.key, value: m.value, headers: m.headers ?? {}, timestamp: m.timestamp });
      }
      if (BigInt(batch.lastOffset) + 1n >= end) left.delete(batch.partition);
      return left.size === 0;
    });
    return records;
  } finally {
    await admin.disconnect();
  }
}
