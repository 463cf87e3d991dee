import type { Kafka } from 'kafkajs';
import type { Logger } from '../../core/log';
import type { AvroCodec } from '../../platform/avro/codec';
import type { EvidenceBatch } from '../../platform/avro/records';
import { readTail } from '../../platform/kafka/topic-table';
import { decideBatch, fencingTokenOf, type ChainHead } from './chain';

/** Batches read back from the log's end on a takeover: the newest, and enough before it to check it. */
const TAIL_BATCHES = 4;

export interface ResumePoint {
  /** The newest batch that extends the ones before it; null for an empty log. */
  newest: EvidenceBatch | null;
  /** The term of a sequencer taking the log over now: one more than any term in the log's tail. */
  term: number;
}

/**
 * Where a sequencer that has just claimed the log writer goes on from. Read after the claim, the
 * tail is final: no earlier sequencer can append any more. A batch of the tail that does not
 * extend the one before it (an older term, or a first index that is not the tree size before it)
 * is passed over and logged; the log cannot hold one while the broker fences its writers.
 */
export async function readResumePoint(kafka: Kafka, codec: AvroCodec, topic: string, log: Logger): Promise<ResumePoint> {
  const tail = await Promise.all((await readTail(kafka, topic, TAIL_BATCHES)).map(async (r) => ({ offset: r.offset, batch: await codec.decode('EvidenceBatch', r.value) })));
  let head: ChainHead | undefined;
  let newest: EvidenceBatch | null = null;
  let term = 0;
  for (const { offset, batch } of tail) {
    term = Math.max(term, fencingTokenOf(batch));
    const decision = decideBatch(head, batch);
    if (!decision.apply) {
      log.warn('evidence batch passed over on resume: it does not extend the log', { offset, first_index: batch.first_index, tree_size: batch.tree_size, fencing_token: fencingTokenOf(batch), reason: decision.reason });
      continue;
    }
    head = decision.head;
    newest = batch;
  }
  return { newest, term: term + 1 };
}
