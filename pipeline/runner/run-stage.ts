import type { BatchingProducer } from '../../platform/kafka/batching-producer';
import { OffsetCommits } from './offset-commits';
import type { Consumer, EachBatchPayload, Kafka, Producer } from 'kafkajs';
import { stageConsumer } from './stage-consumer';
import { errorMessage, type Logger } from '../../core/log';
import { UndecodableRecordError, type AvroCodec } from '../../platform/avro/codec';
import type { RecordName, RecordTypes } from '../../platform/avro/records';
import { checkWrites, type AnyOutput, type RecordStage, type Stage, type StageContext } from './stage';
import { groupIdOf } from '../../core/topics';
import { poisonLetter, undecodableReason } from '../dead-letter';

export interface RunnerDeps {
  kafka: Kafka;
  producer: Producer;
  /**
   * The process's one gathering producer: the outputs of every stage share its Kafka requests,
   * so that the request count follows the load's batching, not the number of stages.
   */
  outputs: BatchingProducer;
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
}

/** Times a handler is tried on one record before the record is a dead letter. */
export const HANDLER_ATTEMPTS = 3;

export interface RunningStage {
  name: string;
  /** Stops fetching, lets the batch in hand finish and commit, then leaves the group. */
  stop(): Promise<void>;
}

/** Longest a batch's handlers run before the event loop gets a turn (health, the API, other stages). */
const SLICE_MS = 10;

async function mapInOrder<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let sliceStarted = performance.now();
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
      // handlers that compute without awaiting I/O (filters on large inputs) would otherwise run
      // a whole batch as one task: resolved promises never let timers or sockets in
      if (performance.now() - sliceStarted > SLICE_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        sliceStarted = performance.now();
      }
    }
  });
  await Promise.all(workers);
  return results;
}

/** Outputs encoded and grouped by topic, as one Kafka request carries them. */
export async function encodeOutputs(codec: AvroCodec, outputs: AnyOutput[]): Promise<{ topic: string; messages: { key: string; value: Buffer }[] }[]> {
  const values = await Promise.all(outputs.map((o) => codec.encode(o.topic, o.record, o.value as never)));
  const byTopic = new Map<string, { key: string; value: Buffer }[]>();
  outputs.forEach((o, i) => {
    let list = byTopic.get(o.topic);
    if (!list) byTopic.set(o.topic, (list = []));
    list.push({ key: o.key, value: values[i]! });
  });
  return [...byTopic].map(([topic, messages]) => ({ topic, messages }));
}

export async function produceOutputs(producer: Producer, codec: AvroCodec, outputs: AnyOutput[]): Promise<void> {
  if (outputs.length === 0) return;
  await producer.sendBatch({ acks: -1, topicMessages: await encodeOutputs(codec, outputs) });
}

/**
 * Runs a stage on its consumer group. A batch's offsets are committed only after every
 * output of the batch has been acknowledged by Kafka (at-least-once). A record that cannot be
 * decoded, or whose handler throws (or whose outputs cannot be encoded) HANDLER_ATTEMPTS times,
 * becomes a dead letter on `deps.deadLetterTopic` and the partition goes on; anything else that
 * fails (producing, committing) fails the batch, which kafkajs fetches again after backoff.
 */
export async function runStage(stage: Stage, deps: RunnerDeps): Promise<RunningStage> {
  const log = deps.log.child({ stage: stage.name });
  let stopped = false;
  const consumer: Consumer = await stageConsumer(deps.kafka, groupIdOf(deps.groupPrefix, stage.name), [stage.input.topic], () => stopped);
  // partitions and stages finishing at once share produce requests, and commits gather for 100 ms
  const producer = deps.outputs;
  const commits = new OffsetCommits(consumer, log);
  let running = 0;

  /** The dead letter of a record the stage cannot handle; without a dead-letter topic, the error fails the batch. */
  const poison = async (ctx: StageContext, value: unknown, reason: string, err: unknown) => {
    if (!deps.deadLetterTopic) throw err;
    const letter = poisonLetter(deps.deadLetterTopic, stage.name, log, ctx, value, reason);
    return [{ topic: letter.topic, key: letter.key, value: await deps.codec.encode(letter.topic, letter.record, letter.value) }];
  };

  const onBatch = async ({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload) => {
    if (batch.messages.length === 0) return;
    const recordStage = stage as RecordStage;
    const items: { message: (typeof batch.messages)[number]; ctx: StageContext }[] = [];
    for (const message of batch.messages) {
      if (message.value === null) continue;
      const source = { topic: batch.topic, key: message.key, value: message.value };
      items.push({ message, ctx: { log, position: { partition: batch.partition, offset: message.offset }, source } });
    }
    if (!isRunning() || isStale()) return;
    const encoded = await mapInOrder(items, recordStage.concurrency ?? 16, async ({ ctx }) => {
      let value: RecordTypes[RecordName];
      try {
        value = await deps.codec.decode(stage.input.record, ctx.source.value);
      } catch (err) {
        if (!(err instanceof UndecodableRecordError)) throw err;
        return poison(ctx, undefined, undecodableReason(stage.input.record, err), err);
      }
      for (let attempt = 1; ; attempt++) {
        try {
          const outputs = await recordStage.handle(value as never, ctx);
          checkWrites(recordStage, outputs);
          return await Promise.all(outputs.map(async (o) => ({ topic: o.topic, key: o.key, value: await deps.codec.encode(o.topic, o.record, o.value as never) })));
        } catch (err) {
          if (attempt >= HANDLER_ATTEMPTS) return poison(ctx, value, `stage ${stage.name} failed on this record ${attempt} times: ${errorMessage(err)}`, err);
          await new Promise((r) => setTimeout(r, 50 * attempt));
        }
      }
    });
    const byTopic = new Map<string, { key: string; value: Buffer }[]>();
    for (const { topic, key, value } of encoded.flat()) {
      let list = byTopic.get(topic);
      if (!list) byTopic.set(topic, (list = []));
      list.push({ key, value });
    }
    if (byTopic.size > 0) await producer.send([...byTopic].map(([topic, messages]) => ({ topic, messages })));
    commits.schedule(batch.topic, batch.partition, BigInt(batch.lastOffset()) + 1n);
    // the fetch position follows resolved offsets, not committed ones
    resolveOffset(batch.lastOffset());
    await heartbeat();
  };

  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: 4,
    eachBatch: async (payload) => {
      running++;
      try {
        await onBatch(payload);
      } catch (err) {
        log.error('batch failed; it will be consumed again', { topic: payload.batch.topic, partition: payload.batch.partition, error: errorMessage(err) });
        throw err;
      } finally {
        running--;
      }
    },
  });
  log.debug('stage started', { input: stage.input.topic });
  return {
    name: stage.name,
    async stop() {
      stopped = true;
      await commits.drainAndLeave(stage.input.topic, () => running > 0);
    },
  };
}
