import { createSandboxTransformer } from '../../../pipeline/deliver/transform/sandbox';
import type { TransformInput, TransformResult } from '../../../pipeline/deliver/transform/transformer';

const event: TransformInput = { id: 'evt_1', delivery_id: 'dlv_1', destination_id: 'dst_1', attempt: 1, content_type: 'application/json', body: { n: 1 }, received_at: '2026-01-02T03:04:05.000Z' };
const LOOP = 'function transform() { for (;;) {} }';
const TRIVIAL = 'function transform(e) { return { body: e.body } }';
const ok = (r: TransformResult) => r.ok && r.output !== null && r.output.body.toString() === '{"n":1}';

describe('transformation sandbox: where and when runs happen', () => {
  it('takes tenants round-robin: a backlog of endless loops delays another tenant by about one run each', async () => {
    const t = createSandboxTransformer({ workers: 1, timeoutMs: 30 });
    try {
      // the worker started, so that what follows is queued as it is submitted
      expect(ok(await t.run(TRIVIAL, event, 'ten_b'))).toBe(true);
      const order: string[] = [];
      const loops = Array.from({ length: 12 }, () => t.run(LOOP, event, 'ten_a').then((r) => (order.push('a'), r)));
      const trivial = Array.from({ length: 4 }, () => t.run(TRIVIAL, event, 'ten_b').then((r) => (order.push('b'), r)));
      const bResults = await Promise.all(trivial);
      const aDoneWhenBDone = order.filter((x) => x === 'a').length;
      await Promise.all(loops);

      expect(bResults.every(ok)).toBe(true);
      // a1 was running, then b1 a2 b2 a3 b3 a4 b4: each of B's runs waited for one of A's (the
      // one running), never for A's backlog, which was still eight runs long when B was done
      expect(order.slice(0, 8)).toEqual(['a', 'b', 'a', 'b', 'a', 'b', 'a', 'b']);
      expect(aDoneWhenBDone).toBe(4);
      expect(order.filter((x) => x === 'a')).toHaveLength(12);
    } finally {
      await t.close();
    }
  });

  it('fails at once a tenant\'s run beyond its waiting limit, and not another tenant\'s', async () => {
    const t = createSandboxTransformer({ workers: 1, timeoutMs: 20, maxWaitingPerTenant: 3 });
    try {
      expect(ok(await t.run(TRIVIAL, event, 'ten_b'))).toBe(true);
      // one running, three waiting, the fifth refused
      const runs = Array.from({ length: 5 }, () => t.run(LOOP, event, 'ten_a'));
      const other = t.run(TRIVIAL, event, 'ten_b');
      const fifth = await Promise.race([runs[4]!, new Promise<'pending'>((r) => setTimeout(() => r('pending'), 10))]);
      expect(fifth).toEqual({ ok: false, error: 'too many transformations waiting for this tenant', cpuMs: 0 });
      expect(t.stats()).toMatchObject({ waiting: 4, waitingTenants: 2, running: 1 });
      expect(ok(await other)).toBe(true);
      const results = await Promise.all(runs.slice(0, 4));
      expect(results.map((r) => !r.ok && r.error)).toEqual(Array(4).fill('transform ran out of time (20 ms)'));
      expect(t.stats().failures.busy).toBe(1);
    } finally {
      await t.close();
    }
  });

  it('keeps the event loop free while a worker runs an endless loop', async () => {
    const t = createSandboxTransformer({ workers: 1, timeoutMs: 300 });
    try {
      expect(ok(await t.run(TRIVIAL, event, 'ten_a'))).toBe(true);
      let ticks = 0;
      const timer = setInterval(() => ticks++, 10);
      const r = await t.run(LOOP, event, 'ten_a');
      clearInterval(timer);
      expect(r).toMatchObject({ ok: false, error: 'transform ran out of time (300 ms)' });
      // at least 300 ms passed: blocked, the loop would have ticked once at most
      expect(ticks).toBeGreaterThanOrEqual(10);
    } finally {
      await t.close();
    }
  });

  it('replaces a worker held past the watchdog by native calls that the time limit cannot see, and runs on', async () => {
    const t = createSandboxTransformer({ workers: 1, timeoutMs: 20 });
    try {
      expect(ok(await t.run(TRIVIAL, event, 'ten_a'))).toBe(true);
      // each call scans 4 MB natively; the engine looks at its limit only every few thousand calls
      const stuck = 'const big = "a".repeat(4e6); function transform() { for (;;) big.lastIndexOf("b") }';
      const started = performance.now();
      const r = await t.run(stuck, event, 'ten_a');
      const wallMs = performance.now() - started;
      expect(r).toMatchObject({ ok: false, error: 'transform ran out of time (20 ms)' });
      // the watchdog: ten times the limit plus a second
      expect(wallMs).toBeGreaterThanOrEqual(1150);
      expect(wallMs).toBeLessThan(10_000);
      expect(t.stats().workerRestarts).toBe(1);
      expect(ok(await t.run(TRIVIAL, event, 'ten_a'))).toBe(true);
    } finally {
      await t.close();
    }
  });

  it('fails runs with the reason when its worker cannot start, instead of holding them', async () => {
    // more WebAssembly memory than a 32-bit module can have
    const t = createSandboxTransformer({ workers: 1, memoryMb: 5000 });
    try {
      const first = await t.run(TRIVIAL, event, 'ten_a');
      expect(first).toMatchObject({ ok: false, error: expect.stringMatching(/^the transformation sandbox failed: cannot start: .+/) });
      const started = performance.now();
      await expect(t.run(TRIVIAL, event, 'ten_a')).resolves.toMatchObject({ ok: false, error: (first as { error: string }).error });
      await expect(t.check(TRIVIAL)).resolves.toMatch(/^the transformation sandbox failed: cannot start/);
      expect(performance.now() - started).toBeLessThan(500);
      expect(t.stats().failures.crash).toBe(3);
    } finally {
      await t.close();
    }
  });

  it('runs on several workers at once, and answers what is waiting when closed', async () => {
    const t = createSandboxTransformer({ workers: 2, timeoutMs: 200 });
    const started = performance.now();
    const both = await Promise.all([t.run(LOOP, event, 'ten_a'), t.run(LOOP, event, 'ten_b')]);
    expect(both.map((r) => !r.ok && r.error)).toEqual(['transform ran out of time (200 ms)', 'transform ran out of time (200 ms)']);
    // two 200 ms runs side by side, not one after the other (each worker starts first)
    expect(performance.now() - started).toBeLessThan(2000);
    const pending = [t.run(LOOP, event, 'ten_a'), t.run(LOOP, event, 'ten_a'), t.run(LOOP, event, 'ten_a')];
    await t.close();
    const closed = await Promise.all(pending);
    expect(closed.every((r) => !r.ok && r.error === 'the transformation sandbox is shut')).toBe(true);
    await expect(t.run(TRIVIAL, event, 'ten_a')).resolves.toMatchObject({ ok: false, error: 'the transformation sandbox is shut' });
  });
});
