import type { IHeaders } from 'kafkajs';
import { errorMessage } from '../../core/log';
import { groupIdOf } from '../../core/topics';
import { consumerLag } from '../../platform/kafka/lag';
import { isRetriableKafkaError } from '../../platform/kafka/client';
import { poisonLetter } from '../dead-letter';
import { consume, type ConsumedBatch, type Consuming, type EncodedOutput, type RunnerDeps, type RunningStage } from './consume';
import { requiredVersion, stampVersion } from './config-version';
import { CHAINED_HEADER, checkWrites, UNCERTAIN_HEADER, type AnyOutput, type RecordStage, type Stage, type StageContext } from './stage';
import { recordTraceOf, traceIdOf } from '../../platform/tracing/trace-context';
import { handleInSpan } from './traced';

export type { RunnerDeps, RunningStage } from './consume';

/** Times a handler is tried on one record before the record is a dead letter (unless the stage says otherwise). */
export const HANDLER_ATTEMPTS = 3;

/** Longest a batch's handlers run before the event loop gets a turn (health, the API, other stages). */
const SLICE_MS = 10;

export const backoff = (attempt: number): Promise<void> => new Promise((r) => setTimeout(r, Math.min(30_000, 100 * 2 ** Math.min(attempt, 9))));

/**
 * A stage's failure policy applied to one record: its handler is tried up to its `attempts`
 * (HANDLER_ATTEMPTS by default) with a growing pause between tries; after the last, the record
 * becomes a dead letter with the reason and its original bytes (an output like any other), so
 * its partition goes on. Outputs that do not encode count as the handler's failure. Without a
 * dead-letter topic, or while stopping, the error is thrown. The handler runs only once this
 * process has the configuration version the record names (or the bounded wait is over), and
 * every output names the version it was decided with.
 */
export async function handleRecord<S extends RecordStage>(stage: S, deps: RunnerDeps, consuming: Consuming, value: Parameters<S['handle']>[0], ctx: StageContext): Promise<EncodedOutput[]> {
  const attempts = stage.attempts ?? HANDLER_ATTEMPTS;
  const waiting = consuming.config.ready(ctx.configVersion);
  if (waiting) await waiting;
  // what an uncertain input gives may repeat what it gave before: its readers are told so
  const decided = (outputs: AnyOutput[]) => consuming.encode(stampVersion(ctx.uncertain ? markUncertain(outputs) : outputs, consuming.config.decided(ctx.configVersion), ctx.trace));
  for (let attempt = 1; ; attempt++) {
    try {
      const outputs = await handleInSpan(stage, value as never, ctx);
      checkWrites(stage, outputs);
      return await decided(outputs);
    } catch (err) {
      if (consuming.stopped() || (attempt >= attempts && !deps.deadLetterTopic)) throw err;
      if (attempt >= attempts) return decided([poisonLetter(deps.deadLetterTopic!, stage.name, consuming.log, ctx, value, `stage ${stage.name} failed on this record ${attempt} times: ${errorMessage(err)}`)]);
      consuming.log.error('handling failed; trying again', { attempt, error: errorMessage(err), trace_id: traceIdOf(ctx.trace) });
      await backoff(attempt);
    }
  }
}

/**
 * Encoded outputs to be produced again after a failure whose outcome is unknown (a request whose
 * answer was lost may have been written): each says it may be a twin (UNCERTAIN_HEADER), so the
 * stage that reads it checks whether its work was done, as for its own uncertain inputs.
 */
export function markSentAgain(encoded: readonly EncodedOutput[]): EncodedOutput[] {
  return encoded.map((o) => ({ ...o, headers: { ...o.headers, [UNCERTAIN_HEADER]: '1' } }));
}

/** The outputs with UNCERTAIN_HEADER among their headers. */
function markUncertain(outputs: AnyOutput[]): AnyOutput[] {
  return outputs.map((o) => ({ ...o, headers: { ...o.headers, [UNCERTAIN_HEADER]: '1' } }) as AnyOutput);
}

/** The context of `message` in `batch`, for handlers and dead letters. */
export function contextOf(batch: ConsumedBatch, consuming: Consuming, message: { offset: string; key: Buffer | null; value: Buffer; headers?: IHeaders }): StageContext {
  return {
    log: consuming.log,
    position: { partition: batch.partition, offset: message.offset },
    source: { topic: batch.topic, key: message.key, value: message.value },
    configVersion: requiredVersion(message.headers),
    trace: recordTraceOf(message.headers),
    uncertain: batch.uncertain(message.offset) || message.headers?.[UNCERTAIN_HEADER] !== undefined,
  };
}

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

/**
 * Produces a batch's outputs until Kafka acknowledges them, without handling its records again:
 * they were decided (a task routed, a delivery attempted), and a batch consumed again after a
 * failed produce would decide them twice (the same delivery tasks written again, each then
 * delivered). A failure the client calls retriable (a broker gone, a leader moving, the producer
 * being replaced) is tried again with the same outputs while the partition is still this
 * member's; a partition given to another member, a stop, or a failure that is not retriable
 * fails the batch as before, and it is consumed again (at-least-once).
 */
