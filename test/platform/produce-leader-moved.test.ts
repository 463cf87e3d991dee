// The client's send path (kafkajs producer/sendMessages, as patched) driven against a cluster whose
// leadership moves during a send. A real cluster cannot be made to move a leader between the two
// halves of one request on cue; the fault suite does it by killing and freezing brokers under load
// and counts what was lost. Here the same sequence is played step by step against the client's own
// retry code, with an in-memory cluster that records what each broker was asked to write.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const createSendMessages = require('kafkajs/src/producer/sendMessages') as (deps: unknown) => (req: {
  acks: number;
  timeout: number;
  topicMessages: { topic: string; messages: { key?: string; value: string; partition?: number }[] }[];
}) => Promise<{ topicName: string; partition: number; baseOffset: string }[]>;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { KafkaJSConnectionClosedError } = require('kafkajs/src/errors') as {
  KafkaJSConnectionClosedError: new (message: string, where: { host: string; port: number }) => Error;
};
// eslint-disable-next-line @typescript-eslint/no-require-imports
const createRetry = require('kafkajs/src/retry') as (options: { retries: number; initialRetryTime: number }) => unknown;

type Written = { broker: number; partition: number; values: string[] };

/** Two brokers; partition p is led by `leaders[p]`. Broker 2 loses its connection at its first Produce. */
function movingCluster(leaders: number[]) {
  const written: Written[] = [];
  const offsets = new Map<number, number>();
  let brokerTwoFails = true;
  const broker = (nodeId: number) => ({
    nodeId,
    async produce({ topicData }: { topicData: { topic: string; partitions: { partition: number; messages: { value: string }[] }[] }[] }) {
      if (nodeId === 2 && brokerTwoFails) {
        brokerTwoFails = false;
        // broker 2 dies: its partitions move to broker 1 before the client's next try
        leaders.fill(1);
        throw new KafkaJSConnectionClosedError('Connection closed', { host: 'b2', port: 2 });
      }
      return {
        topics: topicData.map(({ topic, partitions }) => ({
          topicName: topic,
          partitions: partitions.map(({ partition, messages }) => {
            written.push({ broker: nodeId, partition, values: messages.map((m) => m.value) });
            const base = offsets.get(partition) ?? 0;
            offsets.set(partition, base + messages.length);
            return { partition, errorCode: 0, baseOffset: String(base), logAppendTime: '-1', logStartOffset: '0' };
          }),
        })),
      };
    },
  });
  const brokers = new Map([1, 2].map((id) => [id, broker(id)]));
  const cluster = {
    targetTopics: new Set<string>(),
    async addMultipleTargetTopics() {},
    async refreshMetadataIfNecessary() {},
    async refreshMetadata() {},
    isConnected: () => true,
    removeBroker() {},
    findTopicPartitionMetadata: () => leaders.map((leader, partitionId) => ({ partitionId, leader })),
    findLeaderForPartitions(_topic: string, partitions: string[]) {
      const result: Record<string, number[]> = {};
      for (const p of partitions.map(Number)) (result[leaders[p]!] ??= []).push(p);
      return result;
    },
    async findBroker({ nodeId }: { nodeId: string }) {
      return brokers.get(Number(nodeId));
    },
  };
  const eosManager = {
    async acquireBrokerLock() {},
    async releaseBrokerLock() {},
    isTransactional: () => false,
    getSequence: () => 0,
    updateSequence() {},
    getProducerId: () => -1,
    getProducerEpoch: () => 0,
  };
  const logger = { debug() {}, info() {}, warn() {}, error() {} };
  const sender = (partitioner: (args: { message: { partition?: number } }) => number) =>
    createSendMessages({ logger, cluster, eosManager, partitioner, retrier: createRetry({ retries: 3, initialRetryTime: 1 }) });
  return { written, sender };
}

const explicitPartition = ({ message }: { message: { partition?: number } }) => message.partition!;

describe('a produce retried after a leader moved', () => {
  it('writes the moved partitions to their new leader, even one that already answered this send', async () => {
    const { written, sender } = movingCluster([1, 2]);
    const send = sender(explicitPartition);
    const answers = await send({
      acks: -1,
      timeout: 1000,
      topicMessages: [{ topic: 't', messages: [{ value: 'a', partition: 0 }, { value: 'b', partition: 1 }] }],
    });
    // broker 1 answered for partition 0 at the first try; partition 1 moved to it and was sent there
    expect(written).toEqual([
      { broker: 1, partition: 0, values: ['a'] },
      { broker: 1, partition: 1, values: ['b'] },
    ]);
    expect(answers.map((a) => a.partition).sort()).toEqual([0, 1]);
  });

  it('keeps each message on the partition chosen at the first try', async () => {
    const { written, sender } = movingCluster([1, 2]);
    let calls = 0;
    // a keyless partitioner turns round: chosen again at the retry, a message would change partition
    const send = sender(() => calls++ % 2);
    await send({ acks: -1, timeout: 1000, topicMessages: [{ topic: 't', messages: [{ value: 'a' }, { value: 'b' }, { value: 'c' }] }] });
    expect(calls).toBe(3);
    const values = written.flatMap((w) => w.values).sort();
    expect(values).toEqual(['a', 'b', 'c']);
    expect(written.find((w) => w.partition === 1)?.values).toEqual(['b']);
  });

  it('merges two entries for one topic instead of keeping only the last', async () => {
    const { written, sender } = movingCluster([1, 1]);
    const send = sender(explicitPartition);
    await send({
      acks: -1,
      timeout: 1000,
      topicMessages: [
        { topic: 't', messages: [{ value: 'a', partition: 0 }] },
        { topic: 't', messages: [{ value: 'b', partition: 0 }] },
      ],
    });
    expect(written).toEqual([{ broker: 1, partition: 0, values: ['a', 'b'] }]);
  });
});
