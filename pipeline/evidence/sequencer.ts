import type { Consumer, EachBatchPayload } from 'kafkajs';
import { leafBytes, leafTime } from '../../core/evidence-leaf';
import { errorMessage } from '../../core/log';
import { CompactRange, leafHash } from '../../core/merkle';
import { formatCheckpoint, type NoteSigner } from '../../core/signed-note';
import { groupIdOf, stageIo, type Topics } from '../../core/topics';
import type { EvidenceBatch, EvidenceLeaf, SealedLeaf } from '../../platform/avro/records';
import { readLastRecord } from '../../platform/kafka/last-record';
import { produceOutputs, type RunnerDeps, type RunningStage } from '../runner/run-stage';
import { stageConsumer } from '../runner/stage-consumer';

export interface SequencerOptions {
  /** Leaves sealed into one checkpoint at most. */
  batchSize: number;
  /** Longest a leaf waits before its batch is sealed. */
  batchAgeMs: number;
  /** The log's name, first line of every checkpoint. */
  origin: string;
  signer: NoteSigner;
}

/** Everything needed to go on appending: rebuilt from the newest sealed batch. */
interface SequencerState {
  range: CompactRange;
  /** Next offset of evidence.pending to read; everything before it is sealed or dropped. */
  pendingNext: bigint;
  /** Next unsequenced offset per partition of deliveries.completed. */
  marks: Map<number, bigint>;
}

export interface RunningSequencer extends RunningStage {
  /** Size of the tree as this sequencer last sealed it. */
  treeSize(): number;
}

const emptyState = (): SequencerState => ({ range: new CompactRange(), pendingNext: 0n, marks: new Map() });

function stateOf(batch: EvidenceBatch): SequencerState {
  return {
    range: new CompactRange(batch.tree_size, batch.frontier),
    pendingNext: BigInt(batch.pending_next_offset),
    marks: new Map(batch.source_marks.map((m) => [m.partition, BigInt(m.next_offset)])),
  };
}

/**
 * The evidence sequencer: the only writer of the evidence log. It reads the one partition of
 * `evidence.pending` (so the consumer group gives it to one process at a time), appends each
 * outcome as an RFC 6962 leaf in that order, and seals a batch every `batchSize` leaves or
 * `batchAgeMs` into one `evidence.leaves` record: the leaves with their indexes, the Merkle
 * nodes they complete, the checkpoint signed as a C2SP note, and its own resume state.
 *
 * One record per batch makes a seal all or nothing. After a crash, or whenever the partition
 * is assigned again, the state is read back from the newest record and reading resumes at the
 * first offset it did not cover; a hand-over repeated by the intake is recognised by its
 * source offset. So the order is the partition's order, and a restart neither skips nor
 * repeats a leaf.
 */