export async function sendDecided(batch: ConsumedBatch, consuming: Consuming, encoded: readonly EncodedOutput[]): Promise<void> {
  let outputs = encoded;
  for (let attempt = 1; ; attempt++) {
    try {
      return await consuming.send(outputs);
    } catch (err) {
      // the failed request may have been written all the same: what is sent again may be a twin
      if (attempt === 1) outputs = markSentAgain(outputs);
      if (consuming.stopped() || !batch.active() || !isRetriableKafkaError(err)) throw err;
      consuming.log.warn('outputs not acknowledged; producing them again', { attempt, topic: batch.topic, partition: batch.partition, error: errorMessage(err) });
      await backoff(attempt);
      // a long outage must not cost the partition: the group hears from this member meanwhile
      await batch.heartbeat().catch(() => undefined);
    }
  }
}

/**
 * Runs a stage batch by batch: the records of a batch are handled (`concurrency` at once, outputs
 * in input order), all outputs are produced in one request, and only once Kafka has acknowledged
 * them is the batch's offset committed (at-least-once). A record that does not decode, or whose
 * handler keeps failing, becomes a dead letter and the partition goes on; a failure to produce
 * fails the batch, which is fetched again after backoff. With `until` (the next offset per
 * partition), records from there on are left alone and their partition is paused, and records a
 * chain already handed on to this stage (CHAINED_HEADER) are passed over.
 */
export async function runStage(stage: Stage, deps: RunnerDeps, until?: ReadonlyMap<number, bigint>): Promise<RunningStage> {
  const recordStage = stage as RecordStage;
  return consume(deps, { name: stage.name, inputs: [stage.input], partitionsConsumedConcurrently: 4 }, async (batch, consuming) => {
    const end = until ? (until.get(batch.partition) ?? 0n) : undefined;
    const inRange = end === undefined ? batch.messages : batch.messages.filter((m) => BigInt(m.offset) < end);
    if (inRange.length < batch.messages.length) consuming.pause(batch.topic, batch.partition);
    if (inRange.length === 0) return;
    const last = inRange[inRange.length - 1]!.offset;
    const messages = inRange.filter((m): m is typeof m & { value: Buffer } => m.value !== null && !(until && m.headers?.[CHAINED_HEADER] !== undefined));
    const outputs = await mapInOrder(messages, recordStage.concurrency ?? 16, async (message) => {
      const decoded = await batch.decode(message);
      if (decoded.undecodable !== undefined) return consuming.encode(stampVersion(decoded.letters(), requiredVersion(message.headers), recordTraceOf(message.headers)));
      return handleRecord(recordStage, deps, consuming, decoded.value, contextOf(batch, consuming, message));
    });
    await sendDecided(batch, consuming, outputs.flat());
    consuming.scheduleCommit(batch.topic, batch.partition, BigInt(last) + 1n);
    // the fetch position follows resolved offsets, not committed ones
    batch.resolve(last);
    await batch.heartbeat();
  });
}

/**
 * Finishes the backlog of a consumer group whose work has moved elsewhere: the records its
 * group committed on but had not handled when called are handled by `stage` in that group, which
 * then stops by itself once the group's commits reach the ends read at the call, whichever
 * process of the group made them, and deletes the group, so that no later start finds a backlog
 * again. Records a chain handled in the stage's place (CHAINED_HEADER) are passed over: a start
 * that finds the group still there after a crash goes through them without handling them again.
 * Partitions the group never committed on hold no backlog of it. Nothing to finish: undefined.
 */
export async function finishBacklog(stage: Stage, deps: RunnerDeps, pollMs = 1_000): Promise<RunningStage | undefined> {
  const groupId = groupIdOf(deps.groupPrefix, stage.name);
  const admin = deps.kafka.admin();
  await admin.connect();
  const partitions = async () => (await consumerLag(admin, groupId, [stage.input.topic]))[0]!.partitions;
  let left;
  try {
    const all = await partitions();
    left = all.filter((p) => p.committed !== null && p.committed < p.end);
    // a group that had finished when its work moved: nothing to do, and nothing for later starts
    if (left.length === 0 && all.some((p) => p.committed !== null)) await admin.deleteGroups([groupId]).catch(() => undefined);
  } catch (err) {
    await admin.disconnect();
    throw err;
  }
  if (left.length === 0) {
    await admin.disconnect();
    return undefined;
  }
  const ends = new Map(left.map((p) => [p.partition, BigInt(p.end)]));
  deps.log.info('finishing the backlog of a group whose work moved into another stage', { group: groupId, records: left.reduce((n, p) => n + p.end - p.committed!, 0) });
  const running = await runStage(stage, deps, ends);
  let stopping: Promise<void> | undefined;
  const stop = () => (stopping ??= running.stop().finally(() => admin.disconnect()));
  void (async () => {
    while (!stopping) {
      await new Promise((r) => setTimeout(r, pollMs));
      try {
        const now = await partitions();
        if (now.every((p) => !ends.has(p.partition) || BigInt(p.committed ?? 0) >= ends.get(p.partition)!)) {
          deps.log.info('backlog finished', { group: groupId });
          await running.stop();
          // another process of the group still leaving keeps it; the last one deletes it
          await admin.deleteGroups([groupId]).catch(() => undefined);
          await stop();
        }
      } catch (err) {
        if (!stopping) deps.log.warn('backlog progress not read; trying again', { group: groupId, error: errorMessage(err) });
      }
    }
  })();
  return { name: stage.name, stop };
}
