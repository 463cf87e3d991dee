import { randomBytes } from 'node:crypto';
import { createKafka, createProducer, ensureTopics } from '../../platform/kafka/client';
import { registry } from '../../platform/metrics/metrics';
import { parseExposition, valueOf } from '../support/metrics';

const requests = async (api: string, client: string) => valueOf(parseExposition(await registry.metrics()), 'hookline_kafka_requests_total', { api, client });

describe('Kafka requests counted per API and client', () => {
  it('counts each produce request once, whatever the records it carries, and the admin and consumer requests apart', async () => {
    const kafka = createKafka(process.env.KAFKA_BROKERS!.split(','), 'request-count-test', { quiet: true });
    const topic = `request-counts-${randomBytes(4).toString('hex')}`;
    const metadataBefore = await requests('Metadata', 'admin');
    await ensureTopics(kafka, [{ topic, partitions: 1 }]);
    expect(await requests('Metadata', 'admin')).toBeGreaterThan(metadataBefore);

    const producer = createProducer(kafka);
    await producer.connect();
    try {
      const before = await requests('Produce', 'producer');
      // one request of 50 records, then two of one record each
      await producer.send({ topic, acks: -1, messages: Array.from({ length: 50 }, (_, i) => ({ key: String(i), value: 'x' })) });
      expect(await requests('Produce', 'producer')).toBe(before + 1);
      await producer.send({ topic, acks: -1, messages: [{ value: 'a' }] });
      await producer.send({ topic, acks: -1, messages: [{ value: 'b' }] });
      expect(await requests('Produce', 'producer')).toBe(before + 3);
      // a producer's requests are not counted as another client's
      expect(await requests('Produce', 'consumer')).toBe(0);
    } finally {
      await producer.disconnect();
    }

    const consumer = kafka.consumer({ groupId: `request-counts-${randomBytes(4).toString('hex')}` });
    const fetchesBefore = await requests('Fetch', 'consumer');
    await consumer.connect();
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      let seen = 0;
      const all = new Promise<void>((resolve) => {
        void consumer.run({
          eachMessage: async () => {
            if (++seen === 52) resolve();
          },
        });
      });
      await all;
      expect(await requests('Fetch', 'consumer')).toBeGreaterThan(fetchesBefore);
      expect(await requests('JoinGroup', 'consumer')).toBeGreaterThan(0);
    } finally {
      await consumer.disconnect();
    }
  });
});
