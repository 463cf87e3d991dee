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
    // live for 2 s after their last beat: the reads below come well within that on a loaded machine
    const a = new BreakerBoard(redis, prefix, { expiresMs: 2_000 });
    const b = new BreakerBoard(redis, prefix, { expiresMs: 2_000 });
    await Promise.all([a.sync(), b.sync()]);
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
    // long enough for the read right after the beat, on a loaded machine too
    const dead = new BreakerBoard(redis, prefix, { expiresMs: 1_000 });
    const reader = new BreakerBoard(redis, prefix, { expiresMs: 1_000 });
    await dead.record('ten_a', 'dst_gone', 'open');
    expect((await reader.entries()).map((e) => e.destination_id)).toEqual(['dst_gone']);
    // no beat: the process leaves the live set, its board with it
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await reader.entries()).toEqual([]);
    expect(await redis.zrange(`${prefix}deliverers`, 0, -1)).toEqual([]);
  });

  it('counts the live deliver processes and shows each the others\' breakers, reading boards again only on a change', async () => {
    const p = `t${uniqueSuffix()}.`;
    const a = new BreakerBoard(redis, p, { expiresMs: 2_000 });
    const b = new BreakerBoard(redis, p, { expiresMs: 2_000 });
    try {
      expect((await a.sync()).members).toEqual([a.instance]);
      const view = await b.sync();
      expect([...view.members].sort()).toEqual([a.instance, b.instance].sort());
      expect(view.breakers).toEqual([]);
      await a.record('ten_a', 'dst_a', 'open', 5_000);
      const seen = await b.sync();
      expect(seen.breakers).toEqual([{ tenant_id: 'ten_a', destination_id: 'dst_a', state: 'open', since: 5_000, instance: a.instance }]);
      // nothing changed: the same read, without reading the boards again
      expect((await b.sync()).breakers).toBe(seen.breakers);
      await a.stop();
      const after = await b.sync();
      expect(after.members).toEqual([b.instance]);
      expect(after.breakers).toEqual([]);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });
});
