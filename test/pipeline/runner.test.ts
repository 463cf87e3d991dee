import type { Admin, Kafka, Producer } from 'kafkajs';
import { Logger } from '../../core/log';
import { AvroCodec } from '../../platform/avro/codec';
import type { WebhookEvent } from '../../platform/avro/records';
import { BatchingProducer, ProducerRenewingError } from '../../platform/kafka/batching-producer';
import { createKafka, createProducer, ensureTopics } from '../../platform/kafka/client';
import { finishBacklog, runStage, type RunnerDeps, type RunningStage } from '../../pipeline/runtime/run-stage';
import { CHAINED_HEADER, UNCERTAIN_HEADER, type RecordStage } from '../../pipeline/runtime/stage';
import { runWindowedStage } from '../../pipeline/runtime/windowed-runner';
import { uniqueSuffix } from '../support/ids';
import { eventually } from '../support/service';
import { readTopic } from '../../platform/kafka/topic-table';

/**
 * The runners' promises, against a real broker: an input offset is committed only after the
 * outputs of its record are acknowledged; the windowed runner holds at most `maxInFlight`
 * records at once; a member joining mid-stream loses nothing (at-least-once).
 */
type Run = (stage: RecordStage<'WebhookEvent'>, deps: RunnerDeps) => Promise<RunningStage>;
const runners: [string, Run][] = [
  ['the record runner', runStage],
  ['the windowed runner', (stage, deps) => runWindowedStage(stage, deps, { maxInFlight: 4 })],
];

