import { Redis } from 'ioredis';
import { newId } from '../../core/ids';
import { Logger } from '../../core/log';
import type { ReplayJob } from '../../core/model';
import { ReplayMatches } from '../../platform/replay/job-matches';
import { replayKeys } from '../../platform/replay/job-progress';
import { ReplayJobRunner } from '../../platform/replay/job-runner';
import { attemptsOf, destinationWithIngester, sendEvent } from '../support/flow';
import { receiverPool } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';

/**
 * A replay job whose runner dies mid-way: its lease lapses, the service's own runner takes the
 * job over and finishes it from the recorded progress. Every original is delivered again under
 * exactly one new webhook-id, and the shared rate holds across both runners.
 */
describe('replay job takeover', () => {
  let svc: TestService;
  const receivers = receiverPool();
  let crashedRedis: Redis | undefined;
  let crashed: ReplayJobRunner | undefined;
  const RATE = 4;
  const COUNT = 16;

  beforeAll(async () => {
    svc = await startTestService({ REPLAY_RATE_PER_S: String(RATE), RETRY_TIERS: '100ms' });
  }, 60_000);
  afterAll(async () => {
    await crashed?.stop();
    crashedRedis?.disconnect();
    await receivers.closeAll();
    await svc?.stop();
  });

  it('another runner takes over a job whose lease lapsed and finishes it without repeating a delivery under a new id', async () => {
    const receiver = await receivers.next();
    const dest = await destinationWithIngester(svc, 'takeover', receiver.url);
    const from = new Date(Date.now() - 1_000).toISOString();
    const events = await Promise.all(Array.from({ length: COUNT }, (_, i) => sendEvent(dest.hookUrl, { n: i })));
    await eventually('every original delivered', async () => {
      const rows = (await Promise.all(events.map((e) => attemptsOf(svc, e)))).flat();
      return rows.filter((r) => r.status === 'delivered').length === COUNT ? rows : undefined;
    });
    await receiver.waitForRequests(COUNT);
    const to = new Date(Date.now() + 1_000).toISOString();

    // the job, held from the start by a runner of this test (its lease is set before the job exists)
    const store = svc.service.store;
    const prefix = svc.config.topicPrefix;
    const matches = new ReplayMatches(svc.clickhouse, svc.config.clickhouseDatabase);
    const id = newId('replayJob');
    const filter = { from, to, destination_id: dest.destinationId, status: 'delivered', event_type: null };
    const now = new Date().toISOString();
    crashedRedis = new Redis(svc.config.redisUrl!);
    await crashedRedis.set(replayKeys(prefix, id).lease, 'crashing-runner', 'PX', 30_000);
    const job: ReplayJob = { kind: 'replay_job', id, tenant_id: svc.tenantId, filter, status: 'running', matched: await matches.count(svc.tenantId, id, filter, 1_000), replayed: 0, delivered: 0, failed: 0, skipped: 0, error: null, created_by: 'test', created_at: now, updated_at: now, finished_at: null, resume: null };
    expect(job.matched).toBe(COUNT);
    crashed = new ReplayJobRunner({ store, matches, replay: svc.service.apiServices!.replay, redis: crashedRedis, prefix, ratePerS: RATE, log: new Logger('error'), leaseMs: 2_000, owner: 'crashing-runner' });
    const startedAt = Date.now();
    await store.put(job);
    crashed.start();

    // a few replays out, the runner loses Redis for good: it can neither renew nor release its lease
    await receiver.waitForRequests(COUNT + 5, 20_000);
    crashedRedis.disconnect();
    const queuedBeforeCrash = receiver.requests.length - COUNT;
    expect(queuedBeforeCrash).toBeLessThan(COUNT);

    const done = await eventually('the job completed by the service runner', async () => {
      const j = store.get('replay_job', svc.tenantId, id);
      return j?.status === 'completed' ? j : undefined;
    }, 45_000, 250);
    const tookMs = Date.now() - startedAt;
    expect(done).toMatchObject({ matched: COUNT, replayed: COUNT, delivered: COUNT, failed: 0, resume: { done: true } });

    // each original once more, under one new webhook-id each; a batch queued twice around the crash is the same delivery
    const replays = receiver.requests.slice(COUNT);
    const bodies = new Map<string, Set<string>>();
    for (const r of replays) {
      const set = bodies.get(r.body.toString()) ?? new Set<string>();
      set.add(String(r.headers['webhook-id']));
      bodies.set(r.body.toString(), set);
    }
    expect(bodies.size).toBe(COUNT);
    for (const ids of bodies.values()) expect(ids.size).toBe(1);
    const originals = new Set(receiver.requests.slice(0, COUNT).map((r) => String(r.headers['webhook-id'])));
    for (const r of replays) expect(originals.has(String(r.headers['webhook-id']))).toBe(false);
    // the shared rate: COUNT replays at RATE per second, with the bucket's first second of burst
    expect(tookMs).toBeGreaterThanOrEqual(((COUNT - RATE) / RATE) * 1000);
  }, 90_000);
});
