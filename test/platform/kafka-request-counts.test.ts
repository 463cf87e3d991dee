import { randomBytes } from 'node:crypto';
import { createKafka, createProducer, ensureTopics } from '../../platform/kafka/client';
import { registry } from '../../platform/metrics/metrics';
import { readTopic } from '../../platform/kafka/topic-table';
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

    // a consumer's requests are the consumer's: reading the topic back fetches it
    const fetchesBefore = await requests('Fetch', 'consumer');
    expect(await readTopic(kafka, topic)).toHaveLength(52);
    expect(await requests('Fetch', 'consumer')).toBeGreaterThan(fetchesBefore);
  });
});
