import { Redis } from 'ioredis';
import type { Destination } from '../../core/model';
import { Pacer, type SendSlots } from '../../pipeline/deliver/pace';
import type { DeliveryTask } from '../../platform/avro/records';
import { RedisSendSlots } from '../../platform/redis/send-slots';
import { uniqueSuffix } from '../support/ids';
import { receiverPool, type ReceivedRequest } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';
import { destinationWithIngester, sendEvent } from '../support/flow';

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

async function sendAll(hookUrl: string, n: number, parallel = 20): Promise<void> {
  for (let i = 0; i < n; i += parallel) {
    await Promise.all(Array.from({ length: Math.min(parallel, n - i) }, (_, k) => sendEvent(hookUrl, { seq: i + k })));
  }
}

describe('rate limit per destination', () => {
  let svc: TestService;
  const receivers = receiverPool();

  beforeAll(async () => {
    svc = await startTestService({ RETRY_TIERS: '1s,5s' });
  });
  afterAll(async () => {
    await Promise.all([svc?.stop(), receivers.closeAll()]);
  });

  it('delivers a destination limited to 20/s no faster than that, while an unthrottled one gets its events at once', async () => {
    const limitedReceiver = await receivers.next();
    const freeReceiver = await receivers.next();
    const limited = await destinationWithIngester(svc, 'limited', limitedReceiver.url);
    const free = await destinationWithIngester(svc, 'free', freeReceiver.url);
    const store = svc.service.store;
    expect(await store.update({ ...store.get('destination', svc.tenantId, limited.destinationId)!, rate_limit_per_s: 20 })).toBe(true);

    const n = 200;
    const rate = 20;
    await Promise.all([sendAll(limited.hookUrl, n), sendAll(free.hookUrl, n)]);
    const freeDone = (await freeReceiver.waitForRequests(n, 20_000)).at(-1)!.at;
    const got: ReceivedRequest[] = await limitedReceiver.waitForRequests(n, 40_000);
    const times = got.map((q) => q.at);
    if (process.env.THROTTLE_DEBUG) console.log(JSON.stringify([...times].sort((x, y) => x - y).map((t) => t - Math.min(...times))));
    // every event once
    expect(new Set(got.map((q) => q.headers['webhook-id'])).size).toBe(n);
    expect(maxInWindow(times, 1_000)).toBeLessThanOrEqual(rate + 1);
    const span = Math.max(...times) - Math.min(...times);
    expect(span).toBeGreaterThanOrEqual(((n - 1) / rate) * 1_000 - 250);
    // the limit costs the unthrottled destination nothing: it was done before the limited one was half way
    expect(freeDone).toBeLessThan([...times].sort((a, b) => a - b)[n / 2]!);
    await new Promise((r) => setTimeout(r, 500));
    expect(limitedReceiver.requests).toHaveLength(n);
  }, 60_000);
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
    // another destination's slots are its own
    expect(await one.reserve('dst_other', 50)).toBe(0);
  });
});

describe('pacing decisions', () => {
  const destination = { id: 'dst_1', tenant_id: 'ten_1', status: 'active', rate_limit_per_s: 10 } as Destination & { rate_limit_per_s: number };
  const task = { destination_id: 'dst_1', tenant_id: 'ten_1', not_before: 0, slot_at: null } as unknown as DeliveryTask;
  const options = { shortWaitMs: 1_000, lateMs: 1_000, unreachableWaitMs: 1_000 };

  it('waits in the delay topics for a far slot, coming back before it, and keeps the slot it holds', async () => {
    let calls = 0;
    const slots: SendSlots = { reserve: async () => (calls++, 5_000) };
    const pacer = new Pacer(slots, options, () => 100_000);
    const paced = await pacer.pace(task, destination);
    expect(paced).toEqual({ action: 'wait', task: { ...task, slot_at: 105_000, not_before: 104_000 }, reason: 'rate limit' });
    // back at its slot: no second reservation
    const back = await new Pacer(slots, options, () => 105_000).pace(paced.task, destination);
    expect(back).toEqual({ action: 'go', task: paced.task });
    expect(calls).toBe(1);
    // past its slot by more than half an interval (a lagging consumer): a new slot, so that late sends do not bunch
    await new Pacer(slots, options, () => 105_049).pace(paced.task, destination);
    expect(calls).toBe(1);
    await new Pacer(slots, options, () => 105_051).pace(paced.task, destination);
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
