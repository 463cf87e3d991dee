import type { Admin, Kafka, Producer } from 'kafkajs';
import { Redis } from 'ioredis';
import { Logger } from '../../core/log';
import type { Destination } from '../../core/model';
import { topicNames } from '../../core/topics';
import { AvroCodec } from '../../platform/avro/codec';
import type { DeliveryOutcome, DeliveryTask } from '../../platform/avro/records';
import { BatchingProducer } from '../../platform/kafka/batching-producer';
import { createKafka, createProducer, ensureTopics } from '../../platform/kafka/client';
import type { RecordSender } from '../../platform/kafka/producer-lanes';
import { readTopic } from '../../platform/kafka/topic-table';
import { RedisBatchedMarks } from '../../platform/redis/batched-marks';
import { attemptMarksIn } from '../../pipeline/deliver/attempt-marks';
import { Breakers } from '../../pipeline/deliver/breakers';
import type { HttpSender } from '../../pipeline/deliver/http-sender';
import { deliverStage } from '../../pipeline/deliver/stage';
import type { RunningStage } from '../../pipeline/runtime/consume';
import { runWindowedStage } from '../../pipeline/runtime/windowed-runner';
import { uniqueSuffix } from '../support/ids';
import { eventually } from '../support/service';

/**
 * The deliver stage pipelined, against a real broker and a real Redis: a destination's place
 * frees when its attempt is decided, before its outcome is acknowledged, and a task read again
 * for any reason (a restart after a crash between the two, a rebalance while the old owner still
 * runs, two owners at once as a frozen coordinator leaves them, the same task written twice)
 * finds its attempt claimed or made and is never sent twice; nothing is lost.
 */
const silent = new Logger('error');
const now = new Date().toISOString();
const PLACES = 2;

/**
 * Outputs that are not acknowledged (a broker gone away) until `open` hands them, and every later
 * one, to `then`; `crash` rejects them (the process died).
 */
function stalledOutputs(then: RecordSender): RecordSender & { crash(): void; open(): void; waiting(): number } {
  type Waiting = { args: Parameters<RecordSender['send']>; resolve(): void; reject(err: unknown): void };
  const pending: Waiting[] = [];
  let opened = false;
  return {
    send: (...args) => (opened ? then.send(...args) : new Promise<void>((resolve, reject) => pending.push({ args, resolve, reject }))),
    crash: () => pending.splice(0).forEach((w) => w.reject(new Error('the process died'))),
    open: () => {
      opened = true;
      pending.splice(0).forEach((w) => then.send(...w.args).then(w.resolve, w.reject));
    },
    waiting: () => pending.length,
  };
}