describe.each(runners)('%s', (_, run) => {
  let kafka: Kafka;
  let admin: Admin;
  let producer: Producer;
  let codec: AvroCodec;
  const running: RunningStage[] = [];

  beforeAll(async () => {
    kafka = createKafka(process.env.KAFKA_BROKERS!.split(','), `runner-${uniqueSuffix()}`, { quiet: true });
    admin = kafka.admin();
    await admin.connect();
    producer = createProducer(kafka);
    await producer.connect();
    codec = AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!);
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((r) => r.stop()));
  });
  afterAll(async () => {
    await producer?.disconnect();
    await admin?.disconnect();
  });

  async function topicsFor(partitions: number): Promise<{ input: string; output: string; group: string }> {
    const suffix = uniqueSuffix();
    const input = `runner-in-${suffix}`;
    const output = `runner-out-${suffix}`;
    // the project's topic creation: retries while the broker settles, then waits for every leader
    await ensureTopics(kafka, [{ topic: input, partitions }, { topic: output, partitions: 1 }]);
    await codec.register({ [input]: 'WebhookEvent', [output]: 'WebhookEvent' });
    return { input, output, group: `runner-${suffix}.` };
  }

  const event = (i: number): WebhookEvent => ({
    event_id: `evt_${i}`, tenant_id: 't', ingester_id: 'ing', correlation_id: `cor_${i}`, received_at: Date.now(),
    method: 'POST', query: '', headers: [], content_type: 'application/json', body: Buffer.from(`{"i":${i}}`), source_ip: null, event_type: null, hops: 0,
  });
  async function fill(input: string, n: number, partitions: number): Promise<void> {
    const values = await Promise.all(Array.from({ length: n }, (_, i) => codec.encode(input, 'WebhookEvent', event(i))));
    await producer.send({ topic: input, acks: -1, messages: values.map((value, i) => ({ key: `k${i}`, value, partition: i % partitions })) });
  }
  const copyStage = (input: string, output: string, handle?: (e: WebhookEvent) => Promise<void>): RecordStage<'WebhookEvent'> => ({
    kind: 'record', name: 'copy', input: { topic: input, record: 'WebhookEvent' }, writes: [output],
    async handle(e) {
      await handle?.(e);
      return [{ topic: output, key: e.event_id, record: 'WebhookEvent', value: e }];
    },
  });
  /** The copy stage, noting for each event whether its record was uncertain. */
  const copyNotingUncertain = (input: string, output: string, seen: Map<string, boolean>): RecordStage<'WebhookEvent'> => ({
    kind: 'record', name: 'copy', input: { topic: input, record: 'WebhookEvent' }, writes: [output],
    async handle(e, ctx) {
      seen.set(e.event_id, ctx.uncertain === true);
      return [{ topic: output, key: e.event_id, record: 'WebhookEvent', value: e }];
    },
  });
  async function committed(group: string, input: string): Promise<number> {
    const [offsets] = await admin.fetchOffsets({ groupId: `${group}copy`, topics: [input] });
    return offsets!.partitions.reduce((n, p) => n + Math.max(0, Number(p.offset)), 0);
  }

  it('commits an input offset only once the outputs of its record are acknowledged', async () => {
    const { input, output, group } = await topicsFor(1);
    await fill(input, 5, 1);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const real = new BatchingProducer(producer);
    let held = 0;
    const outputs = { send: async (batch: Parameters<BatchingProducer['send']>[0]) => { held++; await gate; return real.send(batch); } } as unknown as BatchingProducer;
    running.push(await run(copyStage(input, output), { kafka, outputs, codec, log: new Logger('error'), groupPrefix: group }));
    await eventually('the outputs handed to the producer', async () => held > 0 || undefined);
    // well past the 100 ms commit gathering: nothing may be committed while the outputs wait
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await committed(group, input)).toBe(0);
    expect(await readTopic(kafka, output, 2_000)).toEqual([]);
    open();
    await eventually('every offset committed after the outputs', async () => (await committed(group, input)) === 5 || undefined);
    expect((await readTopic(kafka, output)).map((r) => r.key?.toString()).sort()).toEqual([0, 1, 2, 3, 4].map((i) => `evt_${i}`));
  });

  it('produces the same outputs again after a retriable failure, without handling the records again', async () => {
    const { input, output, group } = await topicsFor(2);
    const real = new BatchingProducer(producer);
    let refusing = 0;
    // while armed, produce calls fail as a broker going away does (or the producer being replaced)
    const outputs = {
      send: async (batch: Parameters<BatchingProducer['send']>[0]) => {
        if (refusing > 0) {
          refusing--;
          throw new ProducerRenewingError();
        }
        return real.send(batch);
      },
    } as unknown as BatchingProducer;
    const handled = new Map<string, number>();
    const count = async (e: WebhookEvent) => void handled.set(e.event_id, (handled.get(e.event_id) ?? 0) + 1);
    running.push(await run(copyStage(input, output, count), { kafka, outputs, codec, log: new Logger('error'), groupPrefix: group }));
    // a first record on each partition, so that what follows is new to the group (not uncertain)
    const first = await Promise.all([100, 101].map((i) => codec.encode(input, 'WebhookEvent', event(i))));
    await producer.send({ topic: input, acks: -1, messages: first.map((value, p) => ({ key: `first${p}`, value, partition: p })) });
    await eventually('the first records handled', async () => (await committed(group, input)) === 2 || undefined, 30_000);
    refusing = 1;
    await fill(input, 20, 2);
    await eventually('every input committed', async () => (await committed(group, input)) === 22 || undefined, 30_000);
    expect(refusing).toBe(0);
    expect([...handled.values()].every((n) => n === 1)).toBe(true);
    expect(handled.size).toBe(22);
    const records = (await readTopic(kafka, output)).filter((r) => !['evt_100', 'evt_101'].includes(r.key?.toString() ?? ''));
    const keys = records.map((r) => r.key?.toString());
    expect(keys.length).toBe(20);
    expect(new Set(keys).size).toBe(20);
    // what was produced again says it may be a twin (a refused request may have been written);
    // what went out at the first try does not
    const twins = records.filter((r) => r.headers[UNCERTAIN_HEADER] !== undefined).length;
    expect(twins).toBeGreaterThan(0);
    expect(twins).toBeLessThan(20);
  });

  it('calls uncertain the records a previous owner may have handled, and says so on their outputs', async () => {
    const { input, output, group } = await topicsFor(1);
    // there before the group's first fetch: a previous run may have handled them without committing
    await fill(input, 5, 1);
    const seen = new Map<string, boolean>();
    const stage = copyNotingUncertain(input, output, seen);
    // with the process's admin client the ends are read at the join (without one, at the first fetch)
    running.push(await run(stage, { kafka, admin, outputs: new BatchingProducer(producer), codec, log: new Logger('error'), groupPrefix: group }));
    await eventually('the first five handled', async () => seen.size === 5 || undefined);
    // written after it: new to the group
    const later = await Promise.all([5, 6, 7].map((i) => codec.encode(input, 'WebhookEvent', event(i))));
    await producer.send({ topic: input, acks: -1, messages: later.map((value, i) => ({ key: `k${i + 5}`, value, partition: 0 })) });
    await eventually('all eight handled', async () => seen.size === 8 || undefined);
    expect([...seen].sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((i) => [`evt_${i}`, i < 5]));
    const records = await readTopic(kafka, output);
    const marked = new Map(records.map((r) => [r.key?.toString(), r.headers[UNCERTAIN_HEADER] !== undefined]));
    expect([...marked].sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((i) => [`evt_${i}`, i < 5]));
  });

  it('with the ends read at the join, calls none uncertain of what was written after it', async () => {
    const { input, output, group } = await topicsFor(1);
    const seen = new Map<string, boolean>();
    const stage = copyNotingUncertain(input, output, seen);
    running.push(await run(stage, { kafka, admin, outputs: new BatchingProducer(producer), codec, log: new Logger('error'), groupPrefix: group }));
    // the group has joined (its first fetch on the empty topic is under way) before anything is written
    await eventually('the group joined', async () => ((await admin.describeGroups([`${group}copy`])).groups[0]?.state === 'Stable' ? true : undefined));
    await fill(input, 5, 1);
    await eventually('all five handled', async () => seen.size === 5 || undefined);
    expect([...seen.values()]).toEqual([false, false, false, false, false]);
  });

  it('loses nothing when a second member joins mid-stream and takes partitions over', async () => {
    const { input, output, group } = await topicsFor(4);
    const n = 400;
    await fill(input, n, 4);
    const deps = (): RunnerDeps => ({ kafka, outputs: new BatchingProducer(producer), codec, log: new Logger('error'), groupPrefix: group });
    const slow = () => new Promise<void>((r) => setTimeout(r, 5));
    running.push(await run(copyStage(input, output, slow), deps()));
    await eventually('the first member under way', async () => (await committed(group, input)) > 0 || undefined);
    running.push(await run(copyStage(input, output, slow), deps()));
    await eventually('every input committed', async () => (await committed(group, input)) === n || undefined, 60_000);
    const keys = (await readTopic(kafka, output)).map((r) => r.key?.toString());
    expect(new Set(keys).size).toBe(n);
    // at-least-once: a record handed over mid-batch may be copied twice, never dropped
    expect(keys.length).toBeGreaterThanOrEqual(n);
  }, 90_000);
});

