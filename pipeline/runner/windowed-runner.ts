import type { Consumer, EachBatchPayload } from 'kafkajs';
import { stageConsumer } from './stage-consumer';
import { OffsetCommits } from './offset-commits';
import { errorMessage } from '../../core/log';
import { groupIdOf } from '../../core/topics';
import { UndecodableRecordError } from '../../platform/avro/codec';
import type { RecordName, RecordTypes } from '../../platform/avro/records';
import { poisonLetter, undecodableReason } from '../dead-letter';
import { encodeOutputs, HANDLER_ATTEMPTS, type RunnerDeps, type RunningStage } from './run-stage';
import { checkWrites, type AnyOutput, type RecordStage, type StageContext } from './stage';

interface Slot {
  offset: bigint;
  done: boolean;
}

/** Offsets handed out and finished, per partition; commits advance to the first unfinished one. */
class PartitionWindow {
  readonly slots: Slot[] = [];
  committed = -1n;

  /** The offset to commit (next to read) once every slot before it is done, if it moved. */
  advance(): bigint | undefined {
    let next: bigint | undefined;
    while (this.slots.length > 0 && this.slots[0]!.done) next = this.slots.shift()!.offset + 1n;
    if (next === undefined || next <= this.committed) return undefined;
    this.committed = next;
    return next;
  }
}

export interface WindowOptions {
  /** Records being handled at once across all partitions; beyond it, fetching waits. */
  maxInFlight: number;
  /** Key of a record's work queue, and how many of one key run at once (per destination). */
  keyOf?: (value: never) => string;
  perKey?: number;
}

/**
 * Runs a stage whose handler may take long (an HTTP delivery that waits for a slow
 * destination) without holding up the records behind it: records are started as they are
 * fetched, and a partition's offset is committed up to the first record not finished yet.
 * Outputs are acknowledged before their record counts as finished, so a crash replays only
 * unfinished records (at-least-once). A handler that throws (or whose outputs cannot be encoded)
 * HANDLER_ATTEMPTS times, and a record that cannot be decoded, become a dead letter on
 * `deps.deadLetterTopic`; producing is retried until Kafka takes the outputs, without running the
 * handler again (a delivery is not sent twice because Kafka was away).
 */