describe('deliver pipelined: places free before outcomes are acknowledged, and no task is sent twice', () => {
  let kafka: Kafka;
  let admin: Admin;
  let producer: Producer;
  let codec: AvroCodec;
  let redis: Redis;
  const running: RunningStage[] = [];
  const breakers = new Breakers({ errorThresholdPercentage: 50, volumeThreshold: 10_000, resetTimeoutMs: 1_000, rollingWindowMs: 10_000 });

  beforeAll(async () => {
    kafka = createKafka(process.env.KAFKA_BROKERS!.split(','), `pipelined-${uniqueSuffix()}`, { quiet: true });
    admin = kafka.admin();
    await admin.connect();
    producer = createProducer(kafka);
    await producer.connect();
    codec = AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!);
    redis = new Redis(process.env.REDIS_URL!);
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((r) => r.stop()));
  });
  afterAll(async () => {
    breakers.shutdown();
    await producer?.disconnect();
    await admin?.disconnect();
    await redis?.quit();
  });

  /** A deployment of its own: topics, a destination, a receiver that counts each delivery's requests. */
  async function setup(n: number) {
    const suffix = uniqueSuffix();
    const topics = topicNames(`pl-${suffix}.`);
    await ensureTopics(kafka, [{ topic: topics.deliveryRequested, partitions: 2 }, { topic: topics.deliveryCompleted, partitions: 1 }]);
    await codec.register({ [topics.deliveryRequested]: 'DeliveryTask', [topics.deliveryCompleted]: 'DeliveryOutcome' });
    const destination: Destination = { kind: 'destination', id: `dst_${suffix}`, tenant_id: 'tenant-pl', name: 'pl', url: 'https://example.test/hook', status: 'active', signing_secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', disabled_reason: null, retry_schedule_ms: [0, 60_000], created_at: now, updated_at: now };
    const sends = new Map<string, number>();
    const sender: HttpSender = {
      async send(req) {
        const id = req.headers['webhook-id']!;
        sends.set(id, (sends.get(id) ?? 0) + 1);
        await new Promise((r) => setTimeout(r, 5));
        return { status: 200, headers: {}, durationMs: 5, body: Buffer.alloc(0) };
      },
      async close() {},
    };
    const marks = new RedisBatchedMarks(redis, `pl-${suffix}:`, { ttlMs: 60_000 });
    const ids = Array.from({ length: n }, (_, i) => `dlv_${suffix}_${i}`);
    const task = (id: string): DeliveryTask => ({ delivery_id: id, event_id: `evt_${id}`, tenant_id: 'tenant-pl', ingester_id: 'ing_1', destination_id: destination.id, correlation_id: 'cor', attempt: 1, not_before: 0, received_at: Date.now(), content_type: 'application/json', body: Buffer.from('{}'), replay_of: null, hops: 0 });
    const write = async (times = 1) => {
      const values = await Promise.all(ids.map((id) => codec.encode(topics.deliveryRequested, 'DeliveryTask', task(id))));
      for (let t = 0; t < times; t++) await producer.send({ topic: topics.deliveryRequested, acks: -1, messages: values.map((value, i) => ({ key: ids[i]!, value, partition: i % 2 })) });
    };
    /** One deliver process: its own claims' owner, the group of the deployment (or another, `group`). */
    const start = async (owner: string, outputs: RecordSender, group = `pl-${suffix}.`) => {
      const stage = deliverStage({ topics, sender, breakers, defaultSchedule: [0, 60_000], destinations: { get: () => destination, disable: async () => undefined }, isRefusal: () => false, marks: attemptMarksIn(marks, { owner, ttlMs: 10_000 }) });
      const r = await runWindowedStage(stage, { kafka, outputs, codec, log: silent, groupPrefix: group }, { maxInFlight: 100, keyOf: (t: DeliveryTask) => t.destination_id, perKey: PLACES });
      running.push(r);
      return r;
    };
    const working = () => new BatchingProducer(producer);
    /** Every delivery has a delivered outcome: the delivery ids that have one. */
    const outcomes = async () => {
      const records = await readTopic(kafka, topics.deliveryCompleted);
      return Promise.all(records.map((r): Promise<DeliveryOutcome> => codec.decode('DeliveryOutcome', r.value!)));
    };
    const allOutcomes = () => eventually('an outcome for every delivery', async () => {
      const got = await outcomes();
      const delivered = new Set(got.filter((o) => o.status === 'delivered').map((o) => o.delivery_id));
      return ids.every((id) => delivered.has(id)) ? got : undefined;
    }, 45_000);
    const twins = () => [...sends.values()].filter((c) => c > 1).length;
    return { ids, sends, write, start, working, outcomes, allOutcomes, twins };
  }

  it('attempts every task in hand while no outcome is acknowledged, and after a crash between the two sends none again and loses none', async () => {
    const n = 20;
    const d = await setup(n);
    await d.write();
    const stalled = stalledOutputs(d.working());
    const first = await d.start('process-1', stalled);
    // two places for the destination, yet every task is attempted: a place frees at its attempt's decision
    await eventually('every task attempted with no outcome acknowledged', async () => (d.sends.size === n ? true : undefined), 30_000);
    expect(stalled.waiting()).toBeGreaterThan(PLACES);
    // the process dies before any outcome is acknowledged: nothing was committed
    const stopping = first.stop();
    stalled.crash();
    await stopping;
    running.splice(running.indexOf(first), 1);
    // a restarted process reads every task again, and writes each attempt's outcome from its mark
    await d.start('process-2', d.working());
    const got = await d.allOutcomes();
    expect(got.every((o) => o.status === 'delivered')).toBe(true);
    expect(d.sends.size).toBe(n);
    expect(d.twins()).toBe(0);
  }, 90_000);

  it('sends none twice when a rebalance hands the tasks of an owner that still runs to a new member', async () => {
    const n = 20;
    const d = await setup(n);
    await d.write();
    const stalled = stalledOutputs(d.working());
    await d.start('process-1', stalled);
    await eventually('every task attempted by the first owner', async () => (d.sends.size === n ? true : undefined), 30_000);
    // a second member joins: the group moves a partition, whose tasks were attempted but not committed
    await d.start('process-2', d.working());
    const moved = await eventually('the new member wrote the outcomes of the tasks it was handed', async () => {
      const got = await d.outcomes();
      return got.length > 0 ? got : undefined;
    }, 45_000);
    expect(moved.length).toBeLessThan(n);
    // the old owner, still running, gets its outputs through at last
    stalled.open();
    const got = await d.allOutcomes();
    expect(got.filter((o) => o.status === 'delivered').length).toBeGreaterThanOrEqual(n);
    expect(d.sends.size).toBe(n);
    expect(d.twins()).toBe(0);
  }, 120_000);

  it('sends none twice when two processes handle the same partitions at once (an old owner not told the group moved on)', async () => {
    const n = 40;
    const d = await setup(n);
    // two groups: each process is sure the partitions are its own, as an owner cut off with a frozen coordinator is
    await Promise.all([d.start('process-1', d.working(), `pl-a-${uniqueSuffix()}.`), d.start('process-2', d.working(), `pl-b-${uniqueSuffix()}.`)]);
    await d.write();
    const got = await d.allOutcomes();
    expect(got.length).toBeGreaterThanOrEqual(n);
    expect(d.sends.size).toBe(n);
    expect(d.twins()).toBe(0);
  }, 90_000);

  it('sends none twice when the same task is written twice (a producer\'s retry)', async () => {
    const n = 20;
    const d = await setup(n);
    await d.start('process-1', d.working());
    await d.write(2);
    await d.allOutcomes();
    await eventually('both copies handled', async () => ((await d.allOutcomes()).length >= 2 * n ? true : undefined), 30_000);
    expect(d.sends.size).toBe(n);
    expect(d.twins()).toBe(0);
  }, 90_000);
});
