import { leafBytes, leafTime } from '../../core/evidence-leaf';
import { errorMessage } from '../../core/log';
import { CompactRange, leafHash } from '../../core/merkle';
import { formatCheckpoint, type NoteSigner } from '../../core/signed-note';
import { stageIo, type Topics } from '../../core/topics';
import type { DeliveryOutcome, EvidenceBatch, SealedLeaf } from '../../platform/avro/records';
import { consume, type ConsumedBatch, type Consuming, type RunnerDeps, type RunningStage } from '../runtime/consume';
import type { Output } from '../runtime/stage';
import { WriterFencedError, type FencedLogWriter } from './log-writer';
import { oneOwnerAssigner } from './one-owner';
import { readResumePoint } from './resume';
import { recordEvidenceSeal, recordEvidenceTreeSize, secondsSince } from '../../platform/metrics/metrics';
import { recordTraceOf, type RecordHeaders } from '../../platform/tracing/trace-context';
import { endSpan, recordSpanAttributes, isTracing, SPAN_ATTRIBUTES, SpanKind, startSpan, type Span } from '../../platform/tracing/tracing';

export interface SequencerOptions {
  /** Leaves sealed into one checkpoint at most. */
  batchSize: number;
  /** Longest a leaf waits before its batch is sealed. */
  batchAgeMs: number;
  /** The log's name, first line of every checkpoint. */
  origin: string;
  signer: NoteSigner;
  /**
   * Appends the sealed batches; one holder per deployment. Claimed on every new assignment
   * before the log's tail is read, so a deposed sequencer's late append is refused.
   */
  writer: FencedLogWriter;
}

/** Everything needed to go on appending: rebuilt from the newest sealed batch. */
interface SequencerState {
  range: CompactRange;
  /** Next unsequenced offset per partition of deliveries.completed; everything before it is sealed or set aside. */
  marks: Map<number, bigint>;
}

/** A delivery attempt outcome with its place in deliveries.completed, on its way into the log. */
export interface PendingLeaf extends Omit<SealedLeaf, 'leaf_index' | 'leaf_hash'> {
  source_partition: number;
  source_offset: number;
}

/** The leaf of an outcome read at `partition`/`offset` of deliveries.completed. */
export function pendingLeaf(o: DeliveryOutcome, partition: number, offset: number): PendingLeaf {
  return {
    tenant_id: o.tenant_id,
    delivery_id: o.delivery_id,
    event_id: o.event_id,
    destination_id: o.destination_id,
    correlation_id: o.correlation_id,
    attempt_number: o.attempt_number,
    status: o.status,
    response_code: o.response_code,
    attempted_at: o.attempted_at,
    body_sha256: o.body_sha256,
    replay_of: o.replay_of ?? null,
    source_partition: partition,
    source_offset: offset,
  };
}

export interface RunningSequencer extends RunningStage {
  /** Size of the tree as this sequencer last sealed it. */
  treeSize(): number;
}

const emptyState = (): SequencerState => ({ range: new CompactRange(), marks: new Map() });

/** An outcome read and not sealed yet; `span` (while spans are recorded) runs from its reading to its seal. */
interface Pending {
  leaf: PendingLeaf | null;
  partition: number;
  offset: bigint;
  span: Span | undefined;
}

/** The span of an outcome's way into the log, child of the delivery attempt's span; undefined without spans recorded. */
function leafSpan(o: DeliveryOutcome, headers: RecordHeaders, topic: string): Span | undefined {
  if (!isTracing()) return undefined;
  return startSpan('hookline.evidence', SpanKind.CONSUMER, recordTraceOf(headers), () => recordSpanAttributes(topic, { ...o, attempt: o.attempt_number }));
}

/** Ends the spans of outcomes that leave the buffer unsealed (read again later, by this process or the next owner). */
function dropSpans(pending: readonly Pending[], reason: string): void {
  for (const p of pending) {
    if (!p.span) continue;
    p.span.setAttribute(SPAN_ATTRIBUTES.outcome, 'not_sealed');
    endSpan(p.span, new Error(reason));
  }
}

function stateOf(batch: EvidenceBatch): SequencerState {
  return {
    range: new CompactRange(batch.tree_size, batch.frontier),
    marks: new Map(batch.source_marks.map((m) => [m.partition, BigInt(m.next_offset)])),
  };
}

/**
 * The evidence sequencer: the only writer of the evidence log. It reads every partition of
 * `deliveries.completed` itself, in a consumer group whose assignor gives them all to one member
 * (so one process sequences at a time), appends each outcome as an RFC 6962 leaf in the order it
 * reads them, and seals a batch every `batchSize` leaves or `batchAgeMs` into one
 * `evidence.leaves` record: the leaves with their indexes, the Merkle nodes they complete, the
 * checkpoint signed as a C2SP note, its own resume state (the next source offset of each
 * partition) and its term (`fencing_token`).
 *
 * One record per batch makes a seal all or nothing. After a crash, or whenever the partitions
 * are assigned again, the sequencer first claims the log writer, which fences every earlier
 * writer at the broker, and only then reads the state back from the newest record; its term is
 * one more than the log's. Every partition is read again from the first offset the log did not
 * cover (from its start when it never was); an outcome read twice is recognised by its source
 * offset. So a restart neither skips nor repeats a leaf, and a sequencer that was stopped past its
 * session (a pause, a long GC, a partition) and wakes up with a batch in hand cannot append it:
 * its append is refused, it drops what it held and waits for the group to assign it again. Bytes
 * that never decode are set aside on `events.dlq` and passed over.
 */
