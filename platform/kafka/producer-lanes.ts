import type { Admin, Message } from 'kafkajs';
import { murmur2 } from './partitioner';

/** What a caller may ask of one send. */
export interface SendOptions {
  /**
   * Longest the caller waits for the acknowledgment, ms: past it the send rejects with a
   * SendDeadlineError, whose `written` says whether the records can still be written (they
   * were in a request) or never will (they were still waiting for one and are dropped).
   */
  deadlineMs?: number;
}

/** Anything that takes records for their topics and settles once Kafka has them all (acks=all). */
export interface RecordSender {
  send(topicMessages: { topic: string; messages: Message[] }[], options?: SendOptions): Promise<void>;
}

/**
 * Several gathering producers ("lanes"), each owning a share of every topic's partitions
 * (partition p goes to lane p % lanes): an idempotent producer sends one request at a time, so
 * with one lane everything a process writes waits behind the request in flight; with several,
 * as many requests are in flight, and each partition still has one writer in one order. A
 * keyed record's partition is the one kafkajs's default partitioner (and the Java client's)
 * would pick, murmur2 of the key modulo the topic's partitions; it is set on the record so the
 * producer does not pick again. A record without a key, or of a topic whose partition count is
 * not known, goes to the first lane, which partitions it as before.
 */
export class ProducerLanes implements RecordSender {
  constructor(
    private readonly lanes: readonly RecordSender[],
    private readonly partitionsOf: (topic: string) => number | undefined,
  ) {
    if (lanes.length === 0) throw new Error('ProducerLanes needs at least one lane');
  }

  send(topicMessages: { topic: string; messages: Message[] }[], options?: SendOptions): Promise<void> {
    const n = this.lanes.length;
    if (n === 1) return this.lanes[0]!.send(topicMessages, options);
    const perLane: Map<string, Message[]>[] = this.lanes.map(() => new Map());
    for (const { topic, messages } of topicMessages) {
      const partitions = this.partitionsOf(topic);
      for (const m of messages) {
        let lane = 0;
        if (partitions !== undefined) {
          if (m.partition === undefined || m.partition === null) {
            if (m.key !== null && m.key !== undefined) m.partition = partitionOfKey(m.key, partitions);
          }
          if (m.partition !== undefined && m.partition !== null) lane = m.partition % n;
        }
        const byTopic = perLane[lane]!;
        let list = byTopic.get(topic);
        if (!list) byTopic.set(topic, (list = []));
        list.push(m);
      }
    }
    const sends: Promise<void>[] = [];
    for (let i = 0; i < n; i++) {
      if (perLane[i]!.size > 0) sends.push(this.lanes[i]!.send([...perLane[i]!].map(([topic, messages]) => ({ topic, messages })), options));
    }
    return sends.length === 1 ? sends[0]! : Promise.all(sends).then(() => undefined);
  }
}

/** The partition kafkajs's default partitioner gives a keyed record. */
export function partitionOfKey(key: Buffer | string, partitions: number): number {
  return (murmur2(Buffer.isBuffer(key) ? key : Buffer.from(key)) & 0x7fffffff) % partitions;
}

/**
 * The partition count of each of `topics`, read once now and again every `everyMs` (a topic
 * given more partitions is seen within that time; until then its keyed records keep to the
 * partitions it had, which are still its own).
 */
export async function watchPartitionCounts(admin: Admin, topics: readonly string[], everyMs = 60_000): Promise<{ partitionsOf(topic: string): number | undefined; stop(): void }> {
  const counts = new Map<string, number>();
  const read = async () => {
    const { topics: meta } = await admin.fetchTopicMetadata({ topics: [...topics] });
    for (const t of meta) if (t.partitions.length > 0) counts.set(t.name, t.partitions.length);
  };
  await read();
  const timer = setInterval(() => void read().catch(() => undefined), everyMs);
  timer.unref();
  return { partitionsOf: (topic) => counts.get(topic), stop: () => clearInterval(timer) };
}