export async function runWindowedStage<N extends RecordName>(stage: RecordStage<N>, deps: RunnerDeps, options: WindowOptions): Promise<RunningStage> {
  const log = deps.log.child({ stage: stage.name });
  let stopped = false;
  const windows = new Map<string, PartitionWindow>();
  let inFlight = 0;
  const idleWaiters: (() => void)[] = [];
  const keyQueues = new Map<string, { running: number; waiting: (() => void)[] }>();

  const consumer: Consumer = await stageConsumer(deps.kafka, groupIdOf(deps.groupPrefix, stage.name), [stage.input.topic], () => stopped);
  // records finish one by one; their outputs share Kafka requests (group commit)
  const outputs = deps.outputs;

  const commits = new OffsetCommits(consumer, log);
  const acquire = async (key: string, limit: number) => {
    let q = keyQueues.get(key);
    if (!q) keyQueues.set(key, (q = { running: 0, waiting: [] }));
    if (q.running >= limit) await new Promise<void>((resolve) => q!.waiting.push(resolve));
    q.running++;
  };
  const release = (key: string) => {
    const q = keyQueues.get(key);
    if (!q) return;
    q.running--;
    const next = q.waiting.shift();
    if (next) next();
    else if (q.running === 0) keyQueues.delete(key);
  };

  const backoff = (attempt: number) => new Promise((r) => setTimeout(r, Math.min(30_000, 200 * 2 ** Math.min(attempt, 8))));

  /** The handler's outputs, encoded; after HANDLER_ATTEMPTS failures, the record's dead letter. */
  const decide = async (value: RecordTypes[N] | undefined, ctx: StageContext, undecodable?: string): Promise<Awaited<ReturnType<typeof encodeOutputs>>> => {
    for (let attempt = 1; ; attempt++) {
      let reason = undecodable;
      if (reason === undefined) {
        try {
          const produced: AnyOutput[] = await stage.handle(value!, ctx);
          checkWrites(stage, produced);
          return await encodeOutputs(deps.codec, produced);
        } catch (err) {
          if (stopped) throw err;
          if (!deps.deadLetterTopic || attempt < HANDLER_ATTEMPTS) {
            log.error('handling failed; trying again', { attempt, error: errorMessage(err) });
            await backoff(attempt);
            continue;
          }
          reason = `stage ${stage.name} failed on this record ${attempt} times: ${errorMessage(err)}`;
        }
      }
      return encodeOutputs(deps.codec, [poisonLetter(deps.deadLetterTopic!, stage.name, log, ctx, value, reason)]);
    }
  };

  const handleUntilDone = async (value: RecordTypes[N] | undefined, position: StageContext['position'], source: StageContext['source'], undecodable?: string): Promise<void> => {
    const batch = await decide(value, { log, position, source }, undecodable);
    if (batch.length === 0) return;
    for (let attempt = 1; ; attempt++) {
      try {
        await outputs.send(batch);
        return;
      } catch (err) {
        if (stopped) throw err;
        log.error('outputs not acknowledged; producing again', { attempt, error: errorMessage(err) });
        await backoff(attempt);
      }
    }
  };

  const start = (source: StageContext['source'], partition: number, slot: Slot, value: RecordTypes[N] | undefined, undecodable?: string) => {
    const { topic } = source;
    // the caller reserved this record's place in `inFlight`
    const key = value !== undefined && options.keyOf ? options.keyOf(value as never) : '';
    void (async () => {
      await acquire(key, options.perKey ?? Number.MAX_SAFE_INTEGER);
      try {
        await handleUntilDone(value, { partition, offset: slot.offset.toString() }, source, undecodable);
        slot.done = true;
        const w = windows.get(`${topic}:${partition}`);
        const next = w?.advance();
        if (next !== undefined) commits.schedule(topic, partition, next);
      } catch {
        // only while stopping: the record stays uncommitted and is handled again after restart
      } finally {
        release(key);
        inFlight--;
        if (inFlight < options.maxInFlight) idleWaiters.splice(0).forEach((w) => w());
      }
    })();
  };

  const onBatch = async ({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload) => {
    const id = `${batch.topic}:${batch.partition}`;
    let w = windows.get(id);
    if (!w) windows.set(id, (w = new PartitionWindow()));
    for (const message of batch.messages) {
      if (!isRunning() || isStale()) return;
      while (inFlight >= options.maxInFlight) {
        await new Promise<void>((resolve) => {
          idleWaiters.push(resolve);
          setTimeout(resolve, 1_000);
        });
        await heartbeat();
        if (!isRunning() || isStale()) return;
      }
      const slot: Slot = { offset: BigInt(message.offset), done: false };
      w.slots.push(slot);
      if (message.value === null) {
        slot.done = true;
      } else {
        // reserved before decoding: another partition's batch checking the limit meanwhile sees it
        inFlight++;
        const source = { topic: batch.topic, key: message.key, value: message.value };
        let value: RecordTypes[N] | undefined;
        try {
          value = (await deps.codec.decode(stage.input.record, message.value)) as RecordTypes[N];
        } catch (err) {
          // a registry or broker that does not answer fails the batch; bytes that never decode are set aside
          if (!(err instanceof UndecodableRecordError) || !deps.deadLetterTopic) {
            // the batch is fetched again from this record: it must not hold a slot of its own meanwhile
            inFlight--;
            w.slots.pop();
            throw err;
          }
          start(source, batch.partition, slot, undefined, undecodableReason(stage.input.record, err));
          resolveOffset(message.offset);
          continue;
        }
        start(source, batch.partition, slot, value);
      }
      // the fetch position moves on; the commit waits for the window
      resolveOffset(message.offset);
    }
    const next = w.advance();
    if (next !== undefined) commits.schedule(batch.topic, batch.partition, next);
    await heartbeat();
  };

  consumer.on(consumer.events.GROUP_JOIN, () => {
    // a new generation starts from committed offsets: forget what the old one tracked
    windows.clear();
  });

  await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: 8, eachBatch: onBatch });
  return {
    name: stage.name,
    async stop() {
      stopped = true;
      await commits.drainAndLeave(stage.input.topic, () => inFlight > 0);
    },
  };
}
