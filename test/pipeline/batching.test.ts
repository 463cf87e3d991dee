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

describe('the Hook URL\'s producer', () => {
  it('sends at once when nothing is in flight, gathers only behind a request that is out, and settles each send after acks=all', async () => {
    const kafka = createKafka(process.env.KAFKA_BROKERS!.split(','), 'batching-test');
    const topic = `batching-idle-${uniqueSuffix()}`;
    await ensureTopics(kafka, [{ topic, partitions: 2 }]);
    const producer = createProducer(kafka);
    await producer.connect();
    const requests: { records: number; acks: number | undefined; answeredAt?: number }[] = [];
    let hold: Promise<void> | undefined;
    const real = producer.sendBatch.bind(producer);
    producer.sendBatch = async (batch) => {
      const r = { records: batch.topicMessages!.reduce((n, t) => n + t.messages.length, 0), acks: batch.acks };
      requests.push(r);
      await hold;
      const answer = await real(batch);
      (r as { answeredAt?: number }).answeredAt = performance.now();
      return answer;
    };
    try {
      const batching = new BatchingProducer(producer);
      // idle: the one record goes out within a turn of the event loop, no linger
      const settledAt: number[] = [];
      const one = batching.send([{ topic, messages: [{ key: 'a', value: 'one' }] }]).then(() => settledAt.push(performance.now()));
      await new Promise((r) => setImmediate(r));
      expect(requests).toHaveLength(1);
      await one;
      expect(requests[0]).toMatchObject({ records: 1, acks: -1 });
      // its caller heard of it only once the broker had answered (acks=all)
      expect(settledAt[0]!).toBeGreaterThanOrEqual(requests[0]!.answeredAt!);

      // under load: while a request is out, the sends of many turns gather for the next one
      let open!: () => void;
      hold = new Promise((r) => (open = r));
      const first = batching.send([{ topic, messages: [{ key: 'b', value: 'first' }] }]);
      await new Promise((r) => setImmediate(r));
      const behind: Promise<void>[] = [];
      for (let i = 0; i < 50; i++) {
        behind.push(batching.send([{ topic, messages: [{ key: `k${i}`, value: `m${i}` }] }]));
        await new Promise((r) => setImmediate(r));
      }
      expect(requests).toHaveLength(2);
      hold = undefined;
      open();
      await Promise.all([first, ...behind]);
      expect(requests.map((r) => r.records)).toEqual([1, 1, 50]);
      expect(requests.every((r) => r.acks === -1)).toBe(true);
    } finally {
      await producer.disconnect();
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
