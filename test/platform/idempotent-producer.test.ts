import { Kafka, logLevel } from 'kafkajs';
import { BatchingProducer } from '../../platform/kafka/batching-producer';
import { createProducer, ensureTopics } from '../../platform/kafka/client';
import { murmur2Partitioner } from '../../platform/kafka/partitioner';
import { readTopic } from '../../platform/kafka/topic-table';
import { uniqueSuffix } from '../support/ids';
import { produceRequestsOnTheWire } from '../support/wire';

describe('the service producer', () => {
  it('is idempotent, and concurrent batched sends arrive once each and in order per partition', async () => {
    const wire = produceRequestsOnTheWire();
    const kafka = new Kafka({ clientId: 'idempotent-test', brokers: process.env.KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING, retry: { initialRetryTime: 100, retries: 8 }, socketFactory: wire.socketFactory });
    const topic = `idempotent-${uniqueSuffix()}`;
    await ensureTopics(kafka, [{ topic, partitions: 3 }]);
    const producer = createProducer(kafka, { createPartitioner: murmur2Partitioner });
    await producer.connect();
    const admin = kafka.admin();
    await admin.connect();
    try {
      const batching = new BatchingProducer(producer, { maxBatch: 50, maxInFlight: 3 });
      const keys = Array.from({ length: 12 }, (_, i) => `key-${i}`);
      const sent = Array.from({ length: 1_500 }, (_, i) => ({ key: keys[i % keys.length]!, value: String(i) }));
      await Promise.all(sent.map((m) => batching.send([{ topic, messages: [m] }])));

      const received = new Map<number, { key: string; value: string }[]>();
      for (const m of await readTopic(kafka, topic)) {
        let list = received.get(m.partition);
        if (!list) received.set(m.partition, (list = []));
        list.push({ key: String(m.key), value: String(m.value) });
      }
      const offsets = await admin.fetchTopicOffsets(topic);
      // once each: the log holds exactly the records sent, each value once
      expect(offsets.reduce((n, o) => n + Number(o.high), 0)).toBe(sent.length);
      const values = [...received.values()].flat().map((m) => m.value);
      expect(new Set(values).size).toBe(sent.length);
      // in order: each partition holds its records in the order they were sent
      expect(received.size).toBeGreaterThan(1);
      for (const list of received.values()) {
        const keysHere = new Set(list.map((m) => m.key));
        expect(list.map((m) => m.value)).toEqual(sent.filter((m) => keysHere.has(m.key)).map((m) => m.value));
      }
      // the broker saw an idempotent producer: a producer id on every batch, acks=all
      expect(producer.isIdempotent()).toBe(true);
      expect(wire.requests.length).toBeGreaterThan(1);
      expect(wire.requests.every((r) => r.acks === -1 && r.producerId >= 0n)).toBe(true);
    } finally {
      await producer.disconnect();
      await admin.disconnect();
    }
  });
});
