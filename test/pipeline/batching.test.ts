import { createKafka, createProducer, ensureTopics } from '../../platform/kafka/client';
import { BatchingProducer } from '../../platform/kafka/batching-producer';
import { deliveryRow } from '../../pipeline/sink/rows';
import type { DeliveryOutcome } from '../../platform/avro/records';
import { uniqueSuffix } from '../support/ids';
import { startTestService, type TestService } from '../support/service';

describe('micro-batched ingestion sends', () => {
  it('gathers concurrent sends into one Kafka request, each caller settled by it', async () => {
    const kafka = createKafka(process.env.KAFKA_BROKERS!.split(','), 'batching-test');
    const topic = `batching-${uniqueSuffix()}`;
    await ensureTopics(kafka, [{ topic, partitions: 2 }]);
    // idempotent, as the service's producers are: the counts below are exact only if a request
    // the client retries (a leader not yet known for a new topic) is not written twice
    const producer = createProducer(kafka);
    // one admin, disconnected at the end: an admin never connected still opens broker connections
    // when used, and nothing closes them
    const admin = kafka.admin();
    await Promise.all([producer.connect(), admin.connect()]);
    let requests = 0;
    const real = producer.sendBatch.bind(producer);
    producer.sendBatch = (batch) => {
      requests++;
      return real(batch);
    };
    try {
      const batching = new BatchingProducer(producer);
      await Promise.all(Array.from({ length: 200 }, (_, i) => batching.send([{ topic, messages: [{ key: String(i), value: `m${i}` }] }])));
      expect(requests).toBe(1);
      const offsets = await admin.fetchTopicOffsets(topic);
      expect(offsets.reduce((n, o) => n + Number(o.high), 0)).toBe(200);
      // beyond maxBatch a request goes out at once and the rest follow
      const small = new BatchingProducer(producer, { maxBatch: 50 });
      requests = 0;
      await Promise.all(Array.from({ length: 120 }, (_, i) => small.send([{ topic, messages: [{ value: `n${i}` }] }])));
      expect(requests).toBe(3);
      // a record the broker refuses for its size fails alone: the records sent beside it are stored
      const sizes = new BatchingProducer(producer);
      const before = (await admin.fetchTopicOffsets(topic)).reduce((n, o) => n + Number(o.high), 0);
      const results = await Promise.allSettled([
        ...Array.from({ length: 20 }, (_, i) => sizes.send([{ topic, messages: [{ key: String(i), value: `s${i}` }] }])),
        sizes.send([{ topic, messages: [{ key: 'big', value: Buffer.alloc(1_200_000, 0x61) }] }]),
        ...Array.from({ length: 20 }, (_, i) => sizes.send([{ topic, messages: [{ key: String(i), value: `t${i}` }] }])),
      ]);
      expect(results.map((r) => r.status)).toEqual([...Array(20).fill('fulfilled'), 'rejected', ...Array(20).fill('fulfilled')]);
      const after = (await admin.fetchTopicOffsets(topic)).reduce((n, o) => n + Number(o.high), 0);
      expect(after - before).toBe(40);
    } finally {
      await Promise.all([producer.disconnect(), admin.disconnect()]);
    }
  });
});

describe('ClickHouse sink tables', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('keep one row when the same record is written twice (a re-consumed batch)', async () => {
    const outcome: DeliveryOutcome = {
      delivery_id: 'dlv_01m8000000000000000000dup',
      event_id: 'evt_01m8000000000000000000dup',
      tenant_id: svc.tenantId,
      destination_id: 'dst_x',
      correlation_id: 'c',
      attempt_number: 1,
      status: 'delivered',
      response_code: 200,
      attempted_at: Date.now(),
      duration_ms: 3,
      error_message: null,
      body_sha256: 'ab',
      next_attempt_at: null,
    };
    const table = `${svc.config.clickhouseDatabase}.deliveries`;
    await svc.clickhouse.insert({ table, values: [deliveryRow(outcome)], format: 'JSONEachRow' });
    await svc.clickhouse.insert({ table, values: [deliveryRow(outcome)], format: 'JSONEachRow' });
    const rs = await svc.clickhouse.query({ query: `SELECT toUInt32(count()) AS n FROM ${table} FINAL WHERE delivery_id = {d:String}`, query_params: { d: outcome.delivery_id }, format: 'JSONEachRow' });
    expect(await rs.json()).toEqual([{ n: 1 }]);
    const listed = await svc.api('GET', `/v1/tenants/${svc.tenantId}/deliveries`);
    expect(listed.body.deliveries.filter((d: { id: string }) => d.id === outcome.delivery_id)).toHaveLength(1);
  });
});
