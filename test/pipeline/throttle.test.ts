import { Redis } from 'ioredis';
import type { Admin, Producer } from 'kafkajs';
import { newId } from '../../core/ids';
import { AvroCodec } from '../../platform/avro/codec';
import { createProducer } from '../../platform/kafka/client';
import { joiningEnv, spawnService, stopService, type ServiceProcess, waitForGroupMembers } from '../support/service-process';
import { randomEvidenceKey } from '../support/keyring';
import { spawnScript, type Spawned } from '../support/process';
import type { Destination } from '../../core/model';
import { Pacer, type SendSlots } from '../../pipeline/deliver/pace';
import { CONFIG_VERSION_HEADER } from '../../pipeline/runtime/config-version';
import type { DeliveryTask } from '../../platform/avro/records';
import { RedisSendSlots } from '../../platform/redis/send-slots';
import { uniqueSuffix } from '../support/ids';
import { receiverPool } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';
import { destinationWithIngester } from '../support/flow';

/** The most requests in any window of `windowMs` (windows starting at each request). */
function maxInWindow(times: number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  let j = 0;
  for (let i = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! >= windowMs) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

/**
 * Settings every deliver process of the test shares. A record names the configuration it was
 * decided with, and a deliver process holds it until it has that configuration: long enough here
 * that a loaded machine never sends a delivery before its process knows the destination's limit.
 */
const shared = { RETRY_TIERS: '1s,5s', DELIVERY_RATE_WAIT_MS: '2000', CONFIG_VERSION_WAIT_MS: '30000' };

/**
 * A destination's limit across two deliver processes: this test's service runs everything but
 * deliver and retry, and two more processes run those, one partition of deliveries.requested
 * each; the limited destination's deliveries are put on both partitions, so both send to it.
 */
describe('rate limit per destination across deliver processes', () => {
  let svc: TestService;
  const deliverers: ServiceProcess[] = [];
  let producer: Producer;
  let admin: Admin;
  const codec = AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!);
  const receivers = receiverPool();
  // the limited destination's receiver is a process of its own (the benchmark's): arrivals are
  // stamped on an idle event loop, not on this busy one's
  let counter: Spawned;
  let counterBase = '';
  const control = async <T>(method: string, pathname: string): Promise<T> => (await (await fetch(`${counterBase}${pathname}`, { method })).json()) as T;

  beforeAll(async () => {
    counter = spawnScript('bench/receiver.ts', [], process.env);
    counterBase = (await counter.waitForOutput(/receiver listening (\S+)/))[1]!;
    const key = randomEvidenceKey();
    svc = await startTestService({ ...shared, STAGES: 'api,validate,evidence,sink', EVIDENCE_SIGNING_KEY: key });
    for (let i = 0; i < 2; i++) {
      deliverers.push(spawnService(joiningEnv(svc.config, `deliverer-${i}`, { ...shared, STAGES: 'deliver,retry', EVIDENCE_SIGNING_KEY: key })));
    }
    producer = createProducer(svc.service.kafka);
    admin = svc.service.kafka.admin();
    await Promise.all([producer.connect(), admin.connect(), codec.register({ [svc.service.topics.deliveryRequested]: 'DeliveryTask' }), ...deliverers.map((d) => d.waitForOutput(/"msg":"service ready"/, 90_000))]);
    await waitForGroupMembers(admin, svc.config.topicPrefix, 'deliver', 2);
  }, 150_000);
  afterAll(async () => {
    await Promise.all([...deliverers.map((d) => stopService(d)), producer?.disconnect(), admin?.disconnect()]);
    await Promise.all([svc?.stop(), receivers.closeAll()]);
    counter?.child.kill();
  });

  /**
   * Puts `count` deliveries of the destination on the two partitions in turn, decided with the
   * configuration this service has: a deliver process applies it before deciding on them.
   */
  async function produceOnBoth(destinationId: string, ingesterId: string, count: number, run: string): Promise<void> {
    const headers = { [CONFIG_VERSION_HEADER]: svc.service.store.version.toString() };
    const now = Date.now();
    const messages = await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const task: DeliveryTask = { delivery_id: newId('delivery'), event_id: newId('event'), tenant_id: svc.tenantId, ingester_id: ingesterId, destination_id: destinationId, correlation_id: 'cor_throttle', attempt: 1, not_before: now, received_at: now, content_type: 'application/json', body: Buffer.from(JSON.stringify({ r: run, s: i, t: now })), replay_of: null, hops: 0 };
        return { partition: i % 2, key: destinationId, value: await codec.encode(svc.service.topics.deliveryRequested, 'DeliveryTask', task), headers };
      }),
    );
    await producer.send({ topic: svc.service.topics.deliveryRequested, acks: -1, messages });
  }

  it('delivers a destination limited to 20/s no faster than that from both processes, while an unthrottled one gets its events at once', async () => {
    const freeReceiver = await receivers.next();
    const limited = await destinationWithIngester(svc, 'limited', `${counterBase}/hook`);
    const run = `run${Date.now()}`;
    await control('POST', `/__bench/reset?run=${run}`);
    const free = await destinationWithIngester(svc, 'free', freeReceiver.url);
    const store = svc.service.store;
    expect(await store.update({ ...store.get('destination', svc.tenantId, limited.destinationId)!, rate_limit_per_s: 20 })).toBe(true);

    const n = 200;
    const rate = 20;
    // the unthrottled destination's deliveries queue behind the limited ones, on the same partitions
    await produceOnBoth(limited.destinationId, limited.ingesterId, n, run);
    await produceOnBoth(free.destinationId, free.ingesterId, n, run);
    const freeDone = (await freeReceiver.waitForRequests(n, 20_000)).at(-1)!.at;
    await eventually('every limited delivery arrived', async () => ((await control<{ distinct: number }>('GET', '/__bench/stats')).distinct >= n ? true : undefined), 45_000, 200);
    const times = (await control<{ arrivals: number[] }>('GET', '/__bench/detail')).arrivals;
    // every delivery, from both processes
    expect(times).toHaveLength(n);
    // both processes read the limited deliveries (each owns one of the two partitions they were put
    // on, the group was Stable with two members) and reserved their slots in the one Redis; which
    // process makes an attempt depends on the slot: one too far ahead waits on the delay topics and
    // comes back keyed by destination, to one partition, so a process may end up making none
    expect(deliverers.some((d) => d.stdout().includes(limited.destinationId))).toBe(true);
    // when the attempts started, as their outcome records have it (after the wait for the slot):
    // what the limit governs, read in each deliver process right before its request
    const started = await eventually('every attempt recorded', async () => {
      const rs = await svc.clickhouse.query({ query: `SELECT toUnixTimestamp64Milli(attempted_at) AS t FROM ${svc.config.clickhouseDatabase}.deliveries FINAL WHERE destination_id = {d:String}`, query_params: { d: limited.destinationId }, format: 'JSONEachRow' });
      const rows = (await rs.json<{ t: string | number }>()).map((r) => Number(r.t));
      return rows.length >= n ? rows : undefined;
    }, 20_000);
    expect(started).toHaveLength(n);
    // a send may go up to 100 ms after its slot (lateAllowance): a second holds at most the slots
    // of 1.1 s, and the first of them
    expect(maxInWindow(started, 1_000)).toBeLessThanOrEqual(Math.ceil(rate * 1.1) + 1);
    // slots are an interval apart: the attempts take the whole ~10 s the limit asks for
    const span = (at: number[]) => Math.max(...at) - Math.min(...at);
    expect(span(started)).toBeGreaterThanOrEqual(((n - 1) / rate) * 1_000 - 250);
    // as the receiver got them: between an attempt's start and its arrival lie the deliver
    // process's event loop, a connection and the network, which a loaded machine stretches by
    // hundreds of ms now and then. Loose bounds here, but ones that a limit kept by each process
    // apart (40/s from the two, done in ~5 s) or none at all (~1 s) clearly break
    expect(maxInWindow(times, 2_000)).toBeLessThan(2 * rate * 1.5);
    expect(span(times)).toBeGreaterThanOrEqual(((n - 1) / rate) * 1_000 * 0.75);
    // the limit costs the unthrottled destination nothing: queued behind the limited deliveries,
    // it was done well before them (they need ~10 s at their rate)
    expect(freeDone).toBeLessThan([...times].sort((a, b) => a - b)[(n * 3) / 4]!);
    await new Promise((r) => setTimeout(r, 500));
    expect((await control<{ total: number }>('GET', '/__bench/stats')).total).toBe(n);
  }, 90_000);
});

