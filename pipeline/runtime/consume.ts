import type { Admin, Consumer, ConsumerConfig, EachBatchPayload, Kafka, KafkaMessage } from 'kafkajs';
import { errorMessage, type Logger } from '../../core/log';
import { groupIdOf } from '../../core/topics';
import { UndecodableRecordError, type AvroCodec } from '../../platform/avro/codec';
import { UnopenableBodyError } from '../../core/secrets/body-seal';
import { recordUnopenableBody } from '../../platform/metrics/sealed-bodies';
import type { RecordName, RecordTypes } from '../../platform/avro/records';
import type { RecordSender } from '../../platform/kafka/producer-lanes';
import { watchConsumerLag } from '../../platform/metrics/consumer-lag';
import { undecodableLetter, undecodableReason } from '../dead-letter';
import { ConfigGate, type ConfigVersions } from './config-version';
import { OffsetCommits } from './offset-commits';
import type { AnyOutput, Output } from './stage';

export interface RunnerDeps {
  kafka: Kafka;
  /**
   * The process's one gathering producer: the outputs of every stage share its Kafka requests
   * (acks=all), so that the request count follows the load's batching, not the number of stages.
   */
  outputs: RecordSender;
  codec: AvroCodec;
  log: Logger;
  /** Consumer groups are `<groupPrefix><stage name>`. */
  groupPrefix: string;
  /**
   * Where a record goes that cannot be decoded, or whose handler keeps failing: a DeadLetter
   * with the reason and the original bytes, so its partition goes on. Unset, such a record
   * fails its batch, which is consumed again until it passes.
   */
  deadLetterTopic?: string;
  /**
   * This process's configuration, for the version header: a record is decided only once the
   * store has the version its input names (waiting at most `waitMs`), and its outputs name the
   * version it was decided with. Unset (tools, some tests), nothing waits and outputs carry
   * their input's version.
   */
  config?: { versions: ConfigVersions; waitMs: number };
  /**
   * The process's admin client: with it, every group run here shows its lag in the metrics
   * (read at scrape time). Unset (tools, some tests), no lag is shown.
   */
  admin?: Admin;
}

export interface RunningStage {
  name: string;
  /** Stops fetching, lets the work in hand finish and commit, then leaves the group. */
  stop(): Promise<void>;
}

/**
 * A consumed record decoded as its topic's record, or, for bytes that never decode, why and
 * their dead letter (logged when made). A record whose sealed body does not open (its tenant's
 * data key destroyed) is `unopenable`: logged and counted already, it is dropped without a
 * letter, which would only keep bytes nobody can read.
 */
export type Decoded<N extends RecordName> =
  | { value: RecordTypes[N]; undecodable?: undefined }
  | { value?: undefined; undecodable: string; unopenable?: boolean; letters(): Output<'DeadLetter'>[] };

/** One fetched batch of one partition, as a stage's batch handler sees it. */
export interface ConsumedBatch {
  topic: string;
  partition: number;
  messages: KafkaMessage[];
  highWatermark: string;
  lastOffset(): string;
  /** False once the group has moved on (rebalance) or the consumer stops: the batch must be left. */
  active(): boolean;
  /** The fetch position moves past `offset` (commits are separate). */
  resolve(offset: string): void;
  /**
   * True for an offset below the end the partition had when this member first fetched from it
   * after joining the group: a previous owner (or an earlier run) may have handled it without
   * committing. Everything later is new to the group.
   */
  uncertain(offset: string): boolean;
  heartbeat(): Promise<void>;
  /**
   * The record decoded as its topic's record, or why its bytes never decode and their dead
   * letter (which throws when the stage has no dead-letter topic). Any other failure (the
   * registry away) throws. Without a promise once the record's schema is known here.
   */
  decode<N extends RecordName>(message: KafkaMessage & { value: Buffer }): Decoded<N> | Promise<Decoded<N>>;
}