export async function runEvidenceSequencer(topics: Topics, deps: RunnerDeps, options: SequencerOptions): Promise<RunningSequencer> {
  const log = deps.log.child({ stage: 'evidence' });
  const io = stageIo(topics, 'evidence-sequencer', 'EvidenceLeaf');
  const topic = io.input.topic;
  let stopped = false;
  let state = emptyState();
  let needsRecovery = true;
  let buffer: { leaf: EvidenceLeaf; offset: bigint }[] = [];
  let timer: NodeJS.Timeout | undefined;
  let chain: Promise<unknown> = Promise.resolve();
  /** Seals and batch handling take turns. */
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = chain.then(fn);
    chain = next.catch(() => undefined);
    return next;
  };

  const consumer: Consumer = await stageConsumer(deps.kafka, groupIdOf(deps.groupPrefix, io.name), [topic], () => stopped, { maxBytes: 8 * 1024 * 1024 });
  // a new assignment may follow another process's appends: start again from the log's tail
  consumer.on(consumer.events.GROUP_JOIN, () => {
    needsRecovery = true;
  });

  const recover = async () => {
    buffer = [];
    const last = await readLastRecord(deps.kafka, topics.evidenceLeaves);
    state = last ? stateOf(await deps.codec.decode('EvidenceBatch', last.value)) : emptyState();
    needsRecovery = false;
    consumer.seek({ topic, partition: 0, offset: state.pendingNext.toString() });
    log.info('evidence log resumed', { tree_size: state.range.size, pending_offset: state.pendingNext.toString() });
  };

  const seal = async (): Promise<void> => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (needsRecovery || buffer.length === 0) return;
    const taken = buffer;
    buffer = [];
    const range = new CompactRange(state.range.size, state.range.hashes());
    const marks = new Map(state.marks);
    const leaves: SealedLeaf[] = [];
    const nodes: EvidenceBatch['nodes'] = [];
    for (const { leaf } of taken) {
      const mark = marks.get(leaf.source_partition);
      if (mark !== undefined && BigInt(leaf.source_offset) < mark) continue; // handed over twice
      marks.set(leaf.source_partition, BigInt(leaf.source_offset) + 1n);
      const hash = leafHash(leafBytes({ ...leaf, attempted_at: leafTime(leaf.attempted_at) }));
      const leafIndex = range.size;
      nodes.push(...range.append(hash).map((n) => ({ level: n.level, index: n.index, hash: n.hash })));
      const { source_partition: _p, source_offset: _o, ...fields } = leaf;
      leaves.push({ ...fields, leaf_index: leafIndex, leaf_hash: hash });
    }
    const pendingNext = taken[taken.length - 1]!.offset + 1n;
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
        pending_next_offset: Number(pendingNext),
        source_marks: [...marks].map(([partition, next]) => ({ partition, next_offset: Number(next) })),
      };
      try {
        await produceOutputs(deps.producer, deps.codec, [{ topic: topics.evidenceLeaves, key: 'log', record: 'EvidenceBatch', value: batch }]);
      } catch (err) {
        // the append may or may not have happened: only the log's tail can say
        needsRecovery = true;
        throw err;
      }
      log.debug('evidence batch sealed', { first_index: batch.first_index, tree_size: batch.tree_size });
    }
    state = { range, pendingNext, marks };
    await consumer.commitOffsets([{ topic, partition: 0, offset: pendingNext.toString() }]).catch((err: unknown) => {
      // harmless: a restart re-reads from an older offset and skips what is sealed
      log.warn('evidence offset commit failed', { error: errorMessage(err) });
    });
  };

  const scheduleSeal = () => {
    if (timer || buffer.length === 0) return;
    timer = setTimeout(() => {
      timer = undefined;
      exclusive(seal).catch((err: unknown) => log.error('evidence seal failed; resuming from the log', { error: errorMessage(err) }));
    }, options.batchAgeMs);
  };

  const onBatch = ({ batch, resolveOffset, heartbeat }: EachBatchPayload) =>
    exclusive(async () => {
      if (needsRecovery) {
        // the seek drops this batch; fetching starts again where the log ends
        await recover();
        return;
      }
      const lastBuffered = buffer.length > 0 ? buffer[buffer.length - 1]!.offset : state.pendingNext - 1n;
      for (const message of batch.messages) {
        const offset = BigInt(message.offset);
        if (offset <= lastBuffered || message.value === null) continue;
        buffer.push({ leaf: await deps.codec.decode('EvidenceLeaf', message.value), offset });
        if (buffer.length >= options.batchSize) await seal();
      }
      resolveOffset(batch.lastOffset());
      scheduleSeal();
      await heartbeat();
    });

  await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: 1, eachBatch: onBatch });
  return {
    name: 'evidence',
    treeSize: () => state.range.size,
    async stop() {
      stopped = true;
      consumer.pause([{ topic }]);
      await exclusive(seal).catch((err: unknown) => log.error('final evidence seal failed; the leaves will be read again', { error: errorMessage(err) }));
      if (timer) clearTimeout(timer);
      await consumer.disconnect();
    },
  };
}