describe('send slots shared by deliver processes (real Redis)', () => {
  const prefix = `t${uniqueSuffix()}.`;
  let a: Redis;
  let b: Redis;

  beforeAll(() => {
    a = new Redis(process.env.REDIS_URL!);
    b = new Redis(process.env.REDIS_URL!);
  });
  afterAll(async () => {
    await Promise.all([a.quit(), b.quit()]);
  });

  it('spaces the slots of two processes by the limit between them', async () => {
    const one = new RedisSendSlots(a, prefix);
    const two = new RedisSendSlots(b, prefix);
    const take = async (slots: RedisSendSlots) => {
      const at: number[] = [];
      await Promise.all(Array.from({ length: 40 }, async () => at.push((await slots.reserveSlot('dst_shared', 50)).slotMs)));
      return at;
    };
    const all = (await Promise.all([take(one), take(two)])).flat().sort((x, y) => x - y);
    expect(all).toHaveLength(80);
    // 50/s: 20 ms apart (Redis's clock, µs), whichever connection took them
    for (let i = 1; i < all.length; i++) expect(all[i]! - all[i - 1]!).toBeCloseTo(20, 2);
    expect(maxInWindow(all, 1_000)).toBeLessThanOrEqual(51);
    // another destination's slots are its own: its first is now
    const other = await one.reserveSlot('dst_other', 50);
    expect(other.slotMs).toBe(other.nowMs);
  });
});

