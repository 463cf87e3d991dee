import type { Kafka, Producer } from 'kafkajs';
import { AvroCodec } from '../../platform/avro/codec';
import type { DeadLetter, WebhookEvent } from '../../platform/avro/records';
import { createProducer, ensureTopics } from '../../platform/kafka/client';
import { BatchingProducer } from '../../platform/kafka/batching-producer';
import { HANDLER_ATTEMPTS, runStage, type RunnerDeps, type RunningStage } from '../../pipeline/runtime/run-stage';
import { runWindowedStage } from '../../pipeline/runtime/windowed-runner';
import type { RecordStage } from '../../pipeline/runtime/stage';
import { Logger } from '../../core/log';
import { uniqueSuffix } from '../support/ids';
import { destinationWithIngester, sendEvent, waitForStates } from '../support/flow';
import { startReceiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';
import { readTopic } from '../../platform/kafka/topic-table';

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

  /** Bytes that are no record, one on every partition of `topic` under `key`: whatever partition later records land on has one ahead of them. */
  async function garbageOnEveryPartition(topic: string, key: string, label: string): Promise<{ partitions: number[]; garbage: Buffer[] }> {
    const admin = kafka.admin();
    await admin.connect();
    let partitions: number[];
    try {
      const [meta] = (await admin.fetchTopicMetadata({ topics: [topic] })).topics;
      partitions = meta!.partitions.map((p) => p.partitionId);
    } finally {
      await admin.disconnect();
    }
    const garbage = partitions.map((p) => Buffer.from(`${label} ${p} ${uniqueSuffix()}`));
    const producer = createProducer(kafka);
    await producer.connect();
    try {
      await producer.send({ topic, acks: -1, messages: partitions.map((p, i) => ({ partition: p, key, value: garbage[i]! })) });
    } finally {
      await producer.disconnect();
    }
    return { partitions, garbage };
  }

  it('bytes on webhooks.received that do not decode go to events.dlq as they were; the validate stage and the sink go on past them', async () => {
    const ing = await svc.api('POST', `/v1/tenants/${svc.tenantId}/ingesters`, { name: 'behind poison', provider: 'none', config: {} });
    expect(ing.status).toBe(201);
    const { partitions, garbage } = await garbageOnEveryPartition(svc.service.topics.received, `${svc.tenantId}/${ing.body.id}`, 'not avro');
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

  it('bytes on deliveries.completed that do not decode go to events.dlq; the evidence log goes on past them', async () => {
    const r = await startReceiver();
    try {
      const { partitions, garbage } = await garbageOnEveryPartition(svc.service.topics.deliveryCompleted, 'dst_poison', 'not an outcome');
      const { hookUrl } = await destinationWithIngester(svc, `after-garbage-${uniqueSuffix()}`, r.url);
      const events = [];
      for (let i = 0; i < 4; i++) events.push(await sendEvent(hookUrl, { i }));
      // acked: sealed into the log by a sequencer that read past the garbage
      for (const id of events) await waitForStates(svc, id, ['delivered', 'acked']);
      const texts = new Set(garbage.map((g) => g.toString()));
      const letters = await lettersOn(svc.service.topics.eventsDlq, garbage.length, (l) => texts.has(Buffer.from(l.value).toString()));
      expect(letters.map((l) => l.stage)).toEqual(garbage.map(() => 'evidence-sequencer'));
      expect(new Set(letters.map((l) => l.source_partition))).toEqual(new Set(partitions));
      for (const l of letters) expect(l.reason).toMatch(/^the record cannot be decoded as DeliveryOutcome: /);
    } finally {
      await r.close();
    }
  });

  it('bytes on a delay tier that do not decode go to events.dlq; the tier goes on', async () => {
    const tier = svc.service.topics.retryTiers[0]!.topic;
    const { partitions, garbage } = await garbageOnEveryPartition(tier, 'dst_poison', 'not a task');
    const texts = new Set(garbage.map((g) => g.toString()));
    const letters = await lettersOn(svc.service.topics.eventsDlq, garbage.length, (l) => texts.has(Buffer.from(l.value).toString()));
    expect(letters.map((l) => l.stage)).toEqual(garbage.map(() => 'retry'));
    expect(new Set(letters.map((l) => l.source_partition))).toEqual(new Set(partitions));
    for (const l of letters) expect(l.reason).toMatch(/^the record cannot be decoded as DeliveryTask: /);
    // the tier's committed offsets are past the garbage: a restart does not meet it again
    const offsets = await eventually('committed past the garbage', async () => {
      const a = kafka.admin();
      await a.connect();
      try {
        const [t] = await a.fetchOffsets({ groupId: `${svc.config.topicPrefix}hookline.retry`, topics: [tier] });
        const high = await a.fetchTopicOffsets(tier);
        return t!.partitions.every((p) => p.offset === high.find((h) => h.partition === p.partition)!.high) ? t : undefined;
      } finally {
        await a.disconnect();
      }
    });
    expect(offsets.partitions).toHaveLength(partitions.length);
  });

  // the record runner keeps the default failure policy; the windowed runner's stage declares its own
  const runners: [string, (stage: RecordStage<'WebhookEvent'>, deps: RunnerDeps) => Promise<RunningStage>, number | undefined][] = [
    ['the record runner', runStage, undefined],
    ['the windowed runner', (stage, deps) => runWindowedStage(stage, deps, { maxInFlight: 8 }), 4],
  ];
  describe.each(runners)('%s: a record whose handler throws, writes where it must not, or does not decode', (_, run, declared) => {
    const attempts = declared ?? HANDLER_ATTEMPTS;
    const suffix = uniqueSuffix();
    const input = `poison-in-${suffix}`;
    const output = `poison-out-${suffix}`;
    const dlq = `poison-dlq-${suffix}`;
    let producer: Producer;
    let running: RunningStage | undefined;
    const tries = new Map<string, number>();

    beforeAll(async () => {
      await ensureTopics(kafka, [input, output, dlq].map((topic) => ({ topic, partitions: 1 })));
      await codec.register({ [input]: 'WebhookEvent', [output]: 'WebhookEvent', [dlq]: 'DeadLetter' });
      producer = createProducer(kafka);
      await producer.connect();
    });
    afterAll(async () => {
      await running?.stop();
      await producer?.disconnect();
    });

    it(`is tried as often as its stage's policy says (${attempts}), then set aside with the reason; the records behind it pass and the offsets move past it`, async () => {
      const event = (i: number): WebhookEvent => ({
        event_id: `evt_${suffix}_${i}`, tenant_id: svc.tenantId, ingester_id: 'ing_poison', correlation_id: `cor_${i}`, received_at: Date.now(),
        method: 'POST', query: '', headers: [], content_type: 'application/json', body: Buffer.from(`{"i":${i}}`), source_ip: null, event_type: null, hops: 0,
      });
      const values = [...(await Promise.all([0, 1, 2, 3].map((i) => codec.encode(input, 'WebhookEvent', event(i))))), Buffer.from(`not avro ${suffix}`)];
      await producer.send({ topic: input, acks: -1, messages: values.map((value) => ({ key: `${svc.tenantId}/ing_poison`, value, partition: 0 })) });

      const stage: RecordStage<'WebhookEvent'> = {
        kind: 'record',
        name: `poison-${suffix}`,
        input: { topic: input, record: 'WebhookEvent' },
        writes: [output],
        attempts: declared,
        async handle(e) {
          tries.set(e.event_id, (tries.get(e.event_id) ?? 0) + 1);
          if (e.event_id.endsWith('_1')) throw new Error('this record breaks the handler');
          // record 3 goes to a topic the stage does not declare: a defect, set aside like a throw
          return [{ topic: e.event_id.endsWith('_3') ? `${output}-undeclared` : output, key: e.event_id, record: 'WebhookEvent', value: e }];
        },
      };
      const group = `poison-${suffix}.`;
      running = await run(stage, { kafka, outputs: new BatchingProducer(producer), codec, log: new Logger('error'), groupPrefix: group, deadLetterTopic: dlq });

      const letters = await lettersOn(dlq, 3, () => true);
      const passed = await readTopic(kafka, output);
      expect(passed.map((r) => r.key?.toString()).sort()).toEqual([0, 2].map((i) => `evt_${suffix}_${i}`));
      const byOffset = new Map(letters.map((l) => [l.source_offset, l]));
      expect([...byOffset.keys()].sort()).toEqual([1, 3, 4]);
      for (const [offset, l] of byOffset) {
        expect(l.stage).toBe(stage.name);
        expect(l.source_partition).toBe(0);
        expect(l.tenant_id).toBe(svc.tenantId);
        expect(Buffer.from(l.value).equals(values[offset]!)).toBe(true);
      }
      expect(byOffset.get(1)!.event_id).toBe(`evt_${suffix}_1`);
      expect(byOffset.get(1)!.reason).toBe(`stage ${stage.name} failed on this record ${attempts} times: this record breaks the handler`);
      expect(byOffset.get(3)!.reason).toBe(`stage ${stage.name} failed on this record ${attempts} times: stage ${stage.name} wrote to ${output}-undeclared, which it does not declare`);
      expect(byOffset.get(4)!.event_id).toBeNull();
      expect(byOffset.get(4)!.reason).toMatch(/^the record cannot be decoded as WebhookEvent: /);
      expect(tries.get(`evt_${suffix}_1`)).toBe(attempts);
      expect(tries.get(`evt_${suffix}_2`)).toBe(1);

      // the group's committed offset passes the poison records: a restart does not meet them again
      const admin = kafka.admin();
      await admin.connect();
      try {
        await eventually('the committed offset past every record', async () => {
          const [offsets] = await admin.fetchOffsets({ groupId: `${group}${stage.name}`, topics: [input] });
          return offsets!.partitions.find((p) => p.partition === 0)!.offset === '5' || undefined;
        });
      } finally {
        await admin.disconnect();
      }
      await running.stop();
      running = undefined;
    });
  });
});
