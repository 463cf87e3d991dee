import type { Kafka, Producer } from 'kafkajs';
import { AvroCodec } from '../../platform/avro/codec';
import type { DeadLetter, WebhookEvent } from '../../platform/avro/records';
import { createProducer } from '../../platform/kafka/client';
import { BatchingProducer } from '../../platform/kafka/batching-producer';
import { HANDLER_ATTEMPTS, runStage, type RunningStage } from '../../pipeline/runner/run-stage';
import type { RecordStage } from '../../pipeline/runner/stage';
import { Logger } from '../../core/log';
import { uniqueSuffix } from '../support/ids';
import { waitForStates } from '../support/flow';
import { eventually, startTestService, type TestService } from '../support/service';
import { readTopic } from '../support/topic';

/**
 * A record a stage cannot handle does not hold its partition: bytes that do not decode, and a
 * record whose handler keeps throwing, become dead letters with the reason and the original
 * bytes, and the records behind them on the same partition go on.
 */
describe('poison records', () => {
  let svc: TestService;
  let codec: AvroCodec;
  let kafka: Kafka;

  beforeAll(async () => {
    svc = await startTestService();
    codec = AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!);
    kafka = svc.service.kafka;
  });
  afterAll(async () => {
    await svc?.stop();
  });

  async function lettersOn(topic: string, count: number, match: (l: DeadLetter) => boolean): Promise<DeadLetter[]> {
    return eventually(`${count} dead letters on ${topic}`, async () => {
      const letters: DeadLetter[] = [];
      for (const r of await readTopic(kafka, topic)) {
        const l = await codec.decode('DeadLetter', r.value!);
        if (match(l)) letters.push(l);
      }
      return letters.length >= count ? letters : undefined;
    });
  }

  it('bytes on webhooks.received that do not decode go to events.dlq as they were; the validate stage and the sink go on past them', async () => {
    const ing = await svc.api('POST', `/v1/tenants/${svc.tenantId}/ingesters`, { name: 'behind poison', provider: 'none', config: {} });
    expect(ing.status).toBe(201);
    const { partitions } = (await (async () => {
      const admin = kafka.admin();
      await admin.connect();
      try {
        const [meta] = (await admin.fetchTopicMetadata({ topics: [svc.service.topics.received] })).topics;
        return { partitions: meta!.partitions.map((p) => p.partitionId) };
      } finally {
        await admin.disconnect();
      }
    })());
    // garbage on every partition, so whatever partition the webhooks land on has it ahead of them
    const garbage = partitions.map((p) => Buffer.from(`not avro ${p} ${uniqueSuffix()}`));
    const producer = createProducer(kafka);
    await producer.connect();
    try {
      await producer.send({ topic: svc.service.topics.received, acks: -1, messages: partitions.map((p, i) => ({ partition: p, key: `${svc.tenantId}/${ing.body.id}`, value: garbage[i]! })) });
    } finally {
      await producer.disconnect();
    }
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${svc.url}/v1/hooks/${ing.body.id}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ i }) });
      expect(res.status).toBe(202);
      ids.push(((await res.json()) as { event_id: string }).event_id);
    }
    // `received` rows come from the sink reading the same partitions: it skips the bytes too
    for (const id of ids) await waitForStates(svc, id, ['received', 'validated']);

    const texts = new Set(garbage.map((g) => g.toString()));
    const letters = await lettersOn(svc.service.topics.eventsDlq, garbage.length, (l) => texts.has(Buffer.from(l.value).toString()));
    for (const l of letters) {
      expect(l.stage).toBe('validate');
      expect(l.source_topic).toBe(svc.service.topics.received);
      expect(l.reason).toMatch(/^the record cannot be decoded as WebhookEvent: /);
      expect(l.tenant_id).toBe(svc.tenantId);
      expect(l.event_id).toBeNull();
    }
    expect(new Set(letters.map((l) => l.source_partition))).toEqual(new Set(partitions));
  });

  describe('a handler that throws on one record', () => {
    const suffix = uniqueSuffix();
    const input = `poison-in-${suffix}`;
    const output = `poison-out-${suffix}`;
    const dlq = `poison-dlq-${suffix}`;
    let producer: Producer;
    let running: RunningStage | undefined;
    const tries = new Map<string, number>();

    beforeAll(async () => {
      const admin = kafka.admin();
      await admin.connect();
      await admin.createTopics({ waitForLeaders: true, topics: [input, output, dlq].map((topic) => ({ topic, numPartitions: 1, replicationFactor: 1 })) });
      await admin.disconnect();
      await codec.register({ [input]: 'WebhookEvent', [output]: 'WebhookEvent', [dlq]: 'DeadLetter' });
      producer = createProducer(kafka);
      await producer.connect();
    });
    afterAll(async () => {
      await running?.stop();
      await producer?.disconnect();
    });

    it(`is tried ${HANDLER_ATTEMPTS} times, then set aside with the reason; the records behind it pass and the offsets move past it`, async () => {
      const event = (i: number): WebhookEvent => ({
        event_id: `evt_${suffix}_${i}`, tenant_id: svc.tenantId, ingester_id: 'ing_poison', correlation_id: `cor_${i}`, received_at: Date.now(),
        method: 'POST', query: '', headers: [], content_type: 'application/json', body: Buffer.from(`{"i":${i}}`), source_ip: null, event_type: null, hops: 0,
      });
      const values = await Promise.all([0, 1, 2, 3].map((i) => codec.encode(input, 'WebhookEvent', event(i))));
      await producer.send({ topic: input, acks: -1, messages: values.map((value, i) => ({ key: `${svc.tenantId}/ing_poison`, value, partition: 0, headers: { i: String(i) } })) });

      const stage: RecordStage<'WebhookEvent'> = {
        kind: 'record',
        name: `poison-${suffix}`,
        input: { topic: input, record: 'WebhookEvent' },
        async handle(e) {
          tries.set(e.event_id, (tries.get(e.event_id) ?? 0) + 1);
          if (e.event_id.endsWith('_1')) throw new Error('this record breaks the handler');
          return [{ topic: output, key: e.event_id, record: 'WebhookEvent', value: e }];
        },
      };
      const group = `poison-${suffix}.`;
      running = await runStage(stage, {
        kafka, producer, outputs: new BatchingProducer(producer), codec, log: new Logger('error'), groupPrefix: group, deadLetterTopic: dlq,
      });

      const passed = await eventually('three records on the output topic', async () => {
        const recs = await readTopic(kafka, output);
        return recs.length >= 3 ? recs : undefined;
      });
      expect(passed.map((r) => r.key?.toString())).toEqual([0, 2, 3].map((i) => `evt_${suffix}_${i}`));
      const [letter] = await lettersOn(dlq, 1, () => true);
      expect(letter!.stage).toBe(stage.name);
      expect(letter!.event_id).toBe(`evt_${suffix}_1`);
      expect(letter!.tenant_id).toBe(svc.tenantId);
      expect(letter!.reason).toBe(`stage ${stage.name} failed on this record ${HANDLER_ATTEMPTS} times: this record breaks the handler`);
      expect(Buffer.from(letter!.value).equals(values[1]!)).toBe(true);
      expect([letter!.source_partition, letter!.source_offset]).toEqual([0, 1]);
      expect(tries.get(`evt_${suffix}_1`)).toBe(HANDLER_ATTEMPTS);
      expect(tries.get(`evt_${suffix}_2`)).toBe(1);

      // the group's committed offset passes the poison record: a restart does not meet it again
      await running.stop();
      running = undefined;
      const admin = kafka.admin();
      await admin.connect();
      try {
        const [offsets] = await admin.fetchOffsets({ groupId: `${group}${stage.name}`, topics: [input] });
        expect(offsets!.partitions.find((p) => p.partition === 0)!.offset).toBe('4');
      } finally {
        await admin.disconnect();
      }
    });
  });
});
