import type { Admin } from 'kafkajs';
import { Gauge } from 'prom-client';
import { consumerLag, type TopicLag } from '../kafka/lag';
import { withTimeout } from '../../core/timeout';
import { registry } from './metrics';

/** One consumer group this process runs, as the lag gauge reads it. */
export interface LagSource {
  /** The stage (consumer) name: the `stage` label. */
  stage: string;
  groupId: string;
  topics: readonly string[];
  admin: Admin;
}

/** A scrape within this long of the last reading reuses it: several scrapers cost Kafka one reading. */
const FRESH_MS = 2_000;
/** Longest one group's reading may take; a group that does not answer is left out of that scrape. */
const READ_TIMEOUT_MS = 5_000;

const sources = new Set<LagSource>();
let reading: Promise<void> | undefined;
let readAt = 0;

const gauge = new Gauge({
  name: 'hookline_consumer_lag',
  help: 'Records not yet committed by the consumer groups this process runs, per stage, topic and partition (read from Kafka at scrape time).',
  labelNames: ['stage', 'topic', 'partition'] as const,
  registers: [registry],
  async collect() {
    if (Date.now() - readAt < FRESH_MS) return;
    reading ??= readLag().finally(() => {
      reading = undefined;
    });
    await reading;
  },
});

/** Counts the group's lag in `hookline_consumer_lag` until the returned function is called. */
export function watchConsumerLag(source: LagSource): () => void {
  sources.add(source);
  readAt = 0;
  return () => {
    sources.delete(source);
    readAt = 0;
  };
}

/**
 * Reads every watched group's committed offsets and the log ends from Kafka and replaces the
 * gauge's series with them: a group that stopped, or could not be read, leaves no stale series.
 * Runs on scrape only, never per record.
 */
async function readLag(): Promise<void> {
  const read = await Promise.all(
    [...sources].map(async (s) => ({ s, lag: await withTimeout(consumerLag(s.admin, s.groupId, [...s.topics]), READ_TIMEOUT_MS).catch((): TopicLag[] => []) })),
  );
  gauge.reset();
  for (const { s, lag } of read) {
    for (const topic of lag) {
      for (const p of topic.partitions) gauge.set({ stage: s.stage, topic: topic.topic, partition: String(p.partition) }, p.lag);
    }
  }
  readAt = Date.now();
}
