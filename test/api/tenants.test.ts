import { gzipSync } from 'node:zlib';
import { problemViolations } from '../support/problem';
import { startReceiver, type Receiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';
import { uniqueSuffix } from '../support/ids';

/**
 * Tenants as a resource, against the running service: an operator key creates, lists, reads and
 * changes tenants (a tenant's key cannot); a suspended tenant's Hook URLs answer 403 on the fast
 * path and the router, its deliveries are held and all arrive once it is resumed; limits of a
 * tenant's own raise its ingest limit, its quota and lower its body size while another tenant
 * keeps the deployment's; deleting a tenant erases it (test/e2e/erasure.test.ts: every store), and its
 * id is not given again.
 */
describe('tenants', () => {
  let svc: TestService;
  let r: Receiver;
  let operator = '';
  const sfx = uniqueSuffix();
  const expectProblem = (res: { status: number; headers: Headers; body: any }, status: number, slug: string) => {
    expect({ status: res.status, type: res.body?.type }).toEqual({ status, type: `${svc.config.errorBase}/errors/${slug}` });
    expect(problemViolations(res, svc.config.errorBase)).toEqual([]);
  };
  const op = (method: string, path: string, body?: unknown) => svc.api(method, path, body, { key: operator });
  const hook = (ingesterId: string, body: string | Buffer, headers: Record<string, string> = {}) =>
    fetch(`${svc.url}/v1/hooks/${ingesterId}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

  /** A tenant made by the operator, with a key, an ingester and a destination at the receiver. */
  async function tenantWithHook(id: string, extra: Record<string, unknown> = {}) {
    expect((await op('POST', '/v1/tenants', { id, name: `Tenant ${id}`, ...extra })).status).toBe(201);
    const key = await svc.newKey(['write:ingesters', 'write:destinations', 'write:flows', 'read:deliveries', 'write:events', 'read:destinations'], { tenantId: id });
    const dest = await svc.api('POST', `/v1/tenants/${id}/destinations`, { name: 'receiver', url: `${r.url}/${id}` }, { key });
    expect(dest.status).toBe(201);
    const ing = await svc.api('POST', `/v1/tenants/${id}/ingesters`, { name: 'in', provider: 'none', config: {}, destination_ids: [dest.body.id] }, { key });
    expect(ing.status).toBe(201);
    return { key, destinationId: dest.body.id as string, ingesterId: ing.body.id as string };
  }
  const received = (id: string) => r.requests.filter((q) => q.url.endsWith(`/${id}`));

  beforeAll(async () => {
    [svc, r] = await Promise.all([
      startTestService({ INGEST_RATE_LIMIT_PER_HOOK: '5/60s', INGEST_RATE_LIMIT_PER_TENANT: 'off', MAX_DESTINATIONS_PER_TENANT: '2', INGEST_MAX_BODY_BYTES: '4096' }),
      startReceiver(),
    ]);
    operator = await svc.operatorKey();
  });
  afterAll(async () => {
    await Promise.all([svc?.stop(), r?.close()]);
  });

  it('an operator key creates, lists, reads and changes tenants; no tenant key can', async () => {
    const id = `acme-${sfx}`;
    const made = await op('POST', '/v1/tenants', { id, name: 'Acme', metadata: { plan: 'pro' }, portal: { accent_color: '#0a7cff', frame_ancestors: ['https://app.acme.test'] } });
    expect(made.status).toBe(201);
    expect(made.headers.get('location')).toBe(`/v1/tenants/${id}`);
    expect(made.body).toMatchObject({ id, name: 'Acme', metadata: { plan: 'pro' }, state: 'active', suspended_at: null, portal: { logo_url: null, accent_color: '#0a7cff', frame_ancestors: ['https://app.acme.test'] } });
    expect(made.body.limits).toEqual({ ingest_per_hook: null, ingest_per_tenant: null, max_payload_bytes: null, quotas: { ingesters: null, destinations: null, delivery_flows: null, saved_payloads: null, api_keys: null, event_types: null }, retention: { bodies_seconds: null, attempts_seconds: null, logs_seconds: null } });
    expectProblem(await op('POST', '/v1/tenants', { id, name: 'Again' }), 409, 'conflict');

    const list = await op('GET', '/v1/tenants?limit=200');
    expect(list.status).toBe(200);
    expect(list.body.tenants.map((t: { id: string }) => t.id)).toEqual(expect.arrayContaining([id, svc.tenantId]));
    expect((await op('GET', `/v1/tenants/${id}`)).body).toEqual(made.body);

    // a GET's answer goes back with a change
    const changed = await op('PATCH', `/v1/tenants/${id}`, { ...made.body, name: 'Acme Inc', limits: { quotas: { destinations: 5 } } });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ name: 'Acme Inc', limits: { quotas: { destinations: 5, ingesters: null } }, metadata: { plan: 'pro' } });
    expect(Date.parse(changed.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(made.body.updated_at));

    // a tenant's key, even holding every scope, is not an operator's
    expectProblem(await svc.api('GET', '/v1/tenants'), 403, 'permission-denied');
    expectProblem(await svc.api('PATCH', `/v1/tenants/${svc.tenantId}`, { state: 'suspended' }), 403, 'permission-denied');
    expectProblem(await svc.api('GET', '/v1/tenants', undefined, { key: null }), 401, 'unauthorized');
    // and an operator key is no tenant's key either
    expectProblem(await op('GET', `/v1/tenants/${id}/destinations`), 404, 'not-found');

    const bad = await op('POST', '/v1/tenants', { id: 'Not An Id', name: '', portal: { accent_color: 'blue', logo_url: 'http://x.test/l.png', frame_ancestors: ['https://x.test/path'] }, limits: { max_payload_bytes: 10_000 }, surprise: 1 });
    expectProblem(bad, 400, 'validation-error');
    expect(bad.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(['id', 'limits.max_payload_bytes', 'name', 'portal.accent_color', 'portal.frame_ancestors[0]', 'portal.logo_url', 'surprise']);
    expectProblem(await op('PATCH', `/v1/tenants/${id}`, { id: 'other' }), 400, 'validation-error');
    expectProblem(await op('GET', `/v1/tenants/nobody-${sfx}`), 404, 'not-found');

    // deleting erases the tenant: gone, and its id is not given again
    expect((await op('DELETE', `/v1/tenants/${id}`)).status).toBe(204);
    expectProblem(await op('GET', `/v1/tenants/${id}`), 404, 'not-found');
    expectProblem(await op('DELETE', `/v1/tenants/${id}`), 404, 'not-found');
    const again = await op('POST', '/v1/tenants', { id, name: 'Again' });
    expectProblem(again, 409, 'conflict');
    expect(again.body.detail).toMatch(/was erased at/);
  });

  it('a suspended tenant: its Hook URLs answer 403, its deliveries are held, and all arrive once resumed', async () => {
    const id = `susp-${sfx}`;
    const t = await tenantWithHook(id);
    expect((await hook(t.ingesterId, '{"n":1}')).status).toBe(202);
    await eventually('the first webhook delivered', async () => (received(id).length === 1 ? true : undefined)).catch((err: Error) => {
      throw new Error(`${err.message}; the receiver has ${JSON.stringify(r.requests.map((q) => q.url))}`);
    });

    const suspended = await op('PATCH', `/v1/tenants/${id}`, { state: 'suspended' });
    expect(suspended.body).toMatchObject({ state: 'suspended', suspended_at: expect.any(String) });
    // the fast path and the router (a compressed body) both refuse
    const plain = await hook(t.ingesterId, '{"n":2}');
    expectProblem({ status: plain.status, headers: plain.headers, body: await plain.json() }, 403, 'tenant-suspended');
    const gz = await hook(t.ingesterId, gzipSync('{"n":3}'), { 'content-encoding': 'gzip' });
    expectProblem({ status: gz.status, headers: gz.headers, body: await gz.json() }, 403, 'tenant-suspended');

    // deliveries made while suspended (test events through the API) are held, not sent
    const queued: string[] = [];
    for (let i = 0; i < 3; i++) {
      const q = await svc.api('POST', `/v1/tenants/${id}/destinations/${t.destinationId}/test-events`, { payload: { held: i } }, { key: t.key });
      expect(q.status).toBe(202);
      queued.push(q.body.delivery_id);
    }
    await new Promise((res) => setTimeout(res, 2_000));
    expect(received(id).length).toBe(1);

    const resumed = await op('PATCH', `/v1/tenants/${id}`, { state: 'active' });
    expect(resumed.body).toMatchObject({ state: 'active', suspended_at: null });
    await eventually('the held deliveries arrive', async () => (received(id).length === 4 ? true : undefined), 30_000);
    expect(new Set(received(id).map((q) => q.headers['webhook-id'])).size).toBe(4);
    expect(received(id).slice(1).map((q) => JSON.parse(q.body.toString()).held).sort()).toEqual([0, 1, 2]);
    // a test event is stored as an event, its type with it
    const sent = await svc.api('POST', `/v1/tenants/${id}/destinations/${t.destinationId}/test-events`, { payload: { stored: true } }, { key: t.key });
    const readKey = await svc.newKey(['read:events'], { tenantId: id });
    const stored = await eventually('the test event stored', async () => {
      const e = await svc.api('GET', `/v1/tenants/${id}/events/${sent.body.event_id}`, undefined, { key: readKey });
      return e.status === 200 ? e.body : undefined;
    });
    expect(stored).toMatchObject({ id: sent.body.event_id, ingester_id: 'test-event', body: '{"stored":true}' });
    expect((await hook(t.ingesterId, '{"n":4}')).status).toBe(202);
    await eventually('webhooks accepted again after resuming', async () => (received(id).length === 6 ? true : undefined));
  }, 90_000);

  it("a tenant's own limits: more webhooks per Hook URL, more destinations, smaller bodies; another tenant keeps the settings", async () => {
    const big = `big-${sfx}`;
    const plain = `plain-${sfx}`;
    const b = await tenantWithHook(big, { limits: { ingest_per_hook: { limit: 40, window_seconds: 60 }, max_payload_bytes: 100, quotas: { destinations: 3 } } });
    const p = await tenantWithHook(plain);

    const statuses = async (ingesterId: string, n: number) => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push((await hook(ingesterId, '{"x":1}')).status);
      return out;
    };
    // INGEST_RATE_LIMIT_PER_HOOK is 5/60s: the plain tenant's sixth is refused, the other's twentieth is not
    const plainStatuses = await statuses(p.ingesterId, 7);
    expect(plainStatuses.filter((s) => s === 202).length).toBeLessThanOrEqual(6);
    expect(plainStatuses).toContain(429);
    expect(await statuses(b.ingesterId, 20)).toEqual(Array(20).fill(202));

    // its body limit is its own: 200 bytes is too large for it, not for the other (4096)
    const body = JSON.stringify({ pad: 'x'.repeat(200) });
    const tooLarge = await hook(b.ingesterId, body);
    expect(tooLarge.status).toBe(413);
    const plainKey = await svc.newKey(['write:destinations'], { tenantId: plain });
    // its quota: a third destination for it, not for the other (MAX_DESTINATIONS_PER_TENANT=2)
    expect((await svc.api('POST', `/v1/tenants/${big}/destinations`, { name: 'second', url: r.url }, { key: b.key })).status).toBe(201);
    expect((await svc.api('POST', `/v1/tenants/${big}/destinations`, { name: 'third', url: r.url }, { key: b.key })).status).toBe(201);
    expectProblem(await svc.api('POST', `/v1/tenants/${big}/destinations`, { name: 'fourth', url: r.url }, { key: b.key }), 403, 'quota-exceeded');
    expect((await svc.api('POST', `/v1/tenants/${plain}/destinations`, { name: 'second', url: r.url }, { key: plainKey })).status).toBe(201);
    expectProblem(await svc.api('POST', `/v1/tenants/${plain}/destinations`, { name: 'third', url: r.url }, { key: plainKey }), 403, 'quota-exceeded');

    // back to the settings: null
    const reset = await op('PATCH', `/v1/tenants/${big}`, { limits: { max_payload_bytes: null } });
    expect(reset.body.limits).toMatchObject({ max_payload_bytes: null, ingest_per_hook: { limit: 40, window_seconds: 60 }, quotas: { destinations: 3 } });
    await eventually('the body limit is the setting again', async () => ((await hook(b.ingesterId, body)).status === 202 ? true : undefined), 10_000);
  }, 90_000);

  it("a tenant's retention: set member by member, bounded, reset by null", async () => {
    const id = `kept-${sfx}`;
    expect((await op('POST', '/v1/tenants', { id, name: 'Kept', limits: { retention: { bodies_seconds: 86_400 } } })).status).toBe(201);
    const set = await op('PATCH', `/v1/tenants/${id}`, { limits: { retention: { attempts_seconds: 7_776_000, logs_seconds: 3_600 } } });
    expect(set.status).toBe(200);
    expect(set.body.limits.retention).toEqual({ bodies_seconds: 86_400, attempts_seconds: 7_776_000, logs_seconds: 3_600 });
    expect((await op('GET', `/v1/tenants/${id}`)).body.limits.retention).toEqual(set.body.limits.retention);
    // each member at most 10 years, at least 1 s, a whole number; no other member
    for (const [retention, field] of [
      [{ bodies_seconds: 0 }, 'limits.retention.bodies_seconds'],
      [{ attempts_seconds: 315_360_001 }, 'limits.retention.attempts_seconds'],
      [{ logs_seconds: 1.5 }, 'limits.retention.logs_seconds'],
      [{ logs_seconds: '30d' }, 'limits.retention.logs_seconds'],
      [{ forever: true }, 'limits.retention'],
    ] as const) {
      const refused = await op('PATCH', `/v1/tenants/${id}`, { limits: { retention } });
      expectProblem(refused, 400, 'validation-error');
      expect(JSON.stringify(refused.body)).toContain(field);
    }
    expect((await op('GET', `/v1/tenants/${id}`)).body.limits.retention).toEqual(set.body.limits.retention);
    const one = await op('PATCH', `/v1/tenants/${id}`, { limits: { retention: { bodies_seconds: null } } });
    expect(one.body.limits.retention).toEqual({ bodies_seconds: null, attempts_seconds: 7_776_000, logs_seconds: 3_600 });
    const all = await op('PATCH', `/v1/tenants/${id}`, { limits: { retention: null } });
    expect(all.body.limits.retention).toEqual({ bodies_seconds: null, attempts_seconds: null, logs_seconds: null });
  });
});