export async function runEvidenceSequencer(topics: Topics, deps: RunnerDeps, options: SequencerOptions): Promise<RunningSequencer> {
  const io = stageIo(topics, 'evidence-sequencer', 'DeliveryOutcome');
  const topic = io.input.topic;
  const log = deps.log.child({ stage: io.name });
  let state = emptyState();
  /** The term this process holds the log in; 0 while it does not own it. */
  let term = 0;
  let needsRecovery = true;
  /** Recovered, and the partitions not yet moved to the resume offsets (done at the next batch). */
  let needsSeek = false;
  /** Refused by the broker as deposed: nothing more until the group assigns again. */
  let fenced = false;
  let assigned: number[] = [];
  /** Read and not yet sealed, in reading order; `next` per partition is the offset after the last one read. */
  let buffer: Pending[] = [];
  let next = new Map<number, bigint>();
  let timer: NodeJS.Timeout | undefined;
  let chain: Promise<unknown> = Promise.resolve();
  /** Seals, recoveries and batch handling take turns. */
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = chain.then(fn);
    chain = run.catch(() => undefined);
    return run;
  };

  /** Set by the first batch; seals run from timers too. */
  let consuming: Consuming;

  const recover = async () => {
    dropSpans(buffer, 'the log is resumed from its tail');
    buffer = [];
    term = 0;
    // first the claim, then the tail: once claimed, no earlier writer can add to the log
    await options.writer.claim();
    const resumed = await readResumePoint(deps.kafka, deps.codec, topics.evidenceLeaves, log);
    state = resumed.newest ? stateOf(resumed.newest) : emptyState();
    const admin = deps.kafka.admin();
    await admin.connect();
    let low: Map<number, bigint>;
    try {
      low = new Map((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, BigInt(o.low)]));
    } finally {
      await admin.disconnect();
    }
    next = new Map();
    for (const partition of assigned) next.set(partition, state.marks.get(partition) ?? low.get(partition) ?? 0n);
    term = resumed.term;
    needsRecovery = false;
    needsSeek = true;
    recordEvidenceTreeSize(state.range.size);
    log.info('evidence log resumed', { tree_size: state.range.size, partitions: assigned.length, fencing_token: term });
  };

  /** Deposed: what was gathered is the new owner's to read again; this process waits for an assignment. */
  const stepDown = (dropped: number, err: WriterFencedError) => {
    if (!fenced) log.warn('evidence log writer fenced: another sequencer owns the log; the batch in hand is dropped and nothing more is appended until the group assigns again', { fencing_token: term, dropped_leaves: dropped, error: errorMessage(err.cause ?? err) });
    fenced = true;
    needsRecovery = true;
    term = 0;
    dropSpans(buffer, 'this sequencer was fenced');
    buffer = [];
    if (timer) clearTimeout(timer);
    timer = undefined;
  };

  const seal = async (): Promise<void> => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (needsRecovery || needsSeek || buffer.length === 0) return;
    const started = performance.now();
    const taken = buffer;
    buffer = [];
    const range = new CompactRange(state.range.size, state.range.hashes());
    const marks = new Map(state.marks);
    const leaves: SealedLeaf[] = [];
    const nodes: EvidenceBatch['nodes'] = [];
    const spans: Span[] = [];
    for (const { leaf, partition, offset, span } of taken) {
      const mark = marks.get(partition);
      if (mark !== undefined && offset < mark) {
        // read twice
        if (span) {
          span.setAttribute(SPAN_ATTRIBUTES.outcome, 'already_sealed');
          endSpan(span);
        }
        continue;
      }
      marks.set(partition, offset + 1n);
      if (!leaf) continue; // set aside: only its place moves on
      const hash = leafHash(leafBytes({ ...leaf, attempted_at: leafTime(leaf.attempted_at) }));
      const leafIndex = range.size;
      if (span) {
        span.setAttribute('hookline.leaf_index', leafIndex);
        spans.push(span);
      }
      nodes.push(...range.append(hash).map((n) => ({ level: n.level, index: n.index, hash: n.hash })));
      const { source_partition: _p, source_offset: _o, ...fields } = leaf;
      leaves.push({ ...fields, leaf_index: leafIndex, leaf_hash: hash });
    }
    if (leaves.length > 0) {
      const root = range.root();
      const batch: EvidenceBatch = {
        first_index: state.range.size,
        tree_size: range.size,
        root_hash: root,
        checkpoint: options.signer.sign(formatCheckpoint({ origin: options.origin, size: range.size, root })),
        sealed_at: Date.now(),
        leaves,
        nodes,
        frontier: range.hashes(),
        // the offset of a topic no longer read; kept in the schema for batches written before
        pending_next_offset: 0,
        source_marks: [...marks].map(([partition, offset]) => ({ partition, next_offset: Number(offset) })),
        fencing_token: term,
      };
      try {
        const [record] = await consuming.encode([{ topic: topics.evidenceLeaves, key: 'log', record: 'EvidenceBatch', value: batch }]);
        await options.writer.append([record!]);
      } catch (err) {
        for (const span of spans) endSpan(span, err);
        if (err instanceof WriterFencedError) return stepDown(leaves.length, err);
        // the append may or may not have happened: only the log's tail can say, once claimed again
        needsRecovery = true;
        throw err;
      }
      recordEvidenceSeal(secondsSince(started));
      recordEvidenceTreeSize(batch.tree_size);
      for (const span of spans) {
        span.setAttributes({ [SPAN_ATTRIBUTES.outcome]: 'sealed', 'hookline.tree_size': batch.tree_size });
        endSpan(span);
      }
      log.debug('evidence batch sealed', { first_index: batch.first_index, tree_size: batch.tree_size, fencing_token: term });
    }
    // without a leaf nothing is appended: the marks of outcomes set aside move on in memory, and
    // the next sealed batch carries them (until then a restart reads those outcomes again)
    state = { range, marks };
    await consuming.commitNow([...marks].filter(([p]) => assigned.includes(p)).map(([partition, offset]) => ({ topic, partition, offset: offset.toString() }))).catch((err: unknown) => {
      // harmless: a restart resumes from the log's own marks
      consuming.log.warn('evidence offset commit failed', { error: errorMessage(err) });
    });
  };

  const scheduleSeal = () => {
    if (timer || buffer.length === 0) return;
    timer = setTimeout(() => {
      timer = undefined;
      exclusive(seal).catch((err: unknown) => log.error('evidence seal failed; resuming from the log', { error: errorMessage(err) }));
    }, options.batchAgeMs);
  };

  const onBatch = (batch: ConsumedBatch, running: Consuming) =>
    exclusive(async () => {
      consuming = running;
      if (fenced) {
        // the group has not told this process yet; its next heartbeat makes it rejoin
        await new Promise((r) => setTimeout(r, 200));
        await batch.heartbeat();
        return;
      }
      if (needsRecovery) await recover();
      if (needsSeek) {
        // the seeks drop this batch; fetching starts again where the log ends
        for (const [partition, from] of next) running.seek(topic, partition, from);
        needsSeek = false;
        return;
      }
      const partition = batch.partition;
      const from = next.get(partition);
      if (from === undefined) return; // not ours since the last assignment
      const letters: Output<'DeadLetter'>[] = [];
      for (const message of batch.messages) {
        const offset = BigInt(message.offset);
        if (offset < from) continue;
        next.set(partition, offset + 1n);
        if (message.value === null) continue;
        const decoded = await batch.decode<'DeliveryOutcome'>(message as typeof message & { value: Buffer });
        if (decoded.undecodable !== undefined) letters.push(...decoded.letters());
        const ok = decoded.undecodable === undefined;
        buffer.push({ leaf: ok ? pendingLeaf(decoded.value, partition, Number(offset)) : null, partition, offset, span: ok ? leafSpan(decoded.value, message.headers, topic) : undefined });
        if (buffer.length >= options.batchSize) await seal();
        if (fenced) return; // deposed by that seal: the rest of the batch is the new owner's
      }
      await running.send(await running.encode(letters));
      batch.resolve(batch.lastOffset());
      scheduleSeal();
      await batch.heartbeat();
    });

  const stage = await consume(
    deps,
    {
      name: io.name,
      inputs: [{ topic, record: 'DeliveryOutcome' }],
      partitionsConsumedConcurrently: 1,
      // outcomes wait up to batchAgeMs for their seal anyway: a fetch may wait half of it for more
      fetchLinger: { minBytes: 256 * 1024, maxWaitMs: Math.max(1, Math.floor(options.batchAgeMs / 2)) },
      // the owner joins with its term and keeps the log across rebalances
      consumer: { maxBytes: 8 * 1024 * 1024, partitionAssigners: [oneOwnerAssigner(() => term)] },
      // a new assignment may follow another process's appends: claim the writer and start again
      // from the log's tail at once, so that a deposed owner is fenced before it can wake up
      onAssign: (assignment) => {
        assigned = (assignment[topic] ?? []).slice().sort((a, b) => a - b);
        needsRecovery = true;
        fenced = false;
        term = 0;
        if (assigned.length === 0) return;
        exclusive(recover).catch((err: unknown) => log.error('evidence log takeover failed; trying again at the next batch', { error: errorMessage(err) }));
      },
      beforeLeave: async () => {
        await exclusive(seal);
        if (timer) clearTimeout(timer);
      },
    },
    onBatch,
  );
  return {
    name: 'evidence',
    treeSize: () => state.range.size,
    stop: async () => {
      await stage.stop();
      await options.writer.close();
    },
  };
}
