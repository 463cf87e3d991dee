import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { Partitioners, type PartitionerArgs, type PartitionMetadata } from 'kafkajs';
import { murmur2Partitioner } from '../../platform/kafka/partitioner';

const metadata = (n: number, leaderless: number[] = []): PartitionMetadata[] =>
  Array.from({ length: n }, (_, partitionId) => ({ partitionId, leader: leaderless.includes(partitionId) ? -1 : 1, partitionErrorCode: 0, replicas: [1], isr: [1] }));

/** Records keep the partitions kafkajs's own default partitioner (Java-compatible murmur2) gives them. */
describe('murmur2 partitioner', () => {
  const ours = murmur2Partitioner();
  const theirs = Partitioners.DefaultPartitioner();
  const both = (args: PartitionerArgs) => [ours(args), theirs(args)];

  it('puts every string key where kafkajs does, for any partition count', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 80 }), fc.integer({ min: 1, max: 64 }), (key, n) => {
        const [a, b] = both({ topic: 't', partitionMetadata: metadata(n), message: { key, value: null } });
        expect(a).toBe(b);
      }),
      { numRuns: 5_000 },
    );
  });

  it('puts every byte key where kafkajs does, including the ids the pipeline uses as keys', () => {
    const keys = [
      ...Array.from({ length: 2_000 }, (_, i) => randomBytes(i % 67)),
      ...['', 'a', 'ab', 'abc', 'abcd', 'dst_01m81y5fp1ahxvvpqjbtz83fdc', 'demo/ing_01m81y5h8swbgs83sz4k80w9t4', 'tenant-f2ac212667/evt_01m81y5g9k1j4y5ny4smy08yww', 'é€😀'].map((s) => Buffer.from(s)),
    ];
    for (const key of keys) {
      for (const n of [1, 2, 3, 7, 12, 100]) {
        const [a, b] = both({ topic: 't', partitionMetadata: metadata(n), message: { key, value: null } });
        expect(a).toBe(b);
      }
    }
  });

  it('keeps an explicit partition and spreads keyless records over partitions with a leader', () => {
    expect(ours({ topic: 't', partitionMetadata: metadata(4), message: { partition: 3, key: 'k', value: null } })).toBe(3);
    const seen = new Set<number>();
    for (let i = 0; i < 40; i++) seen.add(ours({ topic: 'keyless', partitionMetadata: metadata(4, [1]), message: { value: 'v' } }));
    expect([...seen].sort()).toEqual([0, 2, 3]);
  });
});
