import { randomBytes } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import { fetchTopicOffsets } from './client';

/**
 * The newest record of one partition, or null when the partition is empty. It reads with a
 * throw-away consumer group seeked to the high watermark minus one, so the cost does not
 * grow with the topic.
 */
export async function readLastRecord(kafka: Kafka, topic: string, partition = 0, timeoutMs = 30_000): Promise<{ offset: string; value: Buffer } | null> {
  const admin = kafka.admin();
  await admin.connect();
  const groupId = `${topic}.tail-reader-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    const offsets = await fetchTopicOffsets(admin, topic);
    const p = offsets.find((o) => o.partition === partition);
    if (!p || BigInt(p.high) <= BigInt(p.low)) return null;
    const target = BigInt(p.high) - 1n;
    const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100, allowAutoTopicCreation: false, retry: { retries: 5 } });
    await consumer.connect();
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      let timer: NodeJS.Timeout | undefined;
      let resolveFound: (r: { offset: string; value: Buffer }) => void = () => undefined;
      const found = new Promise<{ offset: string; value: Buffer }>((resolve, reject) => {
        resolveFound = resolve;
        timer = setTimeout(() => reject(new Error(`timed out reading the last record of ${topic}[${partition}]`)), timeoutMs);
      });
      await consumer.run({
        autoCommit: false,
        eachBatch: async ({ batch }) => {
          if (batch.partition !== partition) return;
          for (const m of batch.messages) {
            if (BigInt(m.offset) === target && m.value) resolveFound({ offset: m.offset, value: m.value });
          }
        },
      });
      consumer.seek({ topic, partition, offset: target.toString() });
      try {
        return await found;
      } finally {
        clearTimeout(timer);
      }
    } finally {
      await consumer.disconnect().catch(() => undefined);
      await admin.deleteGroups([groupId]).catch(() => undefined);
    }
  } finally {
    await admin.disconnect();
  }
}
