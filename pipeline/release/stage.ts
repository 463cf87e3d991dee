import { blankOutcome } from '../deliver/outcome';
import type { KafkaMessage } from 'kafkajs';
import type { Destination, Entity, Tenant } from '../../core/model';
import { isSuspended } from '../../core/tenants';
import { eventKey, keptKey } from '../../core/record-keys';
import { consumerSpec, type Topics } from '../../core/topics';
import { errorMessage } from '../../core/log';
import type { DeliveryOutcome, DeliveryTask } from '../../platform/avro/records';
import { isHeld } from '../deliver/hold';
import { requiredVersion, stampVersion } from '../runtime/config-version';
import { consume, type ConsumedBatch, type Consuming, type RunnerDeps, type RunningStage } from '../runtime/consume';
import type { AnyOutput } from '../runtime/stage';
import { transition } from '../transitions';
import { recordTraceOf, traceIdOf } from '../../platform/tracing/trace-context';
import { endSpan, recordSpanAttributes, SPAN_ATTRIBUTES, SpanKind, spanTrace, startSpan } from '../../platform/tracing/tracing';

/** What release needs of the configuration: destinations, and word when one changes. */
export interface ReleaseConfig {
  get(kind: 'destination', tenantId: string, id: string): Destination | undefined;
  tenant(tenantId: string): Tenant | undefined;
  list(kind: 'destination', tenantId: string): readonly Destination[];
  onChange(listener: (entity: Entity, deleted: boolean) => void): () => void;
}

/** A destination's held deliveries still to be released (or failed), read again from `from` up to `to`. */
interface Scan {
  from: bigint;
  to: bigint;
}

/**
 * What release knows of one partition of the held topic. Only offsets whose outputs Kafka has
 * acknowledged move any of it, so it always agrees with the consumer's resolved position.
 */
interface PartitionState {
  /** The next offset the tail has not read yet. */
  tail: bigint;
  /** The next offset the consumer reads (below `tail` while a scan reads a range again). */
  readPos: bigint;
  /** Destinations that are paused (or disabled), at the first offset of theirs still held. */
  firstHeld: Map<string, bigint>;
  /** Destinations active again (or deleted) whose held range is being read again. */
  scans: Map<string, Scan>;
  /** Batches and scans of a partition take turns. */
  turn: Promise<void>;
}

function copy(st: PartitionState): PartitionState {
  return { ...st, firstHeld: new Map(st.firstHeld), scans: new Map([...st.scans].map(([d, s]) => [d, { ...s }])) };
}

/** The offset below which nothing is left to do: the earliest held or still-to-release offset, else the tail. */
export function commitPoint(st: Pick<PartitionState, 'tail' | 'readPos' | 'firstHeld' | 'scans'>): bigint {
  let point = st.tail;
  for (const o of st.firstHeld.values()) if (o < point) point = o;
  for (const s of st.scans.values()) if (s.from < point) point = s.from;
  return point;
}

/**
 * The records that fail a delivery whose destination was deleted while it was held, as deliver
 * fails one: the outcome, the failed and dlq_queued transitions, and the task on the dead-letter
 * topic (the outcome and the task under the delivery's `key`).
 */
export function failGone(topics: Topics, task: DeliveryTask, now: number, key: string): AnyOutput[] {
  const reason = 'the destination no longer exists';
  const event = { event_id: task.event_id, tenant_id: task.tenant_id, ingester_id: task.ingester_id, correlation_id: task.correlation_id };
  const ids = { delivery_id: task.delivery_id, destination_id: task.destination_id };
  const outcome: DeliveryOutcome = { ...blankOutcome(task, now), error_message: reason };
  return [
    { topic: topics.deliveryCompleted, key, record: 'DeliveryOutcome', value: outcome },
    transition(topics, event, 'failed', { ...ids, reason }),
    transition(topics, event, 'dlq_queued', { ...ids, reason }),
    { topic: topics.deliveryDlq, key, record: 'DeliveryTask', value: task },
  ];
}

