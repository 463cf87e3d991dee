import type { Message, Producer } from 'kafkajs';
import { recordProduce, secondsSince } from '../metrics/metrics';
import type { RecordSender, SendOptions } from './producer-lanes';

interface Pending {
  topicMessages: { topic: string; messages: Message[] }[];
  resolve(): void;
  reject(err: unknown): void;
  /** Set once its records are in a request. */
  sent?: boolean;
}

export interface BatchingOptions {
  /** Most records in one request (default 500). */
  maxBatch?: number;
  /**
   * Most bytes of keys and values in one request (default 512 KiB); a record larger than this
   * goes alone. The broker refuses a record batch above its size limit as a whole, so without
   * this bound one large record would fail the small ones gathered with it.
   */
  maxBatchBytes?: number;
  /** How long the first record of a batch may wait for others (default: one turn of the event loop). */
  lingerMs?: number;
  /**
   * Requests in flight at once (default 2). While they are all out, records gather for the
   * next one: under load batches grow with the load instead of the request count, and an idle
   * producer still sends at once. An idempotent producer always has one: kafkajs numbers its
   * records under a lock per broker anyway, and a failed request gives its sequence numbers
   * back, so a second request in flight could take them and overtake the first on its retry.
   */
  maxInFlight?: number;
  /**
   * A new producer, connected, for after a send that failed. kafkajs gives an idempotent
   * producer's sequence numbers back when a request fails, which is right for its own retries
   * (they carry the same records, so the broker drops a true duplicate) but not once the send has
   * rejected: the batch may have been written (its answer lost with a dying or frozen broker),
   * and the next request, with other records, would reuse its numbers; one of the same length is
   * then taken for a duplicate and dropped while reported written. So after a rejected send this
   * producer is replaced (a new producer id, its sequences from 0) before anything else is sent,
   * and the old one is disconnected. The producer must be this gatherer's alone. Unset, the
   * producer is kept.
   */
  renew?: () => Promise<Producer>;
}

/**
 * Gathers the records of concurrent callers into one Kafka request (kafkajs has no linger of
 * its own): records wait at most one turn of the event loop, or `lingerMs` when set, or until
 * a request slot frees, and at most `maxBatch` go out in one request. Each caller's promise
 * settles with its request, acks=all.
 */
export class BatchingProducer implements RecordSender {
  private queue: Pending[] = [];
  private queued = 0;
  private timer: NodeJS.Immediate | NodeJS.Timeout | undefined;
  private inFlight = 0;
  /** Set while a producer that had a send rejected is being replaced: nothing is sent until it is. */
  private renewing: Promise<void> | undefined;

  constructor(
    private producer: Producer,
    private readonly options: BatchingOptions = {},
  ) {}

  /** Disconnects the producer in use (once what is in flight is done with). */
  async close(): Promise<void> {
    await this.renewing;
    await this.producer.disconnect();
  }

