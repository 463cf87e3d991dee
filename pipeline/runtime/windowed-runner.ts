import { errorMessage } from '../../core/log';
import type { RecordName, RecordTypes } from '../../platform/avro/records';
import { consume, type ConsumedBatch, type Consuming, type EncodedOutput, type RunnerDeps, type RunningStage } from './consume';
import { requiredVersion, stampVersion } from './config-version';
import { backoff, contextOf, handleRecord, markSentAgain } from './run-stage';
import { recordTraceOf } from '../../platform/tracing/trace-context';
import type { RecordStage, StageContext } from './stage';

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
  /** Key of a record's work queue, and how many of one key are handled at once (per destination); producing their outputs is not counted. */
  keyOf?: (value: never) => string;
  /**
   * A function when the limit moves (a share of a deployment-wide limit) or differs by key (an
   * ordered destination's line runs one at a time): read at every start and end.
   */
  perKey?: number | ((key: string) => number);
  /**
   * Runs on a decoded record before it takes a place of its key, and may hand the handler a
   * changed value: a paced delivery waits for its send slot here, holding none of its
   * destination's places. A failure leaves the value as it was.
   */
  prepare?: (value: never) => Promise<unknown>;
}

/**
 * Work queues by key: at most `limit()` of one key run at once, the rest wait in order. A limit
 * that shrinks lets no new one start until enough have ended; one that grows is taken up as
 * the key's next run ends.
 */
class KeyedLimit {
  private readonly queues = new Map<string, { running: number; waiting: (() => void)[] }>();

  constructor(private readonly limit: (key: string) => number) {}

  async acquire(key: string): Promise<void> {
    let q = this.queues.get(key);
    if (!q) this.queues.set(key, (q = { running: 0, waiting: [] }));
    // a waiter is woken with its place taken for it (running counted by release)
    if (q.running >= this.limit(key) || q.waiting.length > 0) await new Promise<void>((resolve) => q!.waiting.push(resolve));
    else q.running++;
  }

  release(key: string): void {
    const q = this.queues.get(key);
    if (!q) return;
    q.running--;
    const limit = this.limit(key);
    while (q.running < limit && q.waiting.length > 0) {
      q.running++;
      q.waiting.shift()!();
    }
    if (q.running === 0) this.queues.delete(key);
  }
}

/**
 * Runs a stage whose handler may take long (an HTTP delivery that waits for a slow
 * destination) without holding up the records behind it: records are started as they are
 * fetched, and a partition's offset is committed up to the first record not finished yet.
 * Outputs are acknowledged before their record counts as finished, so a crash replays only
 * unfinished records (at-least-once). Failures follow the stage's policy (`handleRecord`);
 * producing is retried until Kafka takes the outputs, without running the handler again (a
 * delivery is not sent twice because Kafka was away). Fetching waits while `maxInFlight`
 * records are in hand (back-pressure), heartbeating meanwhile.
 */
