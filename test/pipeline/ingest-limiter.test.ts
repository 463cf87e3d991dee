import { Redis } from 'ioredis';
import { Logger } from '../../core/log';
import { parseRateLimit, type RateLimit } from '../../core/rate-limits';
import { IngestLimiter, leaseOf, type Refusal, type TokenSource } from '../../pipeline/ingest/limits';
import { RedisTokenLeases } from '../../platform/redis/token-leases';
import { uniqueSuffix } from '../support/ids';

/** The limiter against the run's Redis: leases, shared refills, refusals, the slack of several processes. */
describe('ingest limiter', () => {
  let redis: Redis;
  const limiters: IngestLimiter[] = [];

  beforeAll(async () => {
    redis = new Redis(process.env.REDIS_URL!, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
  });
  afterAll(async () => {
    for (const l of limiters) l.stop();
    await redis.quit();
  });

  const limiterOf = (o: { perHook?: RateLimit | null; perTenant?: RateLimit | null; prefix?: string; source?: TokenSource; lines?: string[]; timeoutMs?: number }) => {
    const lines = o.lines ?? [];
    const l = new IngestLimiter({
      source: o.source ?? new RedisTokenLeases(redis),
      prefix: o.prefix ?? `il${uniqueSuffix()}:`,
      perHook: o.perHook ?? null,
      perTenant: o.perTenant ?? null,
      log: new Logger('warn', {}, (line) => lines.push(line)),
      // counting tests must not fail open because a loaded machine answered late; the fail-open case sets its own
      timeoutMs: o.timeoutMs ?? 10_000,
    });
    limiters.push(l);
    return l;
  };
  const admitted = async (l: IngestLimiter, tenant: string, hook: string, n: number): Promise<{ ok: number; refusals: Refusal[] }> => {
    const answers = await Promise.all(Array.from({ length: n }, () => l.admit(tenant, hook)));
    return { ok: answers.filter((a) => a === undefined).length, refusals: answers.filter((a): a is Refusal => a !== undefined) };
  };

  it('parses N/window and off, and refuses anything else', () => {
    expect(parseRateLimit('500/1s')).toEqual({ limit: { limit: 500, windowSeconds: 1 } });
    expect(parseRateLimit('30/2m')).toEqual({ limit: { limit: 30, windowSeconds: 120 } });
    expect(parseRateLimit('OFF')).toEqual({ limit: null });
    expect(parseRateLimit('0/1s').error).toMatch(/at least 1/);
    expect(parseRateLimit('500 per second').error).toMatch(/expected N\/window/);
    expect(parseRateLimit('5/2d').error).toBeDefined();
  });

  it('leases 2% of a limit, at least 1 and at most 50', () => {
    expect(leaseOf({ limit: 500, windowSeconds: 1 })).toBe(10);
    expect(leaseOf({ limit: 2000, windowSeconds: 1 })).toBe(40);
    expect(leaseOf({ limit: 20, windowSeconds: 60 })).toBe(1);
    expect(leaseOf({ limit: 1_000_000, windowSeconds: 1 })).toBe(50);
  });

  it('admits up to the limit per Hook URL with one Redis call per lease; concurrent webhooks share one call', async () => {
    const l = limiterOf({ perHook: { limit: 500, windowSeconds: 3600 } });
    // 10 at once with an empty lease: one call that leases 10 serves them all
    expect(await admitted(l, 't1', 'ing_a', 10)).toMatchObject({ ok: 10 });
    expect(l.redisCalls).toBe(1);
    // the next webhook finds the lease spent and asks again, once
    expect(await admitted(l, 't1', 'ing_a', 10)).toMatchObject({ ok: 10 });
    expect(l.redisCalls).toBe(2);
    const rest = await admitted(l, 't1', 'ing_a', 500);
    expect(rest.ok).toBe(480);
    expect(rest.refusals.length).toBe(20);
    expect(rest.refusals[0]).toMatchObject({ scope: 'hook', limit: { limit: 500, windowSeconds: 3600 } });
    expect(rest.refusals[0]!.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    // about one call per lease, not one per webhook
    expect(l.redisCalls).toBeLessThan(2 + 500 / 10 + 5);
    // refused from the local knowledge that the bucket is empty: no call per refused webhook
    const calls = l.redisCalls;
    expect((await admitted(l, 't1', 'ing_a', 100)).ok).toBe(0);
    expect(l.redisCalls).toBeLessThanOrEqual(calls + 1);
    // another Hook URL has its own bucket
    expect((await admitted(l, 't1', 'ing_b', 5)).ok).toBe(5);
  });

  it('counts every Hook URL of a tenant against the tenant limit, and no other tenant', async () => {
    const l = limiterOf({ perHook: { limit: 100, windowSeconds: 3600 }, perTenant: { limit: 150, windowSeconds: 3600 } });
    const a = await admitted(l, 'ta', 'ing_1', 100);
    const b = await admitted(l, 'ta', 'ing_2', 100);
    expect(a.ok).toBe(100);
    expect(b.ok).toBe(50);
    expect(b.refusals[0]).toMatchObject({ scope: 'tenant', limit: { limit: 150 } });
    expect((await admitted(l, 'tb', 'ing_3', 100)).ok).toBe(100);
  });

  it('several processes on one bucket admit at most the limit plus one lease each', async () => {
    const prefix = `il${uniqueSuffix()}:`;
    const limit = { limit: 1000, windowSeconds: 3600 };
    const processes = [1, 2, 3].map(() => limiterOf({ perHook: limit, prefix }));
    let ok = 0;
    // interleaved bursts, as from several processes taking traffic at once
    for (let round = 0; round < 30; round++) {
      const results = await Promise.all(processes.map((p, i) => admitted(p, 't', 'ing_x', 17 + i * 5)));
      ok += results.reduce((s, r) => s + r.ok, 0);
    }
    const lease = leaseOf(limit);
    // 30 rounds of 17+22+27 = 1980 asked of a 1000 bucket (refill over the test: well under 1)
    expect(ok).toBeLessThanOrEqual(limit.limit + 1 + processes.length * lease);
    // and tokens leased but not spent are at most one lease per process
    expect(ok).toBeGreaterThanOrEqual(limit.limit - processes.length * lease);
  });

  it('logs refusals at most once a second per Hook URL', async () => {
    const lines: string[] = [];
    const l = limiterOf({ perHook: { limit: 2, windowSeconds: 60 }, lines });
    await admitted(l, 't', 'ing_log', 50);
    await admitted(l, 't', 'ing_log', 50);
    const refusals = lines.filter((x) => x.includes('over the ingest rate limit'));
    expect(refusals).toHaveLength(1);
    expect(JSON.parse(refusals[0]!)).toMatchObject({ ingester_id: 'ing_log', tenant_id: 't' });
  });

  it('fails open when Redis does not answer in time, and says so once', async () => {
    const lines: string[] = [];
    const stalled: TokenSource = { reachable: true, take: () => new Promise(() => undefined) };
    const l = limiterOf({ perHook: { limit: 1, windowSeconds: 60 }, source: stalled, lines, timeoutMs: 50 });
    const t0 = Date.now();
    expect((await admitted(l, 't', 'ing_down', 20)).ok).toBe(20);
    expect(Date.now() - t0).toBeLessThan(2_000);
    // within the back-off the next ones pass without waiting at all
    expect(l.admit('t', 'ing_down')).toBeUndefined();
    expect(l.unenforcedTotal).toBe(21);
    expect(lines.filter((x) => x.includes('ingest rate limits not enforced'))).toHaveLength(1);
  });
});
