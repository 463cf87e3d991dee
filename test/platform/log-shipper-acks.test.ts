import { Kafka, logLevel } from 'kafkajs';
import type { LogRecord } from '../../core/log';
import { AvroCodec } from '../../platform/avro/codec';
import { ensureTopics } from '../../platform/kafka/client';
import { LogShipper } from '../../platform/kafka/log-shipper';
import { uniqueSuffix } from '../support/ids';
import { produceRequestsOnTheWire } from '../support/wire';

describe('log shipping', () => {
  it('writes the logs topic with acks=all', async () => {
    const wire = produceRequestsOnTheWire();
    const kafka = new Kafka({ clientId: 'log-acks-test', brokers: process.env.KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING, socketFactory: wire.socketFactory });
    const topic = `logs-acks-${uniqueSuffix()}`;
    await ensureTopics(kafka, [{ topic, partitions: 1 }]);
    const codec = AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!);
    await codec.register({ [topic]: 'LogEntry' });
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    const admin = kafka.admin();
    await admin.connect();
    try {
      const shipper = new LogShipper(producer, codec, topic);
      const line: LogRecord = { ts: new Date().toISOString(), level: 'info', msg: 'shipped', tenant_id: 't1' };
      shipper.sink(line);
      shipper.sink({ ...line, msg: 'shipped again' });
      await shipper.flush();
      expect(shipper.dropped).toBe(0);
      const [offsets] = await admin.fetchTopicOffsets(topic);
      expect(offsets?.high).toBe('2');
      // every produce request the broker received asked for all in-sync replicas (-1)
      expect(wire.requests.length).toBeGreaterThan(0);
      expect(wire.requests.every((r) => r.acks === -1)).toBe(true);
    } finally {
      await producer.disconnect();
      await admin.disconnect();
    }
  });
});
