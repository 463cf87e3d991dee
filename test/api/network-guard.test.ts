import { gzipSync } from 'node:zlib';
import { destinationWithIngester, attemptsOf, sendEvent } from '../support/flow';
import { receiverPool } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';

/** What a service lets tenants point deliveries at, and what stops an event from looping. */
describe('destinations under the production default (DESTINATION_ALLOWED_NETWORKS=none)', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ DESTINATION_ALLOWED_NETWORKS: 'none' });
  });
  afterAll(() => svc?.stop());

  it.each(['http://127.0.0.1:9/hook', 'http://10.0.0.1/hook', 'http://localhost:9/hook', 'http://[::1]:9/hook', 'http://169.254.169.254/latest/meta-data/'])(
    'refuses %s with 422 naming url, without echoing what it resolved to',
    async (url) => {
      const res = await svc.api('POST', `/v1/tenants/${svc.tenantId}/destinations`, { name: `deny ${url}`, url });
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ type: expect.stringMatching(/\/errors\/unprocessable-entity$/), errors: [{ field: 'url', message: expect.stringMatching(/address/) }] });
      // (the problem type's base is the service's own URL; what the tenant's input produced is the point)
      if (url.includes('localhost')) expect(JSON.stringify([res.body.detail, res.body.errors])).not.toMatch(/127\.0\.0\.1|::1/);
    },
  );

  it('accepts a name that does not resolve yet; its attempts fail saying so', async () => {
    const { destinationId, hookUrl } = await destinationWithIngester(svc, 'not yet', 'http://does-not-exist.invalid/hook');
    const eventId = await sendEvent(hookUrl);
    const first = await eventually('a first attempt', async () => {
      const rows = await attemptsOf(svc, eventId);
      return rows.length > 0 ? rows[0] : undefined;
    });
    // a failed attempt, to be tried again on the destination's schedule
    expect(first).toMatchObject({ attempt_number: 1, status: 'retrying' });
    const res = await svc.api('GET', `/v1/tenants/${svc.tenantId}/deliveries/${first.delivery_id}`);
    expect(res.body).toMatchObject({ destination_id: destinationId, error_message: expect.stringMatching(/^host does-not-exist\.invalid does not resolve \(E[A-Z_]+\); attempts fail until it does$/) });
  });
});

