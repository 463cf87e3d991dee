import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createHash } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { leafBytes } from '../../core/evidence-leaf';
import { leafHash } from '../../core/merkle';
import { receiverPool } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';

/**
 * Transformations through the whole service: a transformed body is what is sent, signed and
 * hashed into the attempt and its evidence leaf; a null drops the delivery; hostile code (an
 * endless loop, a memory bomb, a huge output, prototype tricks, a thrown object) fails only its
 * own attempts, each with a clear error; and while one tenant runs its worst code, another
 * tenant's deliveries, transformed or not, and the health route do not slow (the test shape of
 * the header patterns' one: turns of a second each, control and worst alternating).
 */

type Json = Record<string, any>;
const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;

const HOSTILE: Record<string, { code: string; error: RegExp }> = {
  'endless loop': { code: 'function transform(e) { for (;;) {} }', error: /ran out of time/ },
  'memory bomb': { code: 'function transform(e) { const a = []; for (;;) a.push(new Array(1e5).fill(e)); }', error: /ran out of memory/ },
  'huge output': { code: 'function transform(e) { return { body: "x".repeat(8 * 1024 * 1024) }; }', error: /returned (at least )?\d+ bytes; at most 1048576/ },
  'a forged signature header': { code: 'function transform(e) { return { body: e.body, headers: { "Webhook-Signature": "v1,forged" } }; }', error: /header Webhook-Signature is the service's own; a transformation cannot set it/ },
  'prototype tricks': { code: 'function transform(e) { Object.prototype.toJSON = function () { throw new Error("host?"); }; return { get body() { return (function(){ return this; })().process ? "escaped" : "contained"; } }; }', error: /.+/ },
  'thrown object': { code: 'function transform(e) { throw { secret: "no" }; }', error: /transform threw: / },
};

describe('transformations', () => {
  let svc: TestService;
  const receivers = receiverPool();
  let otherKey: string;
  const other = () => `${svc.tenantId}-b`;

  beforeAll(async () => {
    svc = await startTestService({ RETRY_SCHEDULE: '0,200ms,200ms,200ms,200ms,200ms', RETRY_TIERS: '100ms', BREAKER_MIN_ATTEMPTS: '10000', EVIDENCE_BATCH_AGE_MS: '50', RATE_LIMITS: 'default=100000/60s', LOG_LEVEL: 'warn' });
    otherKey = await svc.newKey(['read:destinations', 'write:destinations', 'read:ingesters', 'write:ingesters', 'read:deliveries'], { tenantId: other() });
  });
  afterAll(async () => {
    await receivers.closeAll();
    await svc?.stop();
  });

  /** A destination (and an ingester feeding it) of the tenant the key belongs to. */
  async function flow(tenant: string, key: string | undefined, url: string, transformation: string | null): Promise<{ destinationId: string; secret: string; hookUrl: string }> {
    const opts = key ? { key } : undefined;
    const d = await svc.api('POST', `/v1/tenants/${tenant}/destinations`, { name: `d ${Math.random()}`, url, transformation }, opts);
    if (d.status !== 201) throw new Error(`destination: ${d.status} ${JSON.stringify(d.body)}`);
    const i = await svc.api('POST', `/v1/tenants/${tenant}/ingesters`, { name: `i ${Math.random()}`, provider: 'none', config: {}, destination_ids: [d.body.id] }, opts);
    if (i.status !== 201) throw new Error(`ingester: ${i.status} ${JSON.stringify(i.body)}`);
    return { destinationId: d.body.id, secret: d.body.signing_secret, hookUrl: `${svc.url}/v1/hooks/${i.body.id}` };
  }

  const send = async (hookUrl: string, body: unknown): Promise<string> => {
    const res = await fetch(hookUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(res.status).toBe(202);
    return ((await res.json()) as { event_id: string }).event_id;
  };

  const attempts = async (destinationId: string): Promise<Json[]> => (await svc.api('GET', `/v1/tenants/${svc.tenantId}/deliveries?destination_id=${destinationId}&limit=200`)).body.deliveries;

  it('sends what the transformation returns, signed, with its SHA-256 in the attempt and the evidence leaf; null drops the delivery', async () => {
    const rec = await receivers.next();
    const f = await flow(svc.tenantId, undefined, `${rec.url}/base?x=1`, `function transform(e) {
      if (e.body.skip) return null;
      return { body: { order: e.body.id, cents: e.body.amount * 100 }, headers: { 'x-shape': 'v2', 'x-correlation-id': 'forged' }, method: 'PUT', path: '/orders/' + e.body.id };
    }`);
    await send(f.hookUrl, { id: 'o1', amount: 3 });
    const dropped = await send(f.hookUrl, { id: 'o2', skip: true });
    const [req] = await rec.waitForRequests(1, 30_000);
    expect(req!.method).toBe('PUT');
    expect(req!.url).toBe('/orders/o1');
    expect(JSON.parse(req!.body.toString())).toEqual({ order: 'o1', cents: 300 });
    expect(req!.headers['x-shape']).toBe('v2');
    // the service's own headers win over the transformation's
    expect(req!.headers['x-correlation-id']).not.toBe('forged');
    expect(req!.headers['content-type']).toBe('application/json');
    expect(() => new Webhook(f.secret).verify(req!.body.toString(), req!.headers as Record<string, string>)).not.toThrow();
    const rows = await eventually('the delivered and the dropped attempt', async () => {
      const r = await attempts(f.destinationId);
      return r.some((a) => a.status === 'delivered') && r.some((a) => a.status === 'dropped') ? r : undefined;
    });
    const delivered = rows.find((a) => a.status === 'delivered')!;
    expect(delivered.body_sha256).toBe(sha256(req!.body));
    const evidence = await eventually('the evidence', async () => {
      const e = await svc.api('GET', `/v1/tenants/${svc.tenantId}/evidence/${delivered.id}`);
      return e.body.status === 'confirmed' ? e.body : undefined;
    });
    const leaf = leafBytes({ tenant_id: svc.tenantId, delivery_id: delivered.id, event_id: delivered.event_id, destination_id: f.destinationId, attempt_number: 1, status: 'delivered', response_code: 200, attempted_at: delivered.attempted_at, body_sha256: sha256(req!.body) });
    expect(evidence.leaf_hash).toBe(leafHash(leaf).toString('hex'));
    const drop = rows.find((a) => a.status === 'dropped')!;
    expect(drop).toMatchObject({ event_id: dropped, response_code: null });
    expect(rec.requests).toHaveLength(1);
  }, 60_000);

  it('fails each hostile transformation\'s attempts with a clear error, and retries them as any failure', async () => {
    const rec = await receivers.next();
    for (const [name, { code, error }] of Object.entries(HOSTILE)) {
      const f = await flow(svc.tenantId, undefined, rec.url, code);
      await send(f.hookUrl, { name });
      const row = await eventually(`a failed attempt of the ${name}`, async () => (await attempts(f.destinationId)).find((a) => a.status !== 'delivered'), 30_000);
      const detail = (await svc.api('GET', `/v1/tenants/${svc.tenantId}/deliveries/${row.id}`)).body;
      const message = String(detail.attempts[0].error_message);
      if (name === 'prototype tricks') {
        // whatever the code does to its own prototypes stays in its sandbox: either it fails, or
        // what it sends says it found no host
        if (detail.attempts[0].status === 'delivered') expect(rec.requests.at(-1)!.body.toString()).toBe('contained');
        else expect(message).toMatch(/^transformation failed: /);
      } else {
        expect([name, message]).toEqual([name, expect.stringMatching(error)]);
        expect(message).toMatch(/^transformation failed: /);
        expect(message).not.toContain('\n');
        expect(detail.attempts[0].status).toBe('retrying');
      }
    }
    expect(rec.requests.filter((r) => r.body.toString() !== 'contained')).toHaveLength(0);
    // and the sandbox's counts are in the metrics, by result
    const metrics = await (await fetch(`${svc.url}/metrics`)).text();
    for (const result of ['timeout', 'memory', 'output', 'threw']) expect(metrics).toMatch(new RegExp(`^hookline_transform_runs_total\\{result="${result}"\\} [1-9]`, 'm'));
    expect(metrics).toMatch(/^hookline_transform_cpu_seconds_total [0-9.e-]+$/m);
  }, 120_000);

  it('while one tenant runs its worst code, another tenant\'s deliveries and health do not slow', async () => {
    const bRec = await receivers.next();
    const aRec = await receivers.next();
    // tenant B: one destination with a trivial transformation (it shares the sandbox), one without
    const bShaped = await flow(other(), otherKey, bRec.url, 'function transform(e) { return { body: e.body }; }');
    const bPlain = await flow(other(), otherKey, bRec.url, null);
    // tenant A: its endless loop, and (control) a harmless transformation
    const aWorst = await flow(svc.tenantId, undefined, aRec.url, HOSTILE['endless loop']!.code);
    const aHarmless = await flow(svc.tenantId, undefined, aRec.url, 'function transform(e) { return { body: e.body }; }');

    const sentAt = new Map<string, number>();
    bRec.respondBy((req) => {
      const seq = JSON.parse(req.body.toString()).seq as string;
      const at = sentAt.get(seq);
      if (at !== undefined) latencies.push({ seq, ms: performance.now() - at });
      return { status: 200 };
    });
    let latencies: { seq: string; ms: number }[] = [];

    /** One turn: A sends to `aHook` flat out, B sends steadily to both its destinations, health is polled. */
    const turn = async (aHook: string, ms: number, tag: string) => {
      latencies = [];
      const health: number[] = [];
      const loop = monitorEventLoopDelay({ resolution: 10 });
      loop.enable();
      const end = Date.now() + ms;
      const flood = async () => {
        for (let i = 0; Date.now() < end; i++) await send(aHook, { i });
      };
      const steady = async () => {
        for (let i = 0; Date.now() < end; i++) {
          const seq = `${tag}-${i}`;
          sentAt.set(seq, performance.now());
          await send(i % 2 === 0 ? bShaped.hookUrl : bPlain.hookUrl, { seq });
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      const poll = async () => {
        while (Date.now() < end) {
          const t = performance.now();
          const res = await fetch(`${svc.url}/v1/mcp/health`);
          await res.arrayBuffer();
          expect(res.status).toBe(200);
          health.push(performance.now() - t);
          await new Promise((r) => setTimeout(r, 20));
        }
      };
      const expected = await Promise.all([flood(), flood(), steady(), poll()]).then(() => [...sentAt.keys()].filter((k) => k.startsWith(`${tag}-`)).length);
      // B's deliveries of this turn all arrive
      await eventually(`tenant B's ${expected} deliveries of ${tag}`, async () => (latencies.filter((l) => l.seq.startsWith(`${tag}-`)).length >= expected ? true : undefined), 30_000);
      loop.disable();
      return { latencies: latencies.map((l) => l.ms), health, loopMs: loop.max / 1e6 };
    };
    type Turn = Awaited<ReturnType<typeof turn>>;
    const summary = (turns: Turn[]) => {
      const lat = turns.flatMap((t) => t.latencies).sort((a, b) => a - b);
      const health = turns.flatMap((t) => t.health).sort((a, b) => a - b);
      return { n: lat.length, median: percentile(lat, 50), p95: percentile(lat, 95), healthMedian: percentile(health, 50), healthMax: health.at(-1)!, loopMs: Math.max(...turns.map((t) => t.loopMs)) };
    };

    await turn(aHarmless.hookUrl, 1_500, 'warm');
    const turns: { control: Turn[]; worst: Turn[] } = { control: [], worst: [] };
    for (let i = 0; i < 4; i++) {
      turns.control.push(await turn(aHarmless.hookUrl, 1_000, `c${i}`));
      turns.worst.push(await turn(aWorst.hookUrl, 1_000, `w${i}`));
    }
    const control = summary(turns.control);
    const worst = summary(turns.worst);
    const line = (name: string, s: typeof worst) => `${name}: tenant B ${s.n} deliveries, median ${s.median.toFixed(1)} ms, p95 ${s.p95.toFixed(1)} ms; health median ${s.healthMedian.toFixed(1)} ms, max ${s.healthMax.toFixed(1)} ms; longest event-loop delay ${s.loopMs.toFixed(1)} ms\n`;
    process.stderr.write(line('tenant A harmless', control) + line('tenant A endless loops', worst));

    // tenant A's loops did fail, many times
    const failed = (await attempts(aWorst.destinationId)).filter((a) => a.status !== 'delivered');
    expect(failed.length).toBeGreaterThanOrEqual(10);
    expect(aRec.requests.every((r) => JSON.parse(r.body.toString()).i !== undefined)).toBe(true);
    // B's latency and health are not held by A's code: the loops run on a worker thread, and
    // tenants take turns on it (B's transformed deliveries wait one of A's runs at most)
    expect(worst.n).toBeGreaterThanOrEqual(20);
    expect(worst.median).toBeLessThan(control.median * 2 + 100);
    expect(worst.healthMax).toBeLessThan(2_000);
    expect(worst.loopMs).toBeLessThan(1_000);
  }, 180_000);
});