describe('pacing decisions', () => {
  const destination = { id: 'dst_1', tenant_id: 'ten_1', status: 'active', rate_limit_per_s: 10 } as Destination & { rate_limit_per_s: number };
  const task = { destination_id: 'dst_1', tenant_id: 'ten_1', not_before: 0, slot_at: null } as unknown as DeliveryTask;
  const options = { shortWaitMs: 1_000, lateMs: 1_000, unreachableWaitMs: 1_000 };

  it('waits in the delay topics for a far slot, coming back before it, and keeps the slot it holds', async () => {
    let calls = 0;
    const slots: SendSlots = { reserve: async () => (calls++, 105_000) };
    const pacer = new Pacer(slots, options, () => 100_000);
    const paced = await pacer.pace(task, destination);
    expect(paced).toEqual({ action: 'wait', task: { ...task, slot_at: 105_000, not_before: 104_000 }, reason: 'rate limit' });
    // back at its slot: no second reservation
    const back = await new Pacer(slots, options, () => 105_000).pace(paced.task, destination);
    expect(back).toEqual({ action: 'go', task: paced.task });
    expect(calls).toBe(1);
    // past its slot by more than the allowance (half an interval, at least 100 ms: a lagging consumer): a new slot, so that late sends do not bunch
    await new Pacer(slots, options, () => 105_099).pace(paced.task, destination);
    expect(calls).toBe(1);
    await new Pacer(slots, options, () => 105_101).pace(paced.task, destination);
    expect(calls).toBe(2);
  });

  it('never goes unmetered while Redis does not answer: the delivery waits and asks again', async () => {
    const pacer = new Pacer({ reserve: () => Promise.reject(new Error('down')) }, options, () => 100_000);
    expect(await pacer.pace(task, destination)).toEqual({ action: 'wait', task: { ...task, slot_at: null, not_before: 101_000 }, reason: 'rate limiter not reachable' });
    // before the attempt nothing is decided: the task is left as it was
    expect(await pacer.prepare(task, destination)).toBe(task);
  });

  it('asks nothing of Redis for destinations without a limit', async () => {
    const pacer = new Pacer({ reserve: () => Promise.reject(new Error('must not be called')) }, options);
    const free = { ...destination, rate_limit_per_s: null };
    expect(await pacer.prepare(task, free)).toBe(task);
    expect(Pacer.limits(free)).toBe(false);
  });
});
