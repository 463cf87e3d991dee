import type { BatchingProducer } from '../../platform/kafka/batching-producer';
import { OffsetCommits } from './offset-commits';
import type { Consumer, EachBatchPayload, Kafka, Producer } from 'kafkajs';
import { stageConsumer } from './stage-consumer';
import { errorMessage, type Logger } from '../../core/log';
import type { AvroCodec } from '../../platform/avro/codec';
import type { RecordName, RecordTypes } from '../../platform/avro/records';
import type { AnyOutput, RecordStage, Stage, StageContext } from './stage';

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
}

export interface RunningStage {
  name: string;
  /** Stops fetching, lets the batch in hand finish and commit, then leaves the group. */
  stop(): Promise<void>;
}

async function mapInOrder<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  });
  await Promise.all(workers);
  return results;
}

/** Encodes outputs and produces them in one request per call, acks=all. */
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
 * output of the batch has been acknowledged by Kafka (at-least-once). An error thrown by a
 * handler fails the batch: nothing is committed and kafkajs fetches it again after backoff.
 */
export async function runStage(stage: Stage, deps: RunnerDeps): Promise<RunningStage> {
  const log = deps.log.child({ stage: stage.name });
  let stopped = false;
  const consumer: Consumer = await stageConsumer(deps.kafka, `${deps.groupPrefix}${stage.name}`, [stage.input.topic], () => stopped);
  // partitions and stages finishing at once share produce requests, and commits gather for 100 ms
  const producer = deps.outputs;
  const commits = new OffsetCommits(consumer, log);
  let running = 0;

  const onBatch = async ({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload) => {
    if (batch.messages.length === 0) return;
    const values: { value: RecordTypes[RecordName]; ctx: StageContext }[] = [];
    for (const message of batch.messages) {
      if (message.value === null) continue;
      const value = await deps.codec.decode(stage.input.record, message.value);
      values.push({ value, ctx: { log, position: { partition: batch.partition, offset: message.offset } } });
    }
    if (!isRunning() || isStale()) return;
    const recordStage = stage as RecordStage;
    const outputs = await mapInOrder(values, recordStage.concurrency ?? 16, (v) => recordStage.handle(v.value as never, v.ctx));
    const produced = outputs.flat();
    if (produced.length > 0) await producer.send(await encodeOutputs(deps.codec, produced));
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
