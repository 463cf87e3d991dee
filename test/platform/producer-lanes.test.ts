import { Kafka, logLevel, Partitioners, type Message } from 'kafkajs';
import { BatchingProducer } from '../../platform/kafka/batching-producer';
import { createProducer, ensureTopics } from '../../platform/kafka/client';
import { murmur2Partitioner } from '../../platform/kafka/partitioner';
import { partitionOfKey, ProducerLanes, watchPartitionCounts, type RecordSender } from '../../platform/kafka/producer-lanes';
import { readTopic } from '../../platform/kafka/topic-table';
import { uniqueSuffix } from '../support/ids';

describe('producer lanes', () => {
  it('picks the partition kafkajs\'s default partitioner picks for a key', () => {
    const kafkajs = Partitioners.DefaultPartitioner();
    for (const partitions of [1, 3, 7, 64]) {
      const partitionMetadata = Array.from({ length: partitions }, (_, i) => ({ partitionErrorCode: 0, partitionId: i, leader: 0, replicas: [0], isr: [0], offlineReplicas: [] }));
      for (let i = 0; i < 500; i++) {
        const key = `tenant/${i}-${'x'.repeat(i % 13)}`;
        expect(partitionOfKey(key, partitions)).toBe(kafkajs({ topic: 't', partitionMetadata, message: { key, value: null } }));
      }
    }
  });

  it('gives each partition one lane, and a record without a key or of an unknown topic to the first', async () => {
    const seen: { topic: string; messages: Message[] }[][][] = [[], [], []];
    const lanes = new ProducerLanes(seen.map((calls): RecordSender => ({ send: async (tm) => void calls.push(tm) })), (topic) => (topic === 'known' ? 6 : undefined));
    await lanes.send([
      { topic: 'known', messages: Array.from({ length: 60 }, (_, i) => ({ key: `k${i}`, value: String(i) })) },
      { topic: 'known', messages: [{ key: null, value: 'unkeyed' }, { partition: 5, value: 'explicit' }] },
      { topic: 'unknown', messages: [{ key: 'k1', value: 'elsewhere' }] },
    ]);
    const partitionsOfLane = seen.map((calls) => new Set(calls.flat().filter((t) => t.topic === 'known').flatMap((t) => t.messages.map((m) => m.partition))));
    // 60 keys fill all six partitions; partition p is lane p % 3's alone, unpartitioned records the first lane's
    expect(partitionsOfLane).toEqual([new Set([0, 3, undefined]), new Set([1, 4]), new Set([2, 5])]);
    const first = seen[0]!.flat();
    expect(first.find((t) => t.topic === 'unknown')!.messages.map((m) => [m.value, m.partition])).toEqual([['elsewhere', undefined]]);
    expect(first.flatMap((t) => t.messages).filter((m) => m.value === 'unkeyed')).toHaveLength(1);
    expect(seen[2]!.flat().flatMap((t) => t.messages).filter((m) => m.value === 'explicit')).toHaveLength(1);
    // every record went somewhere, once
    expect(seen.flat(2).reduce((n, t) => n + t.messages.length, 0)).toBe(63);
  });

  it('with several idempotent producers writes every record once, on its key\'s partition, in the order sent per partition', async () => {
    const kafka = new Kafka({ clientId: 'lanes-test', brokers: process.env.KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING, retry: { initialRetryTime: 100, retries: 8 } });
    const topic = `lanes-${uniqueSuffix()}`;
    await ensureTopics(kafka, [{ topic, partitions: 6 }]);
    const admin = kafka.admin();
    await admin.connect();
    const producers = [0, 1, 2].map(() => createProducer(kafka, { createPartitioner: murmur2Partitioner }));
    const produceRequests = producers.map(() => 0);
    producers.forEach((p, i) => p.on(p.events.REQUEST, (e) => void (e.payload.apiName === 'Produce' && produceRequests[i]!++)));
    await Promise.all(producers.map((p) => p.connect()));
    const counts = await watchPartitionCounts(admin, [topic]);
    try {
      expect(counts.partitionsOf(topic)).toBe(6);
      const lanes = new ProducerLanes(producers.map((p) => new BatchingProducer(p, { maxBatch: 40 })), counts.partitionsOf);
      const keys = Array.from({ length: 24 }, (_, i) => `key-${i}`);
      const sent = Array.from({ length: 2_400 }, (_, i) => ({ key: keys[i % keys.length]!, value: String(i) }));
      // callers of one turn share requests; later turns go while earlier requests are out
      const sends: Promise<void>[] = [];
      for (let i = 0; i < sent.length; i += 8) {
        sends.push(lanes.send([{ topic, messages: sent.slice(i, i + 8).map((m) => ({ ...m })) }]));
        if (i % 200 === 0) await new Promise((r) => setImmediate(r));
      }
      await Promise.all(sends);

      const received = new Map<number, { key: string; value: string }[]>();
      for (const m of await readTopic(kafka, topic)) {
        let list = received.get(m.partition);
        if (!list) received.set(m.partition, (list = []));
        list.push({ key: String(m.key), value: String(m.value) });
      }
      const values = [...received.values()].flat().map((m) => m.value);
      expect(values).toHaveLength(sent.length);
      expect(new Set(values).size).toBe(sent.length);
      for (const [partition, list] of received) {
        for (const m of list) expect(partitionOfKey(m.key, 6)).toBe(partition);
        const keysHere = new Set(list.map((m) => m.key));
        expect(list.map((m) => m.value)).toEqual(sent.filter((m) => keysHere.has(m.key)).map((m) => m.value));
      }
      // the load went through every producer
      expect(produceRequests.every((n) => n > 0)).toBe(true);
    } finally {
      counts.stop();
      await Promise.all(producers.map((p) => p.disconnect()));
      await admin.disconnect();
    }
  });
});
