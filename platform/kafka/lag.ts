import type { Admin } from 'kafkajs';
import { fetchTopicOffsets } from './client';

export interface PartitionLag {
  partition: number;
  /** Next offset the group will read; null when it has committed nothing on this partition. */
  committed: number | null;
  /** Offset the next record written will get. */
  end: number;
  lag: number;
}

export interface TopicLag {
  topic: string;
  lag: number;
  partitions: PartitionLag[];
}

/**
 * Consumer lag of one group on its topics, from the committed offsets and the log end offsets.
 * A partition the group has not committed on counts everything it still retains.
 */
export async function consumerLag(admin: Admin, groupId: string, topics: string[]): Promise<TopicLag[]> {
  const [committed, ends] = await Promise.all([
    admin.fetchOffsets({ groupId, topics }),
    Promise.all(topics.map(async (topic) => ({ topic, offsets: await fetchTopicOffsets(admin, topic) }))),
  ]);
  return ends.map(({ topic, offsets }) => {
    const mine = committed.find((c) => c.topic === topic)?.partitions ?? [];
    const partitions = offsets
      .map((o): PartitionLag => {
        const c = mine.find((p) => p.partition === o.partition);
        const at = c && Number(c.offset) >= 0 ? Number(c.offset) : null;
        const end = Number(o.high);
        return { partition: o.partition, committed: at, end, lag: Math.max(0, end - (at ?? Number(o.low))) };
      })
      .sort((a, b) => a.partition - b.partition);
    return { topic, lag: partitions.reduce((n, p) => n + p.lag, 0), partitions };
  });
}
