import type { Kafka, Producer } from 'kafkajs';
import { WriterFencedError, type FencedLogWriter } from '../../pipeline/evidence/log-writer';

/** Broker answers that mean a newer producer holds the transactional id. */
const FENCED = new Set(['INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED', 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED']);

function isFenced(err: unknown): boolean {
  for (let e: unknown = err; e; e = (e as { cause?: unknown; originalError?: unknown }).cause ?? (e as { originalError?: unknown }).originalError) {
    const type = (e as { type?: unknown }).type;
    if (typeof type === 'string' && FENCED.has(type)) return true;
    // kafkajs reports an unknown code by number (PRODUCER_FENCED is 90 and newer than it)
    if (e instanceof Error && /Unknown error code 90\b/.test(e.message)) return true;
  }
  return false;
}

/**
 * The log writer as a Kafka transactional producer. Every process of a deployment uses the same
 * transactional id; `claim` starts a new producer and initialises it, which makes the broker bump
 * the id's epoch, abort the previous holder's open transaction and refuse (INVALID_PRODUCER_EPOCH)
 * anything the previous holder sends from then on. Each append is one transaction.
 */
export class KafkaFencedWriter implements FencedLogWriter {
  private producer: Producer | undefined;
  /** Set once a send was refused for fencing: the producer's transaction state is then unusable. */
  private fenced = false;

  constructor(
    private readonly kafka: Kafka,
    private readonly transactionalId: string,
  ) {}

  async claim(): Promise<void> {
    await this.close();
    const producer = this.kafka.producer({ transactionalId: this.transactionalId, idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
    await producer.connect();
    this.producer = producer;
    this.fenced = false;
    // kafkajs initialises the transactional id lazily, at the first transaction: an empty one
    // initialises it now, and ends without a request to the coordinator
    const init = await producer.transaction();
    await init.abort();
  }

  async append(records: readonly { topic: string; key: string; value: Buffer }[]): Promise<void> {
    const producer = this.producer;
    if (!producer || this.fenced) throw new WriterFencedError('the evidence log writer is not claimed by this process');
    const byTopic = new Map<string, { key: string; value: Buffer }[]>();
    for (const { topic, key, value } of records) byTopic.set(topic, [...(byTopic.get(topic) ?? []), { key, value }]);
    let transaction: Awaited<ReturnType<Producer['transaction']>> | undefined;
    try {
      transaction = await producer.transaction();
      await transaction.sendBatch({ acks: -1, topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })) });
      await transaction.commit();
    } catch (err) {
      if (isFenced(err)) {
        this.fenced = true;
        throw new WriterFencedError('another process claimed the evidence log writer', { cause: err });
      }
      // anything else: end the transaction so the next append can begin one (a failed abort
      // leaves the producer unusable, which the next claim replaces)
      if (transaction?.isActive()) await transaction.abort().catch(() => undefined);
      throw err;
    }
  }

  async close(): Promise<void> {
    const producer = this.producer;
    this.producer = undefined;
    await producer?.disconnect().catch(() => undefined);
  }
}