/**
 * Puts held deliveries back on deliveries.requested, per destination and partition in the order
 * they were held (an ordered destination's are all in one partition), once their destination is
 * active again; fails those of a destination deleted meanwhile.
 *
 * Per partition it tails the held topic: a task of an active destination goes back at once, a
 * task of a paused (or disabled) one only notes the destination's first held offset, so a
 * paused destination never holds up the others of its partition. The committed offset is the
 * earliest such offset (the tail when there is none). When a destination becomes active (or is
 * deleted), its partition is read again from its first held offset up to where the tail was,
 * releasing (or failing) that destination's tasks in order and passing over the rest; a task of
 * it held later (a deliver process that had not seen the resume yet) is released by the tail.
 *
 * Released tasks name this process's configuration version, so a deliver process that has not
 * seen the resume yet waits for it instead of holding them again.
 *
 * At least once: after a crash or a rebalance, the range from the committed offset is read
 * again, and tasks of active destinations in it that had been released go back a second time
 * (same delivery id, so the same webhook-id for the receiver); none is ever lost.
 */
export async function runRelease(topics: Topics, config: ReleaseConfig, deps: RunnerDeps, now: () => number = Date.now): Promise<RunningStage> {
  const [heldTopic] = consumerSpec(topics, 'release').reads as [string];
  const states = new Map<number, PartitionState>();
  let consuming: Consuming | undefined;

  const inTurn = (st: PartitionState, work: () => Promise<void>): Promise<void> => {
    const run = st.turn.then(work);
    st.turn = run.catch(() => undefined);
    return run;
  };

  /** The task's destination, as this process knows it now: active, held or gone. */
  const statusOf = (task: DeliveryTask): 'active' | 'held' | 'gone' => {
    const d = config.get('destination', task.tenant_id, task.destination_id);
    if (!d) return 'gone';
    return isHeld(d, config.tenant(d.tenant_id)) ? 'held' : 'active';
  };

  // back under the key it was held with: an ordered destination's tasks return to its partition in order
  const released = (task: DeliveryTask, key: string): AnyOutput => ({ topic: topics.deliveryRequested, key, record: 'DeliveryTask', value: { ...task, slot_at: null } });

  /**
   * What one record of the partition leads to, with `st` (a working copy) moved past it; the
   * outputs name the configuration version they were decided with.
   */
  const decideOn = async (st: PartitionState, batch: ConsumedBatch, message: KafkaMessage, c: Consuming): Promise<AnyOutput[]> => {
    const offset = BigInt(message.offset);
    const atTail = offset >= st.tail;
    st.readPos = offset + 1n;
    if (atTail) st.tail = offset + 1n;
    if (message.value === null) return [];
    const decoded = await batch.decode<'DeliveryTask'>(message as KafkaMessage & { value: Buffer });
    if (decoded.undecodable !== undefined) return atTail ? stampVersion(decoded.letters(), requiredVersion(message.headers)) : [];
    const task = decoded.value;
    const d = task.destination_id;
    const scan = st.scans.get(d);
    const rescanned = scan !== undefined && offset >= scan.from && offset < scan.to;
    if (!atTail && !rescanned) return [];
    const required = requiredVersion(message.headers);
    const waiting = c.config.ready(required);
    if (waiting) await waiting;
    const status = statusOf(task);
    let outputs: AnyOutput[] = [];
    let trace = recordTraceOf(message.headers);
    if (status === 'held') {
      // paused again while its range was read: the rest waits for the next resume
      if (rescanned) st.scans.delete(d);
      if (!st.firstHeld.has(d)) st.firstHeld.set(d, offset);
    } else {
      if (rescanned) scan.from = offset + 1n;
      const key = keptKey(message.key, () => eventKey(task));
      outputs = status === 'active' ? [released(task, key)] : failGone(topics, task, now(), key);
      const span = startSpan('hookline.release', SpanKind.CONSUMER, trace, () => ({
        ...recordSpanAttributes(heldTopic, { tenant_id: task.tenant_id, event_id: task.event_id, delivery_id: task.delivery_id, destination_id: d }),
        [SPAN_ATTRIBUTES.outcome]: status === 'active' ? 'released' : 'failed',
      }));
      if (span) {
        trace = spanTrace(span, trace);
        endSpan(span);
      }
      if (status === 'gone') c.log.warn('held delivery failed: its destination was deleted', { tenant_id: task.tenant_id, event_id: task.event_id, delivery_id: task.delivery_id, destination_id: d, correlation_id: task.correlation_id, trace_id: traceIdOf(trace) });
    }
    return stampVersion(outputs, c.config.decided(required), trace);
  };

  const finishScans = (st: PartitionState) => {
    for (const [d, s] of st.scans) if (s.to <= st.readPos || s.from >= s.to) st.scans.delete(d);
  };

  const onBatch = async (batch: ConsumedBatch, c: Consuming) => {
    const first = batch.messages[0];
    if (!first) return;
    let st = states.get(batch.partition);
    if (!st) states.set(batch.partition, (st = { tail: BigInt(first.offset), readPos: BigInt(first.offset), firstHeld: new Map(), scans: new Map(), turn: Promise.resolve() }));
    const own = st;
    await inTurn(own, async () => {
      if (states.get(batch.partition) !== own || !batch.active()) return;
      const work = copy(own);
      const outputs: AnyOutput[] = [];
      let last: string | undefined;
      for (const message of batch.messages) {
        if (!batch.active()) break;
        const offset = BigInt(message.offset);
        // fetched before a scan moved the position back: behind it, or past the range to read again
        if (offset < work.readPos) continue;
        if (offset > work.readPos && work.readPos < work.tail) {
          c.seek(batch.topic, batch.partition, work.readPos);
          break;
        }
        outputs.push(...(await decideOn(work, batch, message, c)));
        finishScans(work);
        last = message.offset;
      }
      if (last === undefined) return;
      await c.send(await c.encode(outputs));
      Object.assign(own, { tail: work.tail, readPos: work.readPos, firstHeld: work.firstHeld, scans: work.scans });
      batch.resolve(last);
      c.scheduleCommit(batch.topic, batch.partition, commitPoint(own));
      await batch.heartbeat();
    });
  };

  /** A destination active again (or deleted): its held range is read again in every partition that holds some. */
  const onDestination = (destination: Destination, deleted: boolean) => {
    if (!deleted && isHeld(destination, config.tenant(destination.tenant_id))) return;
    for (const [partition, st] of states) {
      if (!st.firstHeld.has(destination.id)) continue;
      void inTurn(st, async () => {
        const from = st.firstHeld.get(destination.id);
        if (states.get(partition) !== st || from === undefined || !consuming || consuming.stopped()) return;
        st.firstHeld.delete(destination.id);
        st.scans.set(destination.id, { from, to: st.tail });
        if (from < st.readPos) {
          st.readPos = from;
          consuming.seek(heldTopic, partition, from);
        }
        consuming.log.info(deleted ? 'destination deleted; failing its held deliveries' : 'destination active; releasing its held deliveries', { tenant_id: destination.tenant_id, destination_id: destination.id, partition, from: from.toString() });
      }).catch((err: unknown) => consuming?.log.error('held deliveries not released; they go at the next restart', { destination_id: destination.id, error: errorMessage(err) }));
    }
  };
  const unsubscribe = config.onChange((entity, deleted) => {
    if (entity.kind === 'destination') onDestination(entity, deleted);
    // a tenant resumed: each of its destinations that is active is released like one resumed
    else if (entity.kind === 'tenant' && !deleted && !isSuspended(entity)) for (const d of config.list('destination', entity.id)) onDestination(d, false);
  });

  const running = await consume(
    deps,
    {
      name: 'release',
      inputs: [{ topic: heldTopic, record: 'DeliveryTask' }],
      partitionsConsumedConcurrently: 8,
      // a new generation starts from committed offsets: what the old one knew is read again
      onAssign: () => states.clear(),
      beforeLeave: async () => {
        unsubscribe();
      },
    },
    onBatch,
  );
  consuming = running.consuming;
  return running;
}