/** What a batch handler may do with the consumer beyond its batch. */
export interface Consuming {
  readonly log: Logger;
  /** Holds decisions until this process has the configuration version their input names. */
  readonly config: ConfigGate;
  stopped(): boolean;
  /** Commits `next` (the next offset to read) within 100 ms, together with other partitions'. */
  scheduleCommit(topic: string, partition: number, next: bigint): void;
  /** Commits now; throws when the commit does not go through. */
  commitNow(offsets: { topic: string; partition: number; offset: string }[]): Promise<void>;
  pause(topic: string, partition?: number): void;
  resume(topic: string, partition: number): void;
  seek(topic: string, partition: number, offset: bigint | string): void;
  /** Encodes outputs for their topics; throws when one does not fit its schema. */
  encode(outputs: readonly AnyOutput[]): Promise<EncodedOutput[]>;
  /** Produces encoded outputs (acks=all); resolves once Kafka has them all. */
  send(encoded: readonly EncodedOutput[]): Promise<void>;
}

export interface ConsumeOptions {
  /** The stage's name: its consumer group is `<groupPrefix><name>`, and its dead letters name it. */
  name: string;
  /**
   * The topics read, each with the record its values decode as; with `fields`, only those
   * fields are decoded (the rest skipped over, not built).
   */
  inputs: readonly { topic: string; record: RecordName; fields?: readonly string[] }[];
  /** Partitions whose batches are handled at once. */
  partitionsConsumedConcurrently: number;
  /**
   * For a consumer that gathers what it reads anyway (the sink's inserts, the sequencer's
   * batches): the broker holds a fetch until `minBytes` are there or `maxWaitMs` passed, so
   * under load one fetch carries what many would, and at low rates a record does not wake the
   * consumer on its own. Unset: the broker answers as soon as one record is there.
   */
  fetchLinger?: FetchLinger;
  consumer?: Partial<ConsumerConfig>;
  /** Told each new assignment (topic → partitions), before any batch of it. */
  onAssign?(assigned: Record<string, number[]>): void;
  /** Work in hand outside batch handlers (records still running, rows buffered) that stopping waits for. */
  busy?(): boolean;
  /** Runs while stopping, after the work in hand and before the last commit: seal or flush. */
  beforeLeave?(): Promise<void>;
}

/** How long, and for how many bytes, the broker may hold a consumer's fetch. */
export interface FetchLinger {
  minBytes: number;
  maxWaitMs: number;
}

/** An output encoded for its topic. */
export interface EncodedOutput {
  topic: string;
  key: string;
  value: Buffer;
  headers?: Record<string, string>;
}

/** The end (high watermark) of every partition of `topics` now, by `topic:partition`; undefined when it cannot be read. */
async function endsOf(admin: Admin, topics: readonly string[]): Promise<Map<string, bigint> | undefined> {
  try {
    const ends = new Map<string, bigint>();
    for (const topic of topics) {
      for (const p of await admin.fetchTopicOffsets(topic)) ends.set(`${topic}:${p.partition}`, BigInt(p.high));
    }
    return ends;
  } catch {
    return undefined;
  }
}

/** Outputs grouped by topic, as one Kafka request carries them. */
function byTopic(encoded: readonly EncodedOutput[]): { topic: string; messages: Omit<EncodedOutput, 'topic'>[] }[] {
  const groups = new Map<string, Omit<EncodedOutput, 'topic'>[]>();
  for (const { topic, ...message } of encoded) {
    let list = groups.get(topic);
    if (!list) groups.set(topic, (list = []));
    list.push(message);
  }
  return [...groups].map(([topic, messages]) => ({ topic, messages }));
}

/**
 * The one consumer loop of the pipeline; every stage runs on it. It joins the stage's group
 * (from the beginning of each topic, no auto-commit), hands each fetched batch to `handle`
 * with decoding that sets undecodable bytes aside as dead letters, counts the batches in hand
 * so that stopping waits for them, and logs a batch that fails before kafkajs fetches it again.
 * Committing is the handler's: only offsets whose outputs Kafka acknowledged are ever committed,
 * so a crash replays and never skips (at-least-once).
 */
