import { Redis } from 'ioredis';
import { BreakerBoard } from '../../platform/redis/breaker-board';
import { uniqueSuffix } from '../support/ids';

/** Breaker states that deliver processes publish to Redis, as the proofs read them (real Redis). */
describe('breaker board', () => {
  let redis: Redis;
  const prefix = `t${uniqueSuffix()}.`;

  beforeAll(() => {
    redis = new Redis(process.env.REDIS_URL!);
  });
  afterAll(async () => {
    await redis.quit();
  });

  it('shows open and half-open breakers of live processes, and drops closed ones', async () => {
    const a = new BreakerBoard(redis, prefix, { beatMs: 200 });
    const b = new BreakerBoard(redis, prefix, { beatMs: 200 });
    a.start(() => undefined);
    b.start(() => undefined);
    try {
      await a.record('ten_a', 'dst_a', 'open', 1_000);
      await b.record('ten_b', 'dst_b', 'half-open', 2_000);
      const entries = await a.entries();
      expect(entries.map((e) => [e.tenant_id, e.destination_id, e.state, e.since])).toEqual([['ten_a', 'dst_a', 'open', 1_000], ['ten_b', 'dst_b', 'half-open', 2_000]]);
      expect(new Set(entries.map((e) => e.instance)).size).toBe(2);
      await a.record('ten_a', 'dst_a', 'closed');
      expect((await b.entries()).map((e) => e.destination_id)).toEqual(['dst_b']);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
    expect(await a.entries()).toEqual([]);
  });

  it('forgets the breakers of a process that stopped beating', async () => {
    const dead = new BreakerBoard(redis, prefix, { beatMs: 100 });
    const reader = new BreakerBoard(redis, prefix);
    await dead.record('ten_a', 'dst_gone', 'open');
    expect((await reader.entries()).map((e) => e.destination_id)).toEqual(['dst_gone']);
    // no heartbeat: the board expires after three missed beats
    await new Promise((r) => setTimeout(r, 500));
    expect(await reader.entries()).toEqual([]);
    expect(await redis.smembers(`${prefix}breakers`)).toEqual([]);
  });
});
