import type { EvidenceBatch } from '../../platform/avro/records';

/** Where the log stands after the last batch a reader applied. */
export interface ChainHead {
  treeSize: number;
  fencingToken: number;
}

export type ChainDecision = { apply: true; head: ChainHead } | { apply: false; reason: string };

/**
 * Whether a batch read from the log extends what a reader already applied. Only one sequencer
 * can append at a time (the broker fences the others), so this never refuses a batch of a sound
 * log; it is the readers' own check that a batch from a deposed sequencer, had one got through,
 * forks nothing: a batch must start where the tree ended and carry a term no older than the last.
 * With nothing applied yet (`head` undefined) any batch is taken as the start.
 */
export function decideBatch(head: ChainHead | undefined, batch: Pick<EvidenceBatch, 'first_index' | 'tree_size' | 'fencing_token'>): ChainDecision {
  const token = fencingTokenOf(batch);
  const next = { treeSize: batch.tree_size, fencingToken: token };
  if (!head) return { apply: true, head: next };
  if (token < head.fencingToken) return { apply: false, reason: `fencing token ${token} is older than ${head.fencingToken}, already applied` };
  if (batch.first_index !== head.treeSize) return { apply: false, reason: `first index ${batch.first_index} is not the tree size ${head.treeSize} applied before it` };
  return { apply: true, head: next };
}

/** A batch's term; batches written before terms were recorded have none and count as term 0. */
export function fencingTokenOf(batch: Pick<EvidenceBatch, 'fencing_token'>): number {
  return batch.fencing_token ?? 0;
}