export async function consume(deps: RunnerDeps, options: ConsumeOptions, handle: (batch: ConsumedBatch, consuming: Consuming) => Promise<void>): Promise<RunningStage & { consuming: Consuming }> {
  const log = deps.log.child({ stage: options.name });
  const decoderOf = new Map(
    options.inputs.map((i) => {
      const read = i.fields ? deps.codec.projection(i.record, i.fields as never[]) : Object.assign((b: Buffer) => deps.codec.decode(i.record, b), { now: (b: Buffer) => deps.codec.decodeNow(i.record, b) });
      return [i.topic, { record: i.record, read }];
    }),
  );
  let stopped = false;
  let inHand = 0;
  const consumer: Consumer = deps.kafka.consumer({
    groupId: groupIdOf(deps.groupPrefix, options.name),
    // the broker answers a fetch as soon as one record is there (minBytes 1): the wait only
    // bounds how often an idle consumer asks again, which with a dozen groups is real CPU
    maxWaitTimeInMs: 500,
    // short, so that after a crash the group stops waiting for the dead member sooner
    sessionTimeout: 10_000,
    heartbeatInterval: 3_000,
    allowAutoTopicCreation: false,
    retry: { retries: 10, initialRetryTime: 200, restartOnFailure: async () => !stopped },
    ...(options.fetchLinger ? { minBytes: options.fetchLinger.minBytes, maxWaitTimeInMs: options.fetchLinger.maxWaitMs } : {}),
    ...options.consumer,
  });
  await consumer.connect();
  await consumer.subscribe({ topics: options.inputs.map((i) => i.topic), fromBeginning: true });
  const unwatchLag = deps.admin ? watchConsumerLag({ stage: options.name, groupId: groupIdOf(deps.groupPrefix, options.name), topics: options.inputs.map((i) => i.topic), admin: deps.admin }) : undefined;
  const commits = new OffsetCommits(consumer, log);
  /**
   * Per partition, its end when this member joined the group (read once per join with the
   * process's admin client; without one, or if that read fails, its end at the member's first
   * fetch): below it, records may have been handled by a previous owner without a commit.
   */
  const uncertainBelow = new Map<string, bigint>();
  let endsAtJoin: Promise<Map<string, bigint> | undefined> = Promise.resolve(undefined);
  consumer.on(consumer.events.GROUP_JOIN, (e) => {
    uncertainBelow.clear();
    endsAtJoin = deps.admin ? endsOf(deps.admin, options.inputs.map((i) => i.topic)) : Promise.resolve(undefined);
    options.onAssign?.(e.payload.memberAssignment);
  });

  const consuming: Consuming = {
    log,
    config: new ConfigGate(deps.config?.versions, deps.config?.waitMs ?? 0, log),
    stopped: () => stopped,
    scheduleCommit: (topic, partition, next) => commits.schedule(topic, partition, next),
    commitNow: (offsets) => consumer.commitOffsets(offsets),
    pause: (topic, partition) => consumer.pause([partition === undefined ? { topic } : { topic, partitions: [partition] }]),
    resume: (topic, partition) => consumer.resume([{ topic, partitions: [partition] }]),
    seek: (topic, partition, offset) => consumer.seek({ topic, partition, offset: offset.toString() }),
    encode(outputs) {
      // every output of every stage: one promise for all, none per output once the schemas are known
      const encoded: EncodedOutput[] = [];
      for (const o of outputs) {
        const value = deps.codec.encodeNow(o.topic, o.record, o.value as never);
        if (value === undefined) return encodeLater(outputs);
        encoded.push(o.headers ? { topic: o.topic, key: o.key, value, headers: o.headers } : { topic: o.topic, key: o.key, value });
      }
      return Promise.resolve(encoded);
    },
    async send(encoded) {
      if (encoded.length > 0) await deps.outputs.send(byTopic(encoded));
    },
  };

  /** What `encode` does where a schema is not known here yet, or a value does not fit: the codec's own promise and error. */
  const encodeLater = (outputs: readonly AnyOutput[]) =>
    Promise.all(outputs.map(async (o) => ({ topic: o.topic, key: o.key, value: await deps.codec.encode(o.topic, o.record, o.value as never), ...(o.headers ? { headers: o.headers } : {}) })));

  const batchOf = ({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload): ConsumedBatch => {
    const { record, read } = decoderOf.get(batch.topic)!;
    const id = `${batch.topic}:${batch.partition}`;
    let below = uncertainBelow.get(id);
    if (below === undefined) uncertainBelow.set(id, (below = BigInt(batch.highWatermark)));
    /** Why bytes never decode, and their dead letter; any other failure (the registry away) is thrown. */
    const failed = <N extends RecordName>(message: KafkaMessage & { value: Buffer }, err: unknown): Decoded<N> => {
      if (err instanceof UnopenableBodyError) {
        recordUnopenableBody();
        log.warn('record dropped: its body does not open', { topic: batch.topic, partition: batch.partition, offset: message.offset, reason: err.message });
        return { undecodable: err.message, unopenable: true, letters: () => [] };
      }
      if (!(err instanceof UndecodableRecordError)) throw err;
      const letter = () => {
        // without a dead-letter topic such a record fails its batch, consumed again until it passes
        if (!deps.deadLetterTopic) throw err;
        return undecodableLetter(deps.deadLetterTopic, options.name, log, batch.topic, batch.partition, message, record, err);
      };
      return { undecodable: undecodableReason(record, err), letters: () => [letter()] };
    };
    return {
      topic: batch.topic,
      partition: batch.partition,
      messages: batch.messages,
      highWatermark: batch.highWatermark,
      lastOffset: () => batch.lastOffset(),
      active: () => isRunning() && !isStale(),
      resolve: (offset) => resolveOffset(offset),
      uncertain: (offset) => BigInt(offset) < below,
      heartbeat,
      decode<N extends RecordName>(message: KafkaMessage & { value: Buffer }): Decoded<N> | Promise<Decoded<N>> {
        let value: unknown;
        try {
          value = read.now(message.value);
        } catch (err) {
          return failed<N>(message, err);
        }
        if (value !== undefined) return { value: value as RecordTypes[N] };
        // a schema id first met: fetched once from the registry
        return read(message.value).then(
          (v) => ({ value: v as RecordTypes[N] }),
          (err: unknown) => failed<N>(message, err),
        );
      },
    };
  };

  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: options.partitionsConsumedConcurrently,
    eachBatch: async (payload) => {
      if (payload.batch.messages.length === 0 || !payload.isRunning() || payload.isStale()) return;
      const id = `${payload.batch.topic}:${payload.batch.partition}`;
      // a partition's first batch since the join: where its uncertain records end
      if (!uncertainBelow.has(id)) {
        const end = (await endsAtJoin)?.get(id);
        if (end !== undefined) uncertainBelow.set(id, end);
      }
      inHand++;
      try {
        await handle(batchOf(payload), consuming);
      } catch (err) {
        log.error('batch failed; it will be consumed again', { topic: payload.batch.topic, partition: payload.batch.partition, error: errorMessage(err) });
        throw err;
      } finally {
        inHand--;
      }
    },
  });
  log.debug('stage started', { inputs: options.inputs.map((i) => i.topic) });
  const leave = async () => {
    stopped = true;
    unwatchLag?.();
    for (const { topic } of options.inputs) consumer.pause([{ topic }]);
    const deadline = Date.now() + 20_000;
    while ((inHand > 0 || options.busy?.()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await options.beforeLeave?.().catch((err: unknown) => log.error('final flush failed; its records will be consumed again', { error: errorMessage(err) }));
    await commits.flush();
    await consumer.disconnect();
  };
  let stopping: Promise<void> | undefined;
  return {
    name: options.name,
    consuming,
    // a stage may be stopped by its owner and by the process at once
    stop: () => (stopping ??= leave()),
  };
}