export async function runWindowedStage<N extends RecordName>(stage: RecordStage<N>, deps: RunnerDeps, options: WindowOptions): Promise<RunningStage> {
  const windows = new Map<string, PartitionWindow>();
  const perKey = options.perKey ?? Number.MAX_SAFE_INTEGER;
  const keys = new KeyedLimit(typeof perKey === 'number' ? () => perKey : perKey);
  let inFlight = 0;
  const idleWaiters: (() => void)[] = [];

  const outcome = async (consuming: Consuming, value: RecordTypes[N], ctx: StageContext): Promise<EncodedOutput[]> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await handleRecord(stage, deps, consuming, value, ctx);
      } catch (err) {
        // only without a dead-letter topic: the record is tried until it passes
        if (consuming.stopped()) throw err;
        await backoff(attempt);
      }
    }
  };

  const produce = async (consuming: Consuming, encoded: EncodedOutput[]) => {
    let outputs = encoded;
    for (let attempt = 1; ; attempt++) {
      try {
        return await consuming.send(outputs);
      } catch (err) {
        if (consuming.stopped()) throw err;
        // the failed request may have been written all the same: what is sent again may be a twin
        if (attempt === 1) outputs = markSentAgain(outputs);
        consuming.log.error('outputs not acknowledged; producing again', { attempt, error: errorMessage(err) });
        await backoff(attempt);
      }
    }
  };

  /** Runs one record to its acknowledged outputs; the caller reserved its place in `inFlight`. */
  const start = (batch: ConsumedBatch, consuming: Consuming, slot: Slot, ctx: StageContext, decoded: Promise<EncodedOutput[] | RecordTypes[N]>) => {
    void (async () => {
      let key = '';
      try {
        let got = await decoded;
        if (!Array.isArray(got) && options.prepare) got = ((await options.prepare(got as never).catch(() => got)) as RecordTypes[N]);
        if (!Array.isArray(got) && options.keyOf) key = options.keyOf(got as never);
        // a key's place covers the handling only (a delivery's attempt): the outputs that follow
        // concern no receiver, and producing them (a linger, then acks=all) must not hold the
        // place the next delivery to that destination waits for. The offset is still committed
        // only once they are acknowledged; a record read again meanwhile (a crash, a rebalance)
        // is the stage's to recognise (the deliver stage's attempt claims)
        await keys.acquire(key);
        let held = true;
        const releasePlace = () => {
          if (!held) return;
          held = false;
          keys.release(key);
        };
        let encoded: EncodedOutput[];
        try {
          ctx.releasePlace = releasePlace;
          encoded = Array.isArray(got) ? got : await outcome(consuming, got, ctx);
        } finally {
          releasePlace();
        }
        await produce(consuming, encoded);
        slot.done = true;
        const next = windows.get(`${batch.topic}:${batch.partition}`)?.advance();
        if (next !== undefined) consuming.scheduleCommit(batch.topic, batch.partition, next);
      } catch {
        // only while stopping: the record stays uncommitted and is handled again after restart
      } finally {
        inFlight--;
        if (inFlight < options.maxInFlight) idleWaiters.splice(0).forEach((w) => w());
      }
    })();
  };

  const onBatch = async (batch: ConsumedBatch, consuming: Consuming) => {
    const id = `${batch.topic}:${batch.partition}`;
    let w = windows.get(id);
    if (!w) windows.set(id, (w = new PartitionWindow()));
    for (const message of batch.messages) {
      if (!batch.active()) return;
      while (inFlight >= options.maxInFlight) {
        await new Promise<void>((resolve) => {
          idleWaiters.push(resolve);
          setTimeout(resolve, 1_000);
        });
        await batch.heartbeat();
        if (!batch.active()) return;
      }
      const slot: Slot = { offset: BigInt(message.offset), done: false };
      w.slots.push(slot);
      if (message.value === null) {
        slot.done = true;
      } else {
        // reserved before decoding: another partition's batch checking the limit meanwhile sees it
        inFlight++;
        let work: Promise<EncodedOutput[] | RecordTypes[N]>;
        try {
          const decoded = await batch.decode<N>(message as typeof message & { value: Buffer });
          work = decoded.undecodable !== undefined ? consuming.encode(stampVersion(decoded.letters(), requiredVersion(message.headers), recordTraceOf(message.headers))) : Promise.resolve(decoded.value);
        } catch (err) {
          // a registry that does not answer (or bytes with nowhere to be set aside) fail the
          // batch, fetched again from this record: it must not hold a slot meanwhile
          inFlight--;
          w.slots.pop();
          throw err;
        }
        start(batch, consuming, slot, contextOf(batch, consuming, message as typeof message & { value: Buffer }), work);
      }
      // the fetch position moves on; the commit waits for the window
      batch.resolve(message.offset);
    }
    const next = w.advance();
    if (next !== undefined) consuming.scheduleCommit(batch.topic, batch.partition, next);
    await batch.heartbeat();
  };

  return consume(
    deps,
    {
      name: stage.name,
      inputs: [stage.input],
      partitionsConsumedConcurrently: 8,
      // a new generation starts from committed offsets: forget what the old one tracked
      onAssign: () => windows.clear(),
      busy: () => inFlight > 0,
    },
    onBatch,
  );
}