  /** Replaces the producer after a rejected send; retried until a new one connects. */
  private renew(renew: () => Promise<Producer>): void {
    const old = this.producer;
    this.renewing = (async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          this.producer = await renew();
          break;
        } catch {
          await new Promise((r) => setTimeout(r, Math.min(5_000, 100 * 2 ** attempt)));
        }
      }
      void old.disconnect().catch(() => undefined);
    })().finally(() => {
      this.renewing = undefined;
      if (this.queue.length > 0 && !this.timer) this.flush();
    });
  }

  private get maxInFlight(): number {
    return this.producer.isIdempotent() ? 1 : (this.options.maxInFlight ?? 2);
  }

  private get maxBatch(): number {
    return this.options.maxBatch ?? 500;
  }

  private get maxBatchBytes(): number {
    return this.options.maxBatchBytes ?? 512 * 1024;
  }

  send(topicMessages: { topic: string; messages: Message[] }[], options: SendOptions = {}): Promise<void> {
    // while a producer whose send rejected is replaced, nothing waits on it: the caller retries
    if (this.renewing) return Promise.reject(new ProducerRenewingError());
    return new Promise<void>((resolve, reject) => {
      const pending: Pending = { topicMessages, resolve, reject };
      if (options.deadlineMs !== undefined) this.bound(pending, options.deadlineMs);
      this.queue.push(pending);
      this.queued += topicMessages.reduce((n, t) => n + t.messages.length, 0);
      if (this.queued >= this.maxBatch) this.flush();
      else if (!this.timer) {
        const linger = this.options.lingerMs ?? 0;
        this.timer = linger > 0 ? setTimeout(() => this.flush(), linger) : setImmediate(() => this.flush());
      }
    });
  }

  /** Settles `pending` at its deadline if its request has not: dropped from the queue if it is still there. */
  private bound(pending: Pending, deadlineMs: number): void {
    const { resolve, reject } = pending;
    const timer = setTimeout(() => {
      if (!pending.sent) {
        const at = this.queue.indexOf(pending);
        if (at >= 0) {
          this.queue.splice(at, 1);
          this.queued -= pending.topicMessages.reduce((n, t) => n + t.messages.length, 0);
        }
      }
      reject(new SendDeadlineError(deadlineMs, pending.sent ? 'maybe' : 'no'));
    }, deadlineMs);
    pending.resolve = () => {
      clearTimeout(timer);
      resolve();
    };
    pending.reject = (err) => {
      clearTimeout(timer);
      reject(err);
    };
  }

  private flush(): void {
    if (this.timer) {
      clearTimeout(this.timer as NodeJS.Timeout);
      clearImmediate(this.timer as NodeJS.Immediate);
      this.timer = undefined;
    }
    // records gather until the replacement producer is there
    if (this.renewing) return;
    // every slot busy: the batch keeps growing and goes out when a request comes back
    while (this.queue.length > 0 && this.inFlight < this.maxInFlight) this.sendNext();
  }

  private sendNext(): void {
    const batch: Pending[] = [];
    let count = 0;
    let bytes = 0;
    while (this.queue.length > 0) {
      const next = this.queue[0]!;
      const size = bytesOf(next);
      if (batch.length > 0 && (count >= this.maxBatch || bytes + size > this.maxBatchBytes)) break;
      this.queue.shift();
      next.sent = true;
      batch.push(next);
      count += next.topicMessages.reduce((n, t) => n + t.messages.length, 0);
      bytes += size;
    }
    this.queued -= count;
    const byTopic = new Map<string, Message[]>();
    for (const p of batch) {
      for (const t of p.topicMessages) {
        let list = byTopic.get(t.topic);
        if (!list) byTopic.set(t.topic, (list = []));
        list.push(...t.messages);
      }
    }
    this.inFlight++;
    const started = performance.now();
    this.producer
      .sendBatch({ acks: -1, topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })) })
      .finally(() => recordProduce(byTopic.keys(), secondsSince(started)))
      .then(
        () => batch.forEach((p) => p.resolve()),
        (err: unknown) => {
          if (this.options.renew && !this.renewing && this.producer.isIdempotent()) this.renew(this.options.renew);
          batch.forEach((p) => p.reject(err));
        },
      )
      .finally(() => {
        this.inFlight--;
        if (this.queue.length > 0 && !this.timer) this.flush();
      });
  }
}

/** Bytes of the keys and values of one caller's records. */
function bytesOf(p: Pending): number {
  let n = 0;
  for (const t of p.topicMessages) {
    for (const m of t.messages) n += sizeOf(m.key) + sizeOf(m.value);
  }
  return n;
}

function sizeOf(v: Message['key'] | Message['value']): number {
  if (v === null || v === undefined) return 0;
  return typeof v === 'string' ? Buffer.byteLength(v) : v.length;
}

/**
 * A send not acknowledged within its deadline. `written` is 'no' when its records were still
 * waiting for a request (they are dropped and never written), 'maybe' when they were in one that
 * has not come back (a frozen or dying broker): they may yet be written.
 */
export class SendDeadlineError extends Error {
  readonly retriable = true;
  constructor(
    readonly deadlineMs: number,
    readonly written: 'no' | 'maybe',
  ) {
    super(`Kafka did not acknowledge the records within ${deadlineMs} ms`);
    this.name = 'SendDeadlineError';
  }
}

/** A send refused while the producer is being replaced after a failed send; trying again later is right. */
export class ProducerRenewingError extends Error {
  readonly retriable = true;
  constructor() {
    super('the Kafka producer is being replaced after a failed send; try again');
    this.name = 'ProducerRenewingError';
  }
}
