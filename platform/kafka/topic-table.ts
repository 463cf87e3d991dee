import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Admin, Consumer, Kafka } from 'kafkajs';
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
    this.consumer = kafka.consumer({
      groupId,
      maxWaitTimeInMs: this.options.maxWaitTimeInMs ?? 100,
      sessionTimeout: 30_000,
      rebalanceTimeout: 10_000,
      allowAutoTopicCreation: false,
      // a crash after stop() must not bring the consumer back
      retry: { retries: 8, restartOnFailure: async () => !this.stopped },
    });
    await this.consumer.connect();
    await this.consumer.subscribe({ topic, fromBeginning: true });
    this.consumer.on(this.consumer.events.CRASH, (event) => {
      const error = event.payload.error;
      if (!event.payload.restart) this.failure = error;
    });
    await this.consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch, heartbeat }) => {
        for (const message of batch.messages) {
          const key = message.key?.toString('utf8') ?? '';
          const value = message.value === null ? null : await this.options.decode(message.value);
          this.options.apply(key, value, { partition: batch.partition, offset: message.offset });
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
