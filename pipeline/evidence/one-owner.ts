import { AssignerProtocol, type PartitionAssigner } from 'kafkajs';

/**
 * A partition assignor that gives every partition of the subscribed topics to one member of the
 * group (the lowest member id) and none to the others: the evidence log has one writer at a time,
 * and any number of processes may stand by. When the owner leaves, the group's next rebalance
 * hands everything to another member, which resumes from the log's tail.
 */
export const oneOwnerAssigner: PartitionAssigner = ({ cluster }) => ({
  name: 'HooklineOneOwner',
  version: 1,
  async assign({ members, topics }) {
    const owner = members.map((m) => m.memberId).sort()[0];
    const all: Record<string, number[]> = {};
    for (const topic of topics) all[topic] = cluster.findTopicPartitionMetadata(topic).map((m) => m.partitionId).sort((a, b) => a - b);
    return members.map((m) => ({
      memberId: m.memberId,
      memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 1, assignment: m.memberId === owner ? all : {}, userData: Buffer.alloc(0) }),
    }));
  },
  protocol({ topics }) {
    return { name: 'HooklineOneOwner', metadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics, userData: Buffer.alloc(0) }) };
  },
});