/** A client of its own for a test outside the runners' shared setup; the caller disconnects admin and producer. */
async function clients(): Promise<{ kafka: Kafka; admin: Admin; producer: Producer; codec: AvroCodec }> {
  const kafka = createKafka(process.env.KAFKA_BROKERS!.split(','), `runner-${uniqueSuffix()}`, { quiet: true });
  const admin = kafka.admin();
  await admin.connect();
  const producer = createProducer(kafka);
  await producer.connect();
  return { kafka, admin, producer, codec: AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!) };
}

describe('the windowed runner under back-pressure', () => {
  it('holds at most maxInFlight records at once and finishes them all', async () => {
    const { kafka, admin, producer, codec } = await clients();
    const suffix = uniqueSuffix();
    const input = `window-in-${suffix}`;
    const output = `window-out-${suffix}`;
    let stage: RunningStage | undefined;
    try {
      await ensureTopics(kafka, [{ topic: input, partitions: 2 }, { topic: output, partitions: 1 }]);
      await codec.register({ [input]: 'WebhookEvent', [output]: 'WebhookEvent' });
      const n = 60;
      const values = await Promise.all(Array.from({ length: n }, (_, i) => codec.encode(input, 'WebhookEvent', { event_id: `evt_${i}`, tenant_id: 't', ingester_id: 'ing', correlation_id: 'c', received_at: 0, method: 'POST', query: '', headers: [], content_type: 'application/json', body: Buffer.from('{}'), source_ip: null, event_type: null, hops: 0 })));
      await producer.send({ topic: input, acks: -1, messages: values.map((value, i) => ({ key: `k${i}`, value, partition: i % 2 })) });
      let now = 0;
      let peak = 0;
      let done = 0;
      stage = await runWindowedStage<'WebhookEvent'>({
        kind: 'record', name: 'slow', input: { topic: input, record: 'WebhookEvent' }, writes: [output],
        async handle(e) {
          peak = Math.max(peak, ++now);
          await new Promise((r) => setTimeout(r, 20));
          now--;
          done++;
          return [{ topic: output, key: e.event_id, record: 'WebhookEvent', value: e }];
        },
      }, { kafka, outputs: new BatchingProducer(producer), codec, log: new Logger('error'), groupPrefix: `window-${suffix}.` }, { maxInFlight: 3 });
      await eventually('every record handled', async () => done >= n || undefined, 30_000);
      expect(peak).toBe(3);
      expect(new Set((await readTopic(kafka, output)).map((r) => r.key?.toString())).size).toBe(n);
    } finally {
      await stage?.stop();
      await producer.disconnect();
      await admin.disconnect();
    }
  }, 60_000);
});

