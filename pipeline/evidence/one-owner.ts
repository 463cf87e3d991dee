import { AssignerProtocol, type PartitionAssigner } from 'kafkajs';

/** A member's claim as it joins: the term it holds (0 when it owns nothing), big-endian. */
function termData(term: number): Buffer {
  const data = Buffer.alloc(8);
  data.writeBigInt64BE(BigInt(term));
  return data;
}

function termOf(metadata: Buffer): number {
  try {
    const { userData } = AssignerProtocol.MemberMetadata.decode(metadata) ?? {};
    return userData && userData.length >= 8 ? Number(userData.readBigInt64BE(0)) : 0;
  } catch {
    return 0;
  }
}

/**
 * A partition assignor that gives every partition of the subscribed topics to one member of the
 * group and none to the others: the evidence log has one writer at a time, and any number of
 * processes may stand by. The owner stays the owner across rebalances: each member joins with the
 * term it holds (`term()`, 0 for none), and the member with the newest term keeps everything, so
 * a process that joins, or a deposed one that wakes up still believing it owns the log, takes
 * nothing from the current owner. With no owner among the members (the first start, or the owner
 * left), the lowest member id takes over and resumes from the log's tail.
 */
export function oneOwnerAssigner(term: () => number): PartitionAssigner {
  return ({ cluster }) => ({
    name: 'HooklineOneOwner',
    version: 1,
    async assign({ members, topics }) {
      const ranked = members.map((m) => ({ id: m.memberId, term: termOf(m.memberMetadata) })).sort((a, b) => b.term - a.term || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      const owner = ranked[0]?.id;
      const all: Record<string, number[]> = {};
      for (const topic of topics) all[topic] = cluster.findTopicPartitionMetadata(topic).map((m) => m.partitionId).sort((a, b) => a - b);
      return members.map((m) => ({
        memberId: m.memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 1, assignment: m.memberId === owner ? all : {}, userData: Buffer.alloc(0) }),
      }));
    },
    protocol({ topics }) {
      return { name: 'HooklineOneOwner', metadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics, userData: termData(term()) }) };
    },
  });
}
