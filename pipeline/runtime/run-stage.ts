import { errorMessage } from '../../core/log';
import { poisonLetter } from '../dead-letter';
import { consume, type ConsumedBatch, type Consuming, type EncodedOutput, type RunnerDeps, type RunningStage } from './consume';
import { checkWrites, type RecordStage, type Stage, type StageContext } from './stage';

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
 * dead-letter topic, or while stopping, the error is thrown.
 */
export async function handleRecord<S extends RecordStage>(stage: S, deps: RunnerDeps, consuming: Consuming, value: Parameters<S['handle']>[0], ctx: StageContext): Promise<EncodedOutput[]> {
  const attempts = stage.attempts ?? HANDLER_ATTEMPTS;
  for (let attempt = 1; ; attempt++) {
    try {
      const outputs = await stage.handle(value as never, ctx);
      checkWrites(stage, outputs);
      return await consuming.encode(outputs);
    } catch (err) {
      if (consuming.stopped() || (attempt >= attempts && !deps.deadLetterTopic)) throw err;
      if (attempt >= attempts) return consuming.encode([poisonLetter(deps.deadLetterTopic!, stage.name, consuming.log, ctx, value, `stage ${stage.name} failed on this record ${attempt} times: ${errorMessage(err)}`)]);
      consuming.log.error('handling failed; trying again', { attempt, error: errorMessage(err) });
      await backoff(attempt);
    }
  }
}

/** The context of `message` in `batch`, for handlers and dead letters. */
export function contextOf(batch: ConsumedBatch, consuming: Consuming, message: { offset: string; key: Buffer | null; value: Buffer }): StageContext {
  return { log: consuming.log, position: { partition: batch.partition, offset: message.offset }, source: { topic: batch.topic, key: message.key, value: message.value } };
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
 * Runs a stage batch by batch: the records of a batch are handled (`concurrency` at once, outputs
 * in input order), all outputs are produced in one request, and only once Kafka has acknowledged
 * them is the batch's offset committed (at-least-once). A record that does not decode, or whose
 * handler keeps failing, becomes a dead letter and the partition goes on; a failure to produce
 * fails the batch, which is fetched again after backoff.
 */
export async function runStage(stage: Stage, deps: RunnerDeps): Promise<RunningStage> {
  const recordStage = stage as RecordStage;
  return consume(deps, { name: stage.name, inputs: [stage.input], partitionsConsumedConcurrently: 4 }, async (batch, consuming) => {
    const messages = batch.messages.filter((m): m is typeof m & { value: Buffer } => m.value !== null);
    const outputs = await mapInOrder(messages, recordStage.concurrency ?? 16, async (message) => {
      const decoded = await batch.decode(message);
      if (decoded.undecodable !== undefined) return consuming.encode([decoded.letter()]);
      return handleRecord(recordStage, deps, consuming, decoded.value, contextOf(batch, consuming, message));
    });
    await consuming.send(outputs.flat());
    consuming.scheduleCommit(batch.topic, batch.partition, BigInt(batch.lastOffset()) + 1n);
    // the fetch position follows resolved offsets, not committed ones
    batch.resolve(batch.lastOffset());
    await batch.heartbeat();
  });
}
