import type { Kafka } from 'kafkajs';
import { fetchTopicOffsets } from '../../platform/kafka/client';
import { uniqueSuffix } from './ids';

export interface RawRecord {
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
}

/** Every record a topic holds now, as its bytes, read from the beginning by a group of its own. */
export async function readTopic(kafka: Kafka, topic: string, timeoutMs = 30_000): Promise<RawRecord[]> {
  const admin = kafka.admin();
  await admin.connect();
  const ends = new Map((await fetchTopicOffsets(admin, topic)).map((o) => [o.partition, BigInt(o.high)]));
  await admin.disconnect();
  const left = new Set([...ends].filter(([, high]) => high > 0n).map(([p]) => p));
  const records: RawRecord[] = [];
  if (left.size === 0) return records;
  const consumer = kafka.consumer({ groupId: `${topic}.reader-${uniqueSuffix()}`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`reading ${topic} timed out`)), timeoutMs);
      void consumer.run({
        eachBatch: async ({ batch }) => {
          for (const m of batch.messages) {
            records.push({ partition: batch.partition, offset: m.offset, key: m.key, value: m.value });
            if (BigInt(m.offset) + 1n >= ends.get(batch.partition)!) left.delete(batch.partition);
          }
          if (left.size === 0) {
            clearTimeout(timer);
            resolve();
          }
        },
      });
    });
  } finally {
    await consumer.disconnect();
  }
  return records;
}
