import { Redis } from 'ioredis';
import { Logger } from '../../core/log';
import type { Destination } from '../../core/model';
import { topicNames } from '../../core/topics';
import type { DeliveryOutcome, DeliveryTask } from '../../platform/avro/records';
import { RedisBatchedMarks } from '../../platform/redis/batched-marks';
import { attemptMarksIn } from '../../pipeline/deliver/attempt-marks';
import { Breakers } from '../../pipeline/deliver/breakers';
import type { HttpSender, SendRequest } from '../../pipeline/deliver/http-sender';
import { deliverStage } from '../../pipeline/deliver/stage';
import type { AnyOutput, StageContext } from '../../pipeline/runtime/stage';
import { uniqueSuffix } from '../support/ids';

/**
 * A delivery task read again (for any reason: the same consumer fetching again, a rebalance, a
 * coordinator move, a restart) whose attempt had been claimed or made: the deliver stage with
 * claims and marks in a real Redis writes that attempt's outcome again and does not send the
 * webhook again, whether or not the runner knew the record to be uncertain.
 */
const topics = topicNames('m.');
const silent = new Logger('error');
const now = new Date().toISOString();
const destination: Destination = { kind: 'destination', id: 'dst_m', tenant_id: 'tenant-m', name: 'm', url: 'https://example.test/hook', status: 'active', signing_secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', disabled_reason: null, retry_schedule_ms: [0, 60_000], created_at: now, updated_at: now };
// a task read again is the same record: the same receipt time
const RECEIVED_AT = Date.now();
const task = (id: string, attempt = 1): DeliveryTask => ({ delivery_id: id, event_id: `evt_${id}`, tenant_id: 'tenant-m', ingester_id: 'ing_1', destination_id: 'dst_m', correlation_id: 'cor', attempt, not_before: Date.now(), received_at: RECEIVED_AT, content_type: 'application/json', body: Buffer.from('{}'), replay_of: null, hops: 0 });
const ctx = (uncertain: boolean): StageContext => ({ log: silent, position: { partition: 0, offset: '1' }, source: { topic: topics.deliveryRequested, key: Buffer.from('k'), value: Buffer.alloc(0) }, configVersion: 0n, uncertain });
const outcomeOf = (outs: AnyOutput[]) => outs.find((o) => o.topic === topics.deliveryCompleted)!.value as DeliveryOutcome;

describe('attempt marks', () => {
  let redis: Redis;
  let marks: RedisBatchedMarks;
  let breakers: Breakers;
  const sent: SendRequest[] = [];
  let statuses: number[] = [];
  const sender: HttpSender = {
    async send(req) {
      sent.push(req);
      return { status: statuses.shift() ?? 200, headers: {}, durationMs: 7, body: Buffer.from('answer') };
    },
    async close() {},
  };

  beforeAll(() => {
    redis = new Redis(process.env.REDIS_URL!);
    marks = new RedisBatchedMarks(redis, `marks-test-${uniqueSuffix()}:`, { ttlMs: 60_000 });
    breakers = new Breakers({ errorThresholdPercentage: 50, volumeThreshold: 10_000, resetTimeoutMs: 1_000, rollingWindowMs: 10_000 });
  });
  afterAll(async () => {
    breakers.shutdown();
    await redis.quit();
  });
  beforeEach(() => {
    sent.length = 0;
  });

  const OWNER = { owner: 'test-process-a', ttlMs: 10_000 };
  const stage = (owner = OWNER, over: Partial<Parameters<typeof deliverStage>[0]> = {}) => deliverStage({ topics, sender, breakers, defaultSchedule: [0, 60_000], destinations: { get: () => destination, disable: async () => undefined }, isRefusal: () => false, marks: attemptMarksIn(marks, owner), ...over });

  it('writes a finished attempt\'s outcome again instead of sending it again when its task is read again', async () => {
    const id = `dlv_${uniqueSuffix()}`;
    statuses = [503];
    const first = await stage().handle(task(id), ctx(false));
    await marks.flush();
    // read again without the runner knowing (fetched again in the same generation), by a fresh process
    const again = await stage({ owner: 'test-process-b', ttlMs: 10_000 }).handle(task(id), ctx(false));
    expect(sent).toHaveLength(1);
    const [a, b] = [outcomeOf(first), outcomeOf(again)];
    // the same outcome, but for when the retry is due (the schedule's jitter is drawn again)
    expect({ ...b, next_attempt_at: 0 }).toEqual({ ...a, next_attempt_at: 0 });
    expect(b.next_attempt_at).toBeGreaterThan(Date.now());
    expect(a).toMatchObject({ status: 'retrying', response_code: 503, response_body: 'answer', duration_ms: 7 });
    // its retry is the same task as the first time: attempt 2, waiting on a delay topic
    const waits = (outs: AnyOutput[]) => outs.filter((o) => o.record === 'DeliveryTask').map((o) => (o.value as DeliveryTask).attempt);
    expect(waits(again)).toEqual(waits(first));
    expect(waits(again)).toEqual([2]);
    // the next attempt number was never made: it is sent
    await stage().handle(task(id, 2), ctx(true));
    expect(sent).toHaveLength(2);
  });

  it('lets a twin of a running attempt (the same task written twice) wait for it instead of sending it again', async () => {
    const id = `dlv_${uniqueSuffix()}`;
    const s = stage();
    const [first, twin] = await Promise.all([s.handle(task(id), ctx(false)), s.handle(task(id), ctx(true))]);
    expect(sent).toHaveLength(1);
    expect(outcomeOf(twin).status).toBe(outcomeOf(first).status);
    // and one read right after, before its mark has gone to Redis
    await s.handle(task(id), ctx(true));
    expect(sent).toHaveLength(1);
  });

  it('lets a task whose attempt another process is making wait for that attempt\'s mark, without its place', async () => {
    const id = `dlv_${uniqueSuffix()}`;
    let answer!: () => void;
    const slow: HttpSender = { async send(req) { sent.push(req); await new Promise<void>((r) => (answer = r)); return { status: 200, headers: {}, durationMs: 300, body: Buffer.alloc(0) }; }, async close() {} };
    const first = stage(OWNER, { sender: slow }).handle(task(id), ctx(false));
    await new Promise((r) => setTimeout(r, 100));
    let freed = false;
    const other = stage({ owner: 'test-process-b', ttlMs: 10_000 }).handle(task(id), { ...ctx(false), releasePlace: () => (freed = true) });
    await new Promise((r) => setTimeout(r, 300));
    expect(freed).toBe(true);
    answer();
    const [a, b] = await Promise.all([first, other]);
    expect(sent).toHaveLength(1);
    expect(outcomeOf(b)).toMatchObject({ status: 'delivered', response_code: 200, attempted_at: outcomeOf(a).attempted_at });
  });

  it('takes over a claim whose process died once it expires, and sends', async () => {
    const id = `dlv_${uniqueSuffix()}`;
    // a process that claimed the attempt and died before it could mark it
    expect(await attemptMarksIn(marks, { owner: 'test-process-dead', ttlMs: 400 }).claim(task(id))).toEqual({ kind: 'taken' });
    const started = Date.now();
    await stage().handle(task(id), ctx(false));
    expect(sent).toHaveLength(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  });

  it('lets go of the claim of an attempt that sent nothing, so its next turn is sent', async () => {
    const id = `dlv_${uniqueSuffix()}`;
    const open = new Breakers({ errorThresholdPercentage: 1, volumeThreshold: 1, resetTimeoutMs: 60_000, rollingWindowMs: 10_000 });
    try {
      statuses = [503];
      await stage(OWNER, { breakers: open }).handle(task(`dlv_${uniqueSuffix()}`), ctx(false));
      expect(sent).toHaveLength(1);
      // the breaker is open: nothing goes out, and the task waits with its attempt number
      const waits = await stage(OWNER, { breakers: open }).handle(task(id), ctx(false));
      expect(sent).toHaveLength(1);
      expect(waits.find((o) => o.record === 'DeliveryTask')?.value).toMatchObject({ delivery_id: id, attempt: 1 });
      await marks.flush();
      // another process's turn of the same attempt, once the breaker there lets it out
      await stage({ owner: 'test-process-b', ttlMs: 10_000 }).handle(task(id), ctx(false));
      expect(sent).toHaveLength(2);
    } finally {
      open.shutdown();
    }
  });

  it('claims and marks in batches: one round trip of claims and one of marks for many attempts', async () => {
    const pipelines = jest.spyOn(redis, 'pipeline');
    const ids = Array.from({ length: 50 }, () => `dlv_${uniqueSuffix()}`);
    await Promise.all(ids.map((id) => stage().handle(task(id), ctx(false))));
    await marks.flush();
    expect(pipelines).toHaveBeenCalledTimes(2);
    pipelines.mockRestore();
    expect(sent).toHaveLength(50);
    const recalled = await Promise.all(ids.map((id) => attemptMarksIn(marks, OWNER).recall(task(id))));
    expect(recalled.every((r) => r?.result.kind === 'response')).toBe(true);
  });

  it('attempts again when Redis does not answer in time', async () => {
    const never = () => new Promise(() => undefined);
    const slow = new RedisBatchedMarks({ status: 'ready', get: never, pipeline: () => ({ call() {}, set() {}, del() {}, exec: never }) } as unknown as Redis, 'x:', { ttlMs: 1_000, readTimeoutMs: 50 });
    const id = `dlv_${uniqueSuffix()}`;
    const s = deliverStage({ topics, sender, breakers, defaultSchedule: [0], destinations: { get: () => destination, disable: async () => undefined }, isRefusal: () => false, marks: attemptMarksIn(slow, OWNER) });
    const started = Date.now();
    await s.handle(task(id), ctx(true));
    expect(sent).toHaveLength(1);
    // the claim's answer was waited for no longer than the read timeout
    expect(Date.now() - started).toBeLessThan(1_000);
    // its mark cannot be written either: the batch waits, and nothing is thrown
    void slow.flush();
  });
});
