import type { ICustomPartitioner, PartitionerArgs } from 'kafkajs';

const SEED = 0x9747b28c;
const M = 0x5bd1e995;

/**
 * Kafka's murmur2 (the Java client's `Utils.murmur2`) on 32-bit integers. kafkajs computes the
 * same hash through 64-bit BigInt arithmetic, which cost about 3% of the service's CPU per
 * accepted webhook; only the low 32 bits ever reach the result, so `Math.imul` gives them exactly.
 */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  let h = (SEED ^ length) | 0;
  const length4 = length & ~3;
  for (let i = 0; i < length4; i += 4) {
    let k = data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  const rest = length & 3;
  if (rest > 0) {
    if (rest === 3) h ^= data[length4 + 2]! << 16;
    if (rest >= 2) h ^= data[length4 + 1]! << 8;
    h ^= data[length4]!;
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

const toPositive = (x: number) => x & 0x7fffffff;

/**
 * The partitioner of kafkajs's `Partitioners.DefaultPartitioner` (and of the Java client for
 * keyed records): an explicit partition wins, a key picks `murmur2(key) % partitions`, and
 * records without either go round-robin over the partitions that have a leader. Records keep
 * the partitions they would have had with kafkajs's own partitioner.
 */
export const murmur2Partitioner: ICustomPartitioner = () => {
  const counters = new Map<string, number>();
  return ({ topic, partitionMetadata, message }: PartitionerArgs): number => {
    if (message.partition !== null && message.partition !== undefined) return message.partition;
    const numPartitions = partitionMetadata.length;
    const key = message.key;
    if (key !== null && key !== undefined) return toPositive(murmur2(Buffer.isBuffer(key) ? key : Buffer.from(String(key)))) % numPartitions;
    const next = (counters.get(topic) ?? Math.floor(Math.random() * 0x7fffffff)) + 1;
    counters.set(topic, next);
    const available = partitionMetadata.filter((p) => p.leader >= 0);
    if (available.length > 0) return available[toPositive(next) % available.length]!.partitionId;
    return toPositive(next) % numPartitions;
  };
};
