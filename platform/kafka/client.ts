import { Kafka, logLevel, type Admin, type ITopicConfig, type Producer, type ProducerConfig } from 'kafkajs';
import type { Logger } from '../../core/log';
import { kafkaLogCreator } from './log-filter';
import { countRequests } from './request-counts';

/** A client whose requests are counted in the metrics; its WARN and ERROR lines go through `log` when given, else to stderr as JSON. */
export function createKafka(brokers: string[], clientId: string, options: { quiet?: boolean; log?: Logger; requestTimeoutMs?: number } = {}): Kafka {
  process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
  return countRequests(new Kafka({
    clientId,
    brokers,
    logLevel: options.quiet ? logLevel.NOTHING : logLevel.WARN,
    logCreator: kafkaLogCreator({ log: options.log }),
    retry: { initialRetryTime: 100, retries: 8 },
    connectionTimeout: 3000,
    // a frozen broker holds a request until this passes; kafkajs then reads where the leader is
    // now and retries there (unset: kafkajs's 30 s)
    ...(options.requestTimeoutMs === undefined ? {} : { requestTimeout: options.requestTimeoutMs }),
  }));
}

/**
 * The service's producers. Idempotent: the broker drops a batch it already wrote when a retry
 * follows a lost answer, so a retried request never duplicates or reorders records. kafkajs
 * then requires acks=-1 on every send (all our sends use it) and retries > 0; it serialises the
 * requests per broker and numbers them under that lock. Retries stay bounded (the client's) so
 * that a Kafka outage reaches the caller (503 at the Hook URL, a retried batch in a stage)
 * instead of holding it forever.
 */
export function createProducer(kafka: Kafka, options: Pick<ProducerConfig, 'createPartitioner'> = {}): Producer {
  return kafka.producer({ allowAutoTopicCreation: false, idempotent: true, ...options });
}

export interface TopicSpec {
  topic: string;
  partitions: number;
  compacted?: boolean;
  /** Retention in milliseconds for delete-policy topics; unset keeps the broker default. */
  retentionMs?: number;
  /** Largest record batch the topic takes (`max.message.bytes`); unset keeps the broker default. */
  maxMessageBytes?: number;
}

/**
 * Creates the topics that do not exist yet (existing ones are left as they are) and waits
 * until every partition of every topic has a leader, so that the first produce succeeds.
 */
export async function ensureTopics(kafka: Kafka, specs: TopicSpec[], replicationFactor = 1): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing: ITopicConfig[] = specs
      .filter((s) => !existing.has(s.topic))
      .map((s) => {
        const configEntries: { name: string; value: string }[] = [];
        if (s.compacted) configEntries.push({ name: 'cleanup.policy', value: 'compact' });
        if (s.retentionMs !== undefined) configEntries.push({ name: 'retention.ms', value: String(s.retentionMs) });
        if (s.maxMessageBytes !== undefined) configEntries.push({ name: 'max.message.bytes', value: String(s.maxMessageBytes) });
        configEntries.push({ name: 'min.insync.replicas', value: String(Math.min(2, replicationFactor)) });
        return { topic: s.topic, numPartitions: s.partitions, replicationFactor, configEntries };
      });
    if (missing.length > 0) await createWithRetry(admin, missing);
    await waitForLeaders(admin, specs.map((s) => s.topic));
  } finally {
    await admin.disconnect();
  }
}

interface TopicCreationFailure {
  topic: string;
  type: string;
  message?: string;
  retriable?: boolean;
}

export function isRetriableKafkaError(err: unknown): boolean {
  for (let e: unknown = err; e; e = (e as { cause?: unknown }).cause) {
    if ((e as { retriable?: unknown }).retriable === true) return true;
  }
  return false;
}

/**
 * Creates topics, retrying while the controller settles (a broker that just started may
 * answer with retriable errors); a topic that someone else created meanwhile counts as done.
 */
async function createWithRetry(admin: Admin, topics: ITopicConfig[], attempts = 10): Promise<void> {
  let pending = topics;
  for (let i = 1; ; i++) {
    try {
      await admin.createTopics({ topics: pending, waitForLeaders: false });
      return;
    } catch (err) {
      const reported = (err as { errors?: TopicCreationFailure[] }).errors;
      const failures = (reported ?? []).filter((f) => f.type !== 'TOPIC_ALREADY_EXISTS');
      if (reported && failures.length === 0) return;
      const retriable = reported ? failures.every((f) => f.retriable !== false) : isRetriableKafkaError(err);
      if (!retriable || i >= attempts) {
        const detail = failures.map((f) => `${f.topic}: ${f.type}${f.message ? ` (${f.message})` : ''}`).join('; ');
        const hint = failures.some((f) => f.type === 'INVALID_REPLICATION_FACTOR') ? '; set KAFKA_REPLICATION_FACTOR to at most the number of brokers' : '';
        throw new Error(`could not create topics: ${detail || (err instanceof Error ? err.message : String(err))}${hint}`, { cause: err });
      }
      if (reported) {
        const failed = new Set(failures.map((f) => f.topic));
        pending = pending.filter((t) => failed.has(t.topic));
      }
      await new Promise((r) => setTimeout(r, 200 * i));
    }
  }
}

/** Polls metadata until every partition of `topics` has a leader. */
async function waitForLeaders(admin: Admin, topics: string[], timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    try {
      const { topics: meta } = await admin.fetchTopicMetadata({ topics });
      const leaderless = meta.flatMap((t) => t.partitions.filter((p) => p.leader < 0).map((p) => `${t.name}[${p.partitionId}]`));
      if (meta.length === topics.length && leaderless.length === 0) return;
      last = leaderless.length > 0 ? `no leader yet for ${leaderless.slice(0, 5).join(', ')}` : 'metadata incomplete';
    } catch (err) {
      if (!isRetriableKafkaError(err)) throw err;
      last = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() > deadline) throw new Error(`topics not ready within ${timeoutMs} ms: ${last}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * `admin.fetchTopicOffsets`, retried while the answer is a retriable error. kafkajs gives up at
 * once on anything but an unknown topic, yet a partition whose leader was just elected answers
 * "not the leader" for a moment after the metadata already names it.
 */
export async function fetchTopicOffsets(admin: Admin, topic: string, timeoutMs = 15_000): Promise<Awaited<ReturnType<Admin['fetchTopicOffsets']>>> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 1; ; i++) {
    try {
      return await admin.fetchTopicOffsets(topic);
    } catch (err) {
      if (!isRetriableKafkaError(err) || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, Math.min(100 * i, 1000)));
      // refreshes the client's view of the partition leaders before the next try
      await admin.fetchTopicMetadata({ topics: [topic] }).catch(() => undefined);
    }
  }
}
