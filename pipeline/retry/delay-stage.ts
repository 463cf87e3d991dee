import type { Consumer, EachBatchPayload } from 'kafkajs';
import { errorMessage } from '../../core/log';
import { UndecodableRecordError } from '../../platform/avro/codec';
import { undecodableLetter } from '../dead-letter';
import { consumerSpec, groupIdOf, type Topics } from '../../core/topics';
import type { DeliveryTask } from '../../platform/avro/records';
import { delayTopicFor } from '../deliver/delay';
import { produceOutputs, type RunnerDeps, type RunningStage } from '../runner/run-stage';
import type { AnyOutput } from '../runner/stage';
import { stageConsumer } from '../runner/stage-consumer';

/** Where a task goes once it has waited out one tier: on to delivery, or into the next wait. */
export function forward(topics: Topics, task: DeliveryTask, now: number): AnyOutput {
  const remaining = task.not_before - now;
  const topic = remaining <= 0 ? topics.deliveryRequested : delayTopicFor(topics, remaining);
  return { topic, key: task.destination_id, record: 'DeliveryTask', value: task };
}

/**
 * The delay tiers. Every record of tier T waits until T after it was appended; since all
 * records of a tier wait equally long, the head of a partition is always due first, so the
 * consumer pauses the partition until the head is due and resumes then. The wait is carried by
 * Kafka: a crash loses nothing, the records are read again and wait out what is left. Bytes
 * that do not decode go to the dead-letter topic with the reason and the partition goes on.
 */
export async function runDelayTiers(topics: Topics, deps: RunnerDeps, now: () => number = Date.now): Promise<RunningStage> {
  const log = deps.log.child({ stage: 'retry' });
  let stopped = false;
  const delayOf = new Map(topics.retryTiers.map((t) => [t.topic, t.delayMs]));
  const timers = new Set<NodeJS.Timeout>();
  const consumer: Consumer = await stageConsumer(deps.kafka, groupIdOf(deps.groupPrefix, 'retry'), consumerSpec(topics, 'retry').reads, () => stopped, { maxWaitTimeInMs: 100 });

  const onBatch = async ({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload) => {
    const delay = delayOf.get(batch.topic) ?? 0;
    const due: AnyOutput[] = [];
    let lastDue: string | undefined;
    for (const message of batch.messages) {
      if (!isRunning() || isStale()) break;
      const dueAt = Number(message.timestamp) + delay;
      const wait = dueAt - now();
      if (wait > 0) {
        const tp = [{ topic: batch.topic, partitions: [batch.partition] }];
        consumer.pause(tp);
        consumer.seek({ topic: batch.topic, partition: batch.partition, offset: message.offset });
        const timer = setTimeout(() => {
          timers.delete(timer);
          if (!stopped) consumer.resume(tp);
        }, wait);
        timers.add(timer);
        break;
      }
      if (message.value !== null) {
        try {
          due.push(forward(topics, await deps.codec.decode('DeliveryTask', message.value), now()));
        } catch (err) {
          // bytes that never decode are set aside, so the tier's partition goes on
          if (!(err instanceof UndecodableRecordError) || !deps.deadLetterTopic) throw err;
          due.push(undecodableLetter(deps.deadLetterTopic, 'retry', log, batch.topic, batch.partition, message, 'DeliveryTask', err));
        }
      }
      lastDue = message.offset;
    }
    if (lastDue === undefined) return;
    await produceOutputs(deps.producer, deps.codec, due);
    resolveOffset(lastDue);
    await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: (BigInt(lastDue) + 1n).toString() }]);
    await heartbeat();
  };

  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: 8,
    eachBatch: async (payload) => {
      try {
        await onBatch(payload);
      } catch (err) {
        log.error('delay tier batch failed; it will be read again', { topic: payload.batch.topic, error: errorMessage(err) });
        throw err;
      }
    },
  });
  return {
    name: 'retry',
    async stop() {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      await consumer.disconnect();
    },
  };
}