describe('loops and fan-out, with loopback allowed', () => {
  let svc: TestService;
  const receivers = receiverPool();
  const base = () => `/v1/tenants/${svc.tenantId}`;
  beforeAll(async () => {
    svc = await startTestService({ MAX_FANOUT: '2', MAX_HOPS: '3', LOG_LEVEL: 'warn' });
  });
  afterAll(async () => {
    await receivers.closeAll();
    await svc?.stop();
  });

  it("refuses destinations that reach the service's own listener in any spelling", async () => {
    const port = new URL(svc.url).port;
    const spellings = [svc.url, `http://localhost:${port}`, `http://LOCALHOST.:${port}`, `http://127.1:${port}`, `http://0x7f.1:${port}`, `http://2130706433:${port}`, `http://[::1]:${port}`, `http://[::ffff:127.0.0.1]:${port}`, `http://0.0.0.0:${port}`, `http://[::]:${port}`, `http://%31%32%37.0.0.1:${port}`];
    for (const spelt of spellings) {
      const res = await svc.api('POST', `${base()}/destinations`, { name: `loop ${spelt}`, url: `${spelt}/v1/hooks/ing_x` });
      expect([spelt, res.status, res.body.errors]).toEqual([spelt, 422, [{ field: 'url', message: expect.stringMatching(/own endpoint/) }]]);
    }
    // credentials in the URL are refused before any address check
    const withUser = await svc.api('POST', `${base()}/destinations`, { name: 'loop user', url: `http://user:pw@127.0.0.1:${port}/v1/hooks/ing_x` });
    expect([withUser.status, withUser.body.errors]).toEqual([400, [{ field: 'url', message: 'must not carry credentials' }]]);
    // a receiver on another loopback port is what tests and development deliver to
    const r = await receivers.next();
    expect((await svc.api('POST', `${base()}/destinations`, { name: 'not a loop', url: r.url })).status).toBe(201);
  });

  it('sends X-Hookline-Hops one above what the event came with, and refuses beyond MAX_HOPS', async () => {
    const r = await receivers.next();
    const { hookUrl, ingesterId } = await destinationWithIngester(svc, 'hops', r.url);
    await sendEvent(hookUrl);
    const [first] = await r.waitForRequests(1);
    expect(first?.headers['x-hookline-hops']).toBe('1');
    const third = await fetch(hookUrl, { method: 'POST', headers: { 'content-type': 'application/json', 'x-hookline-hops': '3' }, body: '{}' });
    expect(third.status).toBe(202);
    const [, second] = await r.waitForRequests(2);
    expect(second?.headers['x-hookline-hops']).toBe('4');
    // the fast path (plain body) and the framework's router (a compressed one) refuse alike
    const plain = await fetch(hookUrl, { method: 'POST', headers: { 'content-type': 'application/json', 'x-hookline-hops': '4' }, body: '{}' });
    const gzipped = await fetch(hookUrl, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', 'x-hookline-hops': '4' }, body: gzipSync('{}') });
    for (const res of [plain, gzipped]) {
      expect(res.status).toBe(422);
      const problem = (await res.json()) as { type: string; detail: string; errors: unknown };
      expect(problem.type).toMatch(/\/errors\/unprocessable-entity$/);
      expect(problem.detail).toMatch(/passed through 4 deliveries of this service/);
    }
    const logged = await eventually('the hop refusal in the tenant log', async () => {
      const res = await svc.api('GET', `${base()}/logs?level=warn`);
      return res.body.logs.find((l: { ingester_id?: string; message: string }) => l.ingester_id === ingesterId && /too many hops/.test(l.message));
    });
    expect(logged).toMatchObject({ level: 'warn', ingester_id: ingesterId });
  });

  it('does not follow a redirect to its own Hook URL; the attempt fails', async () => {
    const target = await receivers.next();
    const other = await destinationWithIngester(svc, 'redirect target', target.url);
    const r = await receivers.next();
    r.respondWith(307, { location: other.hookUrl });
    const { hookUrl } = await destinationWithIngester(svc, 'redirecting', r.url, { retry_schedule_ms: [0] });
    const eventId = await sendEvent(hookUrl);
    const attempts = await eventually('the redirected attempt', async () => {
      const rows = await attemptsOf(svc, eventId);
      return rows.some((a) => a.status === 'failed') ? rows : undefined;
    });
    expect(attempts.map((a) => [a.response_code, a.status])).toEqual([[307, 'failed']]);
    // had the redirect been followed, the other Hook URL would have taken an event before this one
    await sendEvent(other.hookUrl, { canary: true });
    const got = await target.waitForRequests(1);
    expect(got.map((q) => JSON.parse(q.body.toString()))).toEqual([{ canary: true }]);
  });

  it('refuses flows and ingesters that fan one event out beyond MAX_FANOUT', async () => {
    const url = (await receivers.next()).url;
    const ids: string[] = [];
    for (const n of [1, 2, 3]) ids.push((await svc.api('POST', `${base()}/destinations`, { name: `fan ${n}`, url })).body.id);
    const tooMany = await svc.api('POST', `${base()}/ingesters`, { name: 'fan 3', provider: 'none', config: {}, destination_ids: ids });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.errors).toEqual([{ field: 'destination_ids', message: expect.stringMatching(/3 destinations.*at most 2/) }]);
    const ing = await svc.api('POST', `${base()}/ingesters`, { name: 'fan 2', provider: 'none', config: {}, destination_ids: ids.slice(0, 2) });
    expect(ing.status).toBe(201);
    // across flows: a second flow that adds a third destination is refused, one that repeats them is not
    const third = await svc.api('POST', `${base()}/delivery-flows`, { name: 'fan third', ingester_id: ing.body.id, destination_ids: [ids[2]] });
    expect([third.status, third.body.errors?.[0]?.field]).toEqual([422, 'destination_ids']);
    const again = await svc.api('POST', `${base()}/delivery-flows`, { name: 'fan again', ingester_id: ing.body.id, destination_ids: [ids[1], ids[0]] });
    expect(again.status).toBe(201);
    const grown = await svc.api('PUT', `${base()}/ingesters/${ing.body.id}`, { name: 'fan 2', destination_ids: ids });
    expect(grown.status).toBe(422);
    const moved = await svc.api('PUT', `${base()}/delivery-flows/${again.body.id}`, { name: 'fan again', destination_ids: [ids[2]] });
    expect(moved.status).toBe(422);
  });

  it('routes to the first MAX_FANOUT destinations by id when flows written earlier name more', async () => {
    const rs = [await receivers.next(), await receivers.next(), await receivers.next()];
    const dests: { id: string; r: (typeof rs)[number] }[] = [];
    for (const [i, r] of rs.entries()) dests.push({ id: (await svc.api('POST', `${base()}/destinations`, { name: `routed ${i}`, url: r.url })).body.id, r });
    const ing = await svc.api('POST', `${base()}/ingesters`, { name: 'routed', provider: 'none', config: {} });
    // written as a larger limit would have allowed it
    const now = new Date().toISOString();
    await svc.service.store.put({ kind: 'flow', id: `flw_fanout${Date.now()}`, tenant_id: svc.tenantId, name: 'wide', ingester_id: ing.body.id, destination_ids: dests.map((d) => d.id).reverse(), created_at: now, updated_at: now });
    await sendEvent(ing.body.hook_url);
    const sorted = [...dests].sort((a, b) => a.id.localeCompare(b.id));
    await Promise.all(sorted.slice(0, 2).map((d) => d.r.waitForRequests(1)));
    const warning = await eventually('the fan-out warning in the tenant log', async () => {
      const res = await svc.api('GET', `${base()}/logs?level=warn`);
      return res.body.logs.find((l: { ingester_id?: string; message: string }) => l.ingester_id === ing.body.id && /MAX_FANOUT/.test(l.message));
    });
    expect(warning).toBeDefined();
    // the routed tasks were produced together; the left-out one never got one
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(sorted.map((d) => d.r.requests.length)).toEqual([1, 1, 0]);
  });
});
