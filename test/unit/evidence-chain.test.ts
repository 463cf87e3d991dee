import { AssignerProtocol } from 'kafkajs';
import { decideBatch, type ChainHead } from '../../pipeline/evidence/chain';
import { oneOwnerAssigner } from '../../pipeline/evidence/one-owner';

/** The readers' check that a batch extends the log, and who owns the log after a rebalance. */
describe('evidence batch chain', () => {
  const head: ChainHead = { treeSize: 10, fencingToken: 3 };
  it.each<[string, ChainHead | undefined, { first_index: number; tree_size: number; fencing_token?: number }, boolean]>([
    ['nothing applied yet: any batch starts the chain', undefined, { first_index: 40, tree_size: 45, fencing_token: 1 }, true],
    ['the next batch in the same term', head, { first_index: 10, tree_size: 12, fencing_token: 3 }, true],
    ['the next batch in a newer term (a takeover)', head, { first_index: 10, tree_size: 11, fencing_token: 4 }, true],
    ['an older term: a deposed sequencer', head, { first_index: 10, tree_size: 12, fencing_token: 2 }, false],
    ['the same first index again: a fork', head, { first_index: 8, tree_size: 12, fencing_token: 3 }, false],
    ['a gap', head, { first_index: 11, tree_size: 12, fencing_token: 4 }, false],
    ['a batch written before terms were recorded, after a term', head, { first_index: 10, tree_size: 12 }, false],
    ['batches written before terms were recorded, in a row', { treeSize: 10, fencingToken: 0 }, { first_index: 10, tree_size: 12 }, true],
  ])('%s', (_what, before, batch, applied) => {
    const decision = decideBatch(before, batch);
    expect(decision.apply).toBe(applied);
    if (decision.apply) expect(decision.head).toEqual({ treeSize: batch.tree_size, fencingToken: batch.fencing_token ?? 0 });
  });
});

describe('one-owner assignor', () => {
  const cluster = { findTopicPartitionMetadata: () => [{ partitionId: 1 }, { partitionId: 0 }] };
  /** The member ids given partitions when members join holding these terms. */
  const owners = async (terms: Record<string, number>) => {
    const members = Object.entries(terms).map(([memberId, term]) => {
      const { metadata } = oneOwnerAssigner(() => term)({ cluster } as never).protocol({ topics: ['t'] });
      return { memberId, memberMetadata: metadata };
    });
    const assignment = await oneOwnerAssigner(() => 0)({ cluster } as never).assign({ members, topics: ['t'] });
    return assignment
      .map((a) => ({ id: a.memberId, got: AssignerProtocol.MemberAssignment.decode(a.memberAssignment)!.assignment }))
      .filter((a) => Object.keys(a.got).length > 0)
      .map((a) => ({ id: a.id, partitions: a.got.t }));
  };

  it('gives every partition to the member with the newest term, so the owner keeps the log', async () => {
    expect(await owners({ a: 0, b: 5, c: 0 })).toEqual([{ id: 'b', partitions: [0, 1] }]);
    // a deposed owner wakes still holding its old term: the new owner keeps the log
    expect(await owners({ a: 4, b: 5 })).toEqual([{ id: 'b', partitions: [0, 1] }]);
  });

  it('gives everything to the lowest member id when no member owns the log', async () => {
    expect(await owners({ c: 0, a: 0, b: 0 })).toEqual([{ id: 'a', partitions: [0, 1] }]);
  });
});