describe('a group whose work moved into another stage', () => {
  it('finishes what it had committed on but not handled, up to the ends when it was asked, then leaves', async () => {
    const { kafka, admin, producer, codec } = await clients();
    const suffix = uniqueSuffix();
    const [input, output, group] = [`backlog-in-${suffix}`, `backlog-out-${suffix}`, `backlog-${suffix}.`];
    try {
      await ensureTopics(kafka, [{ topic: input, partitions: 2 }, { topic: output, partitions: 1 }]);
      await codec.register({ [input]: 'WebhookEvent', [output]: 'WebhookEvent' });
      const send = async (ids: number[], headers?: Record<string, string>) => {
        const values = await Promise.all(ids.map((i) => codec.encode(input, 'WebhookEvent', { event_id: `evt_${i}`, tenant_id: 't', ingester_id: 'ing', correlation_id: `c${i}`, received_at: Date.now(), method: 'POST', query: '', headers: [], content_type: null, body: Buffer.from('{}'), source_ip: null, event_type: null, hops: 0 })));
        await producer.send({ topic: input, acks: -1, messages: values.map((value, k) => ({ key: `k${ids[k]}`, value, partition: ids[k]! % 2, headers })) });
      };
      const handled: string[] = [];
      const stage: RecordStage<'WebhookEvent'> = {
        kind: 'record', name: 'legacy', input: { topic: input, record: 'WebhookEvent' }, writes: [output],
        async handle(e) {
          handled.push(e.event_id);
          return [{ topic: output, key: e.event_id, record: 'WebhookEvent', value: e }];
        },
      };
      const deps: RunnerDeps = { kafka, outputs: new BatchingProducer(producer), codec, log: new Logger('error'), groupPrefix: group };
      // a group that never committed has nothing of its own to finish
      expect(await finishBacklog(stage, deps)).toBeUndefined();

      // partition 0 holds evt_0,2,4,6,8 and partition 1 evt_1,3,5,7,9,21; the group had handled 3
      // and 2 of them; evt_21 was handed on by a chain and is already handled
      await send([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      await send([21], { [CHAINED_HEADER]: 'legacy' });
      await admin.setOffsets({ groupId: `${group}legacy`, topic: input, partitions: [{ partition: 0, offset: '3' }, { partition: 1, offset: '2' }] });
      const finishing = await finishBacklog(stage, deps, 200);
      expect(finishing).toBeDefined();
      // written after the ends were read: the work of whatever took the group's place
      await send([10, 11, 12, 13]);
      await eventually('the group gone once its backlog is done', async () => {
        const [g] = (await admin.describeGroups([`${group}legacy`])).groups;
        return (handled.length >= 5 && g!.members.length === 0) || undefined;
      }, 30_000);
      expect(handled.sort()).toEqual(['evt_5', 'evt_6', 'evt_7', 'evt_8', 'evt_9']);
      expect((await readTopic(kafka, output)).map((r) => r.key?.toString()).sort()).toEqual(['evt_5', 'evt_6', 'evt_7', 'evt_8', 'evt_9']);
      // the group is deleted: a later start finds nothing to finish
      const [offsets] = await admin.fetchOffsets({ groupId: `${group}legacy`, topics: [input] });
      expect(offsets!.partitions.map((p) => p.offset)).toEqual(['-1', '-1']);
      expect(await finishBacklog(stage, deps)).toBeUndefined();
      await finishing!.stop();
    } finally {
      await producer.disconnect();
      await admin.disconnect();
    }
  }, 60_000);
});
