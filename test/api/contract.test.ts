import { randomBytes } from 'node:crypto';
import { maxHeaderSize } from 'node:http';
import { newId, ulid } from '../../core/ids';
import { SCOPES, type Scope } from '../../core/scopes';
import type { ErrorSlug } from '../../core/errors';
import { LOG_LEVELS } from '../../core/config';
import { issueApiKey } from '../../platform/config-store/tenants';
import { deliveryRow, logRow } from '../../pipeline/sink/rows';
import { destinationWithIngester, sendEvent, waitForStates } from '../support/flow';
import { expectProblem, headerOf, isIsoUtc, problemViolations } from '../support/problem';
import { rawRequest } from '../support/raw-http';
import { startReceiver, type Receiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';

/**
 * The API contract (interface spec parts 4, 5 and 7), route by route: authentication, scopes,
 * object-level permission, unknown ids, tenant isolation, success shapes, conflicts,
 * Idempotency-Key, cursor paging and query validation. Every error answer is checked to be a
 * well-formed problem document. One service for the file (the embedded ClickHouse engine allows
 * one data dir per process); tenants A (the fixtures), B (isolation) and C (paging) share it.
 */

type Answer = { status: number; headers: Headers; body: any };

/** The objects of tenant A the routes address. */
interface Fixture {
  dest: string;
  dest2: string;
  ingester: string;
  flow: string;
  payload: string;
  /** A dead delivery (receiver answered 500, schedule [0]) of `event` to `deadDest`. */
  deadDelivery: string;
  deadDest: string;
  event: string;
  /** A dead letter: an event the filter stage set aside (its ingester's stored filters do not compile). */
  deadLetter: string;
  deadLetterIngester: string;
  deadLetterEvent: string;
}

interface Route {
  name: string;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  scope: Scope;
  /** Path below /v1/tenants/{tenant_id}. */
  path: (f: Fixture) => string;
  /** A valid body (writes). */
  body?: (f: Fixture) => unknown;
  /** Routes that address one object by id. */
  byId?: {
    /** The same route with an id that does not exist. */
    unknown: string;
    /** The resource_id a key limited to other resources is refused with. */
    resource: (f: Fixture) => string;
  };
  /** The envelope member of a list route. */
  list?: string;
}

const UNKNOWN = {
  dst: 'dst_01jzzzzzzzzzzzzzzzzzzzzzzz',
  ing: 'ing_01jzzzzzzzzzzzzzzzzzzzzzzz',
  flw: 'flw_01jzzzzzzzzzzzzzzzzzzzzzzz',
  dlv: 'dlv_01jzzzzzzzzzzzzzzzzzzzzzzz',
  evt: 'evt_01jzzzzzzzzzzzzzzzzzzzzzzz',
  pld: 'pld_01jzzzzzzzzzzzzzzzzzzzzzzz',
  dlt: 'dlt_01jzzzzzzzzzzzzzzzzzzzzzzz',
};

let counter = 0;
const uniq = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${counter++}`;
const RECEIVER_URL = 'http://127.0.0.1:9/contract';

const ROUTES: Route[] = [
  { name: 'GET /destinations', method: 'GET', scope: 'read:destinations', path: () => '/destinations', list: 'destinations' },
  { name: 'POST /destinations', method: 'POST', scope: 'write:destinations', path: () => '/destinations', body: () => ({ name: uniq('dest'), url: RECEIVER_URL }) },
  { name: 'GET /destinations/{id}', method: 'GET', scope: 'read:destinations', path: (f) => `/destinations/${f.dest}`, byId: { unknown: `/destinations/${UNKNOWN.dst}`, resource: (f) => f.dest } },
  { name: 'DELETE /destinations/{id}', method: 'DELETE', scope: 'write:destinations', path: (f) => `/destinations/${f.dest}`, byId: { unknown: `/destinations/${UNKNOWN.dst}`, resource: (f) => f.dest } },
  { name: 'GET /ingesters', method: 'GET', scope: 'read:ingesters', path: () => '/ingesters', list: 'ingesters' },
  { name: 'POST /ingesters', method: 'POST', scope: 'write:ingesters', path: () => '/ingesters', body: (f) => ({ name: uniq('ing'), provider: 'none', config: {}, destination_ids: [f.dest] }) },
  { name: 'GET /ingesters/{id}', method: 'GET', scope: 'read:ingesters', path: (f) => `/ingesters/${f.ingester}`, byId: { unknown: `/ingesters/${UNKNOWN.ing}`, resource: (f) => f.ingester } },
  { name: 'PUT /ingesters/{id}', method: 'PUT', scope: 'write:ingesters', path: (f) => `/ingesters/${f.ingester}`, body: () => ({ name: 'contract ingester' }), byId: { unknown: `/ingesters/${UNKNOWN.ing}`, resource: (f) => f.ingester } },
  { name: 'DELETE /ingesters/{id}', method: 'DELETE', scope: 'write:ingesters', path: (f) => `/ingesters/${f.ingester}`, byId: { unknown: `/ingesters/${UNKNOWN.ing}`, resource: (f) => f.ingester } },
  { name: 'GET /delivery-flows', method: 'GET', scope: 'read:flows', path: () => '/delivery-flows', list: 'delivery_flows' },
  { name: 'POST /delivery-flows', method: 'POST', scope: 'write:flows', path: () => '/delivery-flows', body: (f) => ({ name: uniq('flow'), ingester_id: f.ingester, destination_ids: [f.dest] }) },
  { name: 'GET /delivery-flows/{id}', method: 'GET', scope: 'read:flows', path: (f) => `/delivery-flows/${f.flow}`, byId: { unknown: `/delivery-flows/${UNKNOWN.flw}`, resource: (f) => f.flow } },
  { name: 'PUT /delivery-flows/{id}', method: 'PUT', scope: 'write:flows', path: (f) => `/delivery-flows/${f.flow}`, body: (f) => ({ name: 'contract flow', destination_ids: [f.dest] }), byId: { unknown: `/delivery-flows/${UNKNOWN.flw}`, resource: (f) => f.flow } },
  { name: 'DELETE /delivery-flows/{id}', method: 'DELETE', scope: 'write:flows', path: (f) => `/delivery-flows/${f.flow}`, byId: { unknown: `/delivery-flows/${UNKNOWN.flw}`, resource: (f) => f.flow } },
  { name: 'GET /deliveries', method: 'GET', scope: 'read:deliveries', path: () => '/deliveries', list: 'deliveries' },
  { name: 'GET /deliveries/{id}', method: 'GET', scope: 'read:deliveries', path: (f) => `/deliveries/${f.deadDelivery}`, byId: { unknown: `/deliveries/${UNKNOWN.dlv}`, resource: (f) => f.deadDest } },
  { name: 'POST /events/{id}/retry', method: 'POST', scope: 'write:events', path: (f) => `/events/${f.event}/retry`, byId: { unknown: `/events/${UNKNOWN.evt}/retry`, resource: (f) => f.deadDest } },
  { name: 'GET /saved-payloads', method: 'GET', scope: 'read:payloads', path: () => '/saved-payloads', list: 'saved_payloads' },
  { name: 'POST /saved-payloads', method: 'POST', scope: 'write:payloads', path: () => '/saved-payloads', body: () => ({ name: uniq('payload'), payload: { order: 1 } }) },
  { name: 'GET /saved-payloads/{id}', method: 'GET', scope: 'read:payloads', path: (f) => `/saved-payloads/${f.payload}`, byId: { unknown: `/saved-payloads/${UNKNOWN.pld}`, resource: (f) => f.payload } },
  { name: 'GET /logs', method: 'GET', scope: 'read:logs', path: () => '/logs', list: 'logs' },
  { name: 'GET /dead-letters', method: 'GET', scope: 'read:events', path: () => '/dead-letters', list: 'dead_letters' },
  { name: 'GET /dead-letters/{id}', method: 'GET', scope: 'read:events', path: (f) => `/dead-letters/${f.deadLetter}`, byId: { unknown: `/dead-letters/${UNKNOWN.dlt}`, resource: (f) => f.deadLetterIngester } },
  { name: 'POST /dead-letters/{id}/replay', method: 'POST', scope: 'write:events', path: (f) => `/dead-letters/${f.deadLetter}/replay`, byId: { unknown: `/dead-letters/${UNKNOWN.dlt}/replay`, resource: (f) => f.deadLetterIngester } },
  { name: 'GET /evidence/{id}', method: 'GET', scope: 'read:evidence', path: (f) => `/evidence/${f.deadDelivery}`, byId: { unknown: `/evidence/${UNKNOWN.dlv}`, resource: (f) => f.deadDest } },
  // the evidence log is shared by all tenants: its checkpoints are no tenant's list
  { name: 'GET /evidence-log', method: 'GET', scope: 'read:evidence', path: () => '/evidence-log' },
  { name: 'GET /evidence-log/checkpoints', method: 'GET', scope: 'read:evidence', path: () => '/evidence-log/checkpoints' },
  { name: 'GET /evidence-log/consistency', method: 'GET', scope: 'read:evidence', path: () => '/evidence-log/consistency?from=1' },
];
const BY_ID = ROUTES.filter((r) => r.byId);
const LISTS = ROUTES.filter((r) => r.list);
const table = (routes: Route[]) => routes.map((r) => [r.name, r] as const);

describe('API contract: every route and every answer that applies', () => {
  let svc: TestService;
  let receiver: Receiver;
  let f: Fixture;
  let tenantA: string;
  let tenantB: string;
  let tenantC: string;
  let keyB: string;
  let keyC: string;
  let expiredKey: string;
  const base = (tenant = tenantA) => `/v1/tenants/${encodeURIComponent(tenant)}`;
  const errorBase = () => svc.config.errorBase;
  const problem = (res: Answer, status: number, slug: ErrorSlug) => expectProblem(res, status, slug, errorBase());
  const send = (route: Route, options: { key?: string | null; tenant?: string; path?: string; headers?: Record<string, string> } = {}) =>
    svc.api(route.method, `${base(options.tenant)}${options.path ?? route.path(f)}`, route.body?.(f), { key: options.key, headers: options.headers });
  const created = async (res: Promise<Answer>, status = 201): Promise<any> => {
    const r = await res;
    if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${JSON.stringify(r.body)}`);
    return r.body;
  };

  /** Keys with every scope but one, made once per scope. */
  const withoutScope = new Map<Scope, Promise<string>>();
  const keyWithout = (scope: Scope) => {
    if (!withoutScope.has(scope)) withoutScope.set(scope, svc.newKey(SCOPES.filter((s) => s !== scope)));
    return withoutScope.get(scope)!;
  };

  beforeAll(async () => {
    [svc, receiver] = await Promise.all([startTestService({ RATE_LIMITS: 'default=100000/60s', RETRY_TIERS: '100ms' }), startReceiver()]);
    receiver.respondWith(500);
    tenantA = svc.tenantId;
    tenantB = `${tenantA}-b`;
    tenantC = `${tenantA}-c`;
    [keyB, keyC] = await Promise.all([svc.newKey([...SCOPES], { tenantId: tenantB }), svc.newKey([...SCOPES], { tenantId: tenantC })]);
    expiredKey = (await issueApiKey(svc.service.store, tenantA, [...SCOPES], { expiresAt: new Date(Date.now() - 60_000).toISOString() })).api_key;

    const dest = await created(svc.api('POST', `${base()}/destinations`, { name: 'contract-a', url: RECEIVER_URL }));
    const dest2 = await created(svc.api('POST', `${base()}/destinations`, { name: 'contract-a2', url: RECEIVER_URL }));
    const ingester = await created(svc.api('POST', `${base()}/ingesters`, { name: 'contract ingester', provider: 'none', config: {} }));
    const flow = await created(svc.api('POST', `${base()}/delivery-flows`, { name: 'contract flow', ingester_id: ingester.id, destination_ids: [dest.id] }));
    const payload = await created(svc.api('POST', `${base()}/saved-payloads`, { name: 'contract payload', payload: { order: 42 } }));

    // a dead delivery: the receiver answers 500 and the schedule allows one attempt
    const dead = await destinationWithIngester(svc, 'contract-dead', receiver.url, { retry_schedule_ms: [0] });
    const event = await sendEvent(dead.hookUrl, { contract: true });
    const rows = await waitForStates(svc, event, ['failed', 'dlq_queued']);
    const deadDelivery = rows.find((t) => t.state === 'dlq_queued')!.delivery_id;
    await eventually('the dead attempt in the deliveries table', async () => {
      const res = await svc.api('GET', `${base()}/deliveries/${deadDelivery}`);
      return res.status === 200 && res.body.status === 'failed' ? res : undefined;
    });
    // a dead letter: stored filters that no longer compile (a lookahead, as an older version could store it) make the filter stage set the event aside;
    // the ingester routes nowhere, so that replaying it adds no delivery to the lists checked below
    const lettered = await created(svc.api('POST', `${base()}/ingesters`, { name: 'contract dead letters', provider: 'none', config: {}, filters: [{ type: 'header', name: 'x-tag', op: 'matches', pattern: '^t' }] }));
    await svc.service.store.put({ ...svc.service.store.get('ingester', tenantA, lettered.id)!, filters: [{ type: 'header', name: 'x-tag', op: 'matches', pattern: '^t(?=a)' }] });
    const letteredHook = await fetch(`${svc.url}/v1/hooks/${lettered.id}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-tag': 'ta' }, body: '{"contract":"dead letter"}' });
    const deadLetterEvent = ((await letteredHook.json()) as { event_id: string }).event_id;
    const letter = await eventually('the dead letter listed', async () => {
      const res = await svc.api('GET', `${base()}/dead-letters`);
      return (res.body.dead_letters as { id: string; event_id: string }[]).find((l) => l.event_id === deadLetterEvent);
    });
    f = { dest: dest.id, dest2: dest2.id, ingester: ingester.id, flow: flow.id, payload: payload.id, deadDelivery, deadDest: dead.destinationId, event, deadLetter: letter.id, deadLetterIngester: lettered.id, deadLetterEvent };

    // a log line of tenant A about the dead destination (the sink's own row format)
    const now = Date.now();
    await svc.clickhouse.insert({
      table: `${svc.config.clickhouseDatabase}.logs`,
      values: [logRow({ id: newId('log', now), ts: now, level: 'warn', message: 'contract log line', stage: 'deliver', tenant_id: tenantA, event_id: event, delivery_id: deadDelivery, destination_id: dead.destinationId, ingester_id: dead.ingesterId, correlation_id: 'cor-contract', fields: '{}' })],
      format: 'JSONEachRow',
    });
  }, 120_000);

  afterAll(async () => {
    await Promise.all([svc?.stop(), receiver?.close()]);
  });

  describe('part 5 rule 2: 401 without a key, with a malformed, unknown, forged or expired key', () => {
    it.each(table(ROUTES))('%s', async (_name, route) => {
      const unknownKey = `hlk_${ulid()}_${randomBytes(32).toString('base64url')}`;
      const forged = `${svc.apiKey.slice(0, -4)}${svc.apiKey.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
      const cases: [string, Record<string, string> | undefined, string | null][] = [
        ['no Authorization header', undefined, null],
        ['a Basic scheme', { authorization: `Basic ${Buffer.from('user:pass').toString('base64')}` }, null],
        ['Bearer without a key', { authorization: 'Bearer ' }, null],
        ['a malformed key', undefined, 'not-a-key'],
        ['a well-formed key never issued', undefined, unknownKey],
        ['an issued key id with a wrong secret', undefined, forged],
        ['an expired key', undefined, expiredKey],
      ];
      for (const [what, headers, key] of cases) {
        const res = await send(route, { key, headers });
        try {
          problem(res, 401, 'unauthorized');
          expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
        } catch (err) {
          throw new Error(`${route.name} with ${what}: ${(err as Error).message}`);
        }
      }
    });

    it('a key expiring in the future is accepted until then', async () => {
      const soon = (await issueApiKey(svc.service.store, tenantA, ['read:destinations'], { expiresAt: new Date(Date.now() + 3_600_000).toISOString() })).api_key;
      expect((await svc.api('GET', `${base()}/destinations`, undefined, { key: soon })).status).toBe(200);
    });
  });

  describe('part 5 rule 3: 403 insufficient-scope naming the route\'s scope, for a key with every other scope', () => {
    it.each(table(ROUTES))('%s', async (_name, route) => {
      const res = await send(route, { key: await keyWithout(route.scope) });
      problem(res, 403, 'insufficient-scope');
      expect(res.body.required_scope).toBe(route.scope);
    });

    it('nothing was written by a refused write', async () => {
      const list = await svc.api('GET', `${base()}/destinations/${f.dest}`);
      expect(list.status).toBe(200);
      expect((await svc.api('GET', `${base()}/ingesters/${f.ingester}`)).status).toBe(200);
      expect((await svc.api('GET', `${base()}/delivery-flows/${f.flow}`)).status).toBe(200);
    });
  });

  describe('part 5 rule 4: 403 permission-denied with resource_id for a key limited to other resources', () => {
    it.each(table(BY_ID))('%s', async (_name, route) => {
      const key = await svc.newKey([...SCOPES], { resourceIds: ['dst_01jyyyyyyyyyyyyyyyyyyyyyyy'] });
      const res = await send(route, { key });
      problem(res, 403, 'permission-denied');
      expect(res.body.resource_id).toBe(route.byId!.resource(f));
    });

    it.each(table(BY_ID.filter((r) => r.method === 'GET')))('%s answers a key limited to that very resource', async (_name, route) => {
      const key = await svc.newKey([...SCOPES], { resourceIds: [route.byId!.resource(f)] });
      expect((await send(route, { key })).status).toBe(200);
    });

    it('the objects a refused DELETE or PUT addressed are unchanged', async () => {
      expect((await svc.api('GET', `${base()}/destinations/${f.dest}`)).status).toBe(200);
      const ing = await svc.api('GET', `${base()}/ingesters/${f.ingester}`);
      expect(ing.body.name).toBe('contract ingester');
      expect((await svc.api('GET', `${base()}/delivery-flows/${f.flow}`)).body.name).toBe('contract flow');
    });

    it('POST /ingesters naming a destination the key may not use', async () => {
      const key = await svc.newKey([...SCOPES], { resourceIds: [f.dest2] });
      const res = await svc.api('POST', `${base()}/ingesters`, { name: uniq('denied'), provider: 'none', config: {}, destination_ids: [f.dest] }, { key });
      problem(res, 403, 'permission-denied');
      expect(res.body.resource_id).toBe(f.dest);
    });

    it('PUT /ingesters/{id} naming a destination the key may not use', async () => {
      const key = await svc.newKey([...SCOPES], { resourceIds: [f.ingester] });
      const res = await svc.api('PUT', `${base()}/ingesters/${f.ingester}`, { name: 'taken over', destination_ids: [f.dest2] }, { key });
      problem(res, 403, 'permission-denied');
      expect(res.body.resource_id).toBe(f.dest2);
      expect((await svc.api('GET', `${base()}/ingesters/${f.ingester}`)).body.name).toBe('contract ingester');
    });

    it('POST /delivery-flows naming a destination, or an ingester, the key may not use', async () => {
      const body = { name: uniq('denied-flow'), ingester_id: f.ingester, destination_ids: [f.dest] };
      const onlyIngester = await svc.newKey([...SCOPES], { resourceIds: [f.ingester] });
      const a = await svc.api('POST', `${base()}/delivery-flows`, body, { key: onlyIngester });
      problem(a, 403, 'permission-denied');
      expect(a.body.resource_id).toBe(f.dest);
      const onlyDest = await svc.newKey([...SCOPES], { resourceIds: [f.dest] });
      const b = await svc.api('POST', `${base()}/delivery-flows`, body, { key: onlyDest });
      problem(b, 403, 'permission-denied');
      expect(b.body.resource_id).toBe(f.ingester);
      const both = await svc.newKey([...SCOPES], { resourceIds: [f.ingester, f.dest] });
      expect((await svc.api('POST', `${base()}/delivery-flows`, body, { key: both })).status).toBe(201);
    });

    it('PUT /delivery-flows/{id} naming a destination the key may not use', async () => {
      const key = await svc.newKey([...SCOPES], { resourceIds: [f.flow, f.ingester, f.dest] });
      const res = await svc.api('PUT', `${base()}/delivery-flows/${f.flow}`, { name: 'taken over', destination_ids: [f.dest2] }, { key });
      problem(res, 403, 'permission-denied');
      expect(res.body.resource_id).toBe(f.dest2);
      expect((await svc.api('GET', `${base()}/delivery-flows/${f.flow}`)).body).toMatchObject({ name: 'contract flow', destination_ids: [f.dest] });
    });

    it('lists show a limited key only what it may see (destinations, ingesters, flows, deliveries)', async () => {
      const key = await svc.newKey([...SCOPES], { resourceIds: [f.dest, f.flow] });
      const ids = async (path: string, member: string) => (await svc.api('GET', `${base()}${path}`, undefined, { key })).body[member].map((x: { id: string }) => x.id);
      expect(await ids('/destinations', 'destinations')).toEqual([f.dest]);
      expect(await ids('/ingesters', 'ingesters')).toEqual([]);
      expect(await ids('/delivery-flows', 'delivery_flows')).toEqual([f.flow]);
      expect(await ids('/deliveries', 'deliveries')).toEqual([]);
      const deadKey = await svc.newKey([...SCOPES], { resourceIds: [f.deadDest] });
      const dl = await svc.api('GET', `${base()}/deliveries`, undefined, { key: deadKey });
      expect(dl.body.deliveries.map((d: { id: string }) => d.id)).toContain(f.deadDelivery);
      expect(dl.body.deliveries.every((d: { destination_id: string }) => d.destination_id === f.deadDest)).toBe(true);
    });

    // BUG: GET /saved-payloads lists every payload to a key limited to other resources, while
    // GET /saved-payloads/{id} refuses the same key each of them with 403 permission-denied.
    it('GET /saved-payloads hides payloads that GET /saved-payloads/{id} refuses to a limited key', async () => {
      const key = await svc.newKey([...SCOPES], { resourceIds: [f.dest] });
      problem(await svc.api('GET', `${base()}/saved-payloads/${f.payload}`, undefined, { key }), 403, 'permission-denied');
      const list = await svc.api('GET', `${base()}/saved-payloads`, undefined, { key });
      expect(list.status).toBe(200);
      expect(list.body.saved_payloads.map((p: { id: string }) => p.id)).not.toContain(f.payload);
    });

    // BUG: GET /logs shows a limited key the log lines of destinations it may not see (their
    // delivery ids, event ids and errors), while GET /deliveries hides those deliveries from it.
    it('GET /logs hides log lines of resources a limited key may not see', async () => {
      const key = await svc.newKey([...SCOPES], { resourceIds: [f.dest] });
      expect((await svc.api('GET', `${base()}/deliveries`, undefined, { key })).body.deliveries).toEqual([]);
      const logs = await svc.api('GET', `${base()}/logs?limit=200`, undefined, { key });
      expect(logs.status).toBe(200);
      const foreign = logs.body.logs.filter((l: { destination_id: string | null }) => l.destination_id !== null && l.destination_id !== f.dest);
      expect(foreign).toEqual([]);
    });
  });

  describe('404 not-found for an unknown id', () => {
    it.each(table(BY_ID))('%s', async (_name, route) => {
      const res = await send(route, { path: route.byId!.unknown });
      problem(res, 404, 'not-found');
    });

    it.each(table(BY_ID))('%s with an id that is not shaped like one', async (_name, route) => {
      const res = await send(route, { path: route.byId!.unknown.replace(/[a-z]{3}_01jz{24}/, encodeURIComponent('n\u00f6pe ✓ \'"; DROP TABLE x --')) });
      problem(res, 404, 'not-found');
    });

    it('404 for a route that does not exist under a tenant, and for PUT/DELETE where only GET exists', async () => {
      problem(await svc.api('GET', `${base()}/nothing-here`), 404, 'not-found');
      problem(await svc.api('PUT', `${base()}/saved-payloads/${f.payload}`, { name: 'x', payload: {} }), 404, 'not-found');
      problem(await svc.api('DELETE', `${base()}/deliveries/${f.deadDelivery}`), 404, 'not-found');
      problem(await svc.api('GET', `${base()}/events/${f.event}/retry`), 404, 'not-found');
    });
  });

  describe('tenant isolation', () => {
    it.each(table(ROUTES))("B's key on A's path: %s answers 404, not 401 or 403", async (_name, route) => {
      problem(await send(route, { key: keyB }), 404, 'not-found');
    });

    it.each(table(ROUTES))("B's key on A's path with an unknown id or extra segment: %s answers 404", async (_name, route) => {
      problem(await send(route, { key: keyB, path: route.byId?.unknown ?? `${route.path(f)}/x` }), 404, 'not-found');
    });

    it("A's objects are untouched by B's writes on A's path", async () => {
      expect((await svc.api('GET', `${base()}/destinations/${f.dest}`)).status).toBe(200);
      expect((await svc.api('GET', `${base()}/ingesters/${f.ingester}`)).body.name).toBe('contract ingester');
      expect((await svc.api('GET', `${base()}/delivery-flows/${f.flow}`)).status).toBe(200);
    });

    it.each(table(LISTS))("B's key on B's path: %s is empty", async (_name, route) => {
      const res = await send(route, { key: keyB, tenant: tenantB });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ [route.list!]: [], next_cursor: null });
    });

    it.each(table(BY_ID))("B's key on B's path with A's id: %s answers 404", async (_name, route) => {
      problem(await send(route, { key: keyB, tenant: tenantB }), 404, 'not-found');
    });

    it("B cannot reference A's destination or ingester from its own tenant", async () => {
      const ing = await svc.api('POST', `${base(tenantB)}/ingesters`, { name: 'b', provider: 'none', config: {}, destination_ids: [f.dest] }, { key: keyB });
      problem(ing, 400, 'validation-error');
      expect(ing.body.errors).toEqual([{ field: 'destination_ids[0]', message: expect.stringContaining('does not exist') }]);
      const flow = await svc.api('POST', `${base(tenantB)}/delivery-flows`, { name: 'b', ingester_id: f.ingester, destination_ids: [f.dest] }, { key: keyB });
      problem(flow, 400, 'validation-error');
      expect(flow.body.errors.map((e: { field: string }) => e.field)).toEqual(['ingester_id', 'destination_ids[0]']);
    });

    it("names and Idempotency-Keys are per tenant: B may reuse A's", async () => {
      const headers = { 'idempotency-key': 'contract-shared-key' };
      const a = await svc.api('POST', `${base()}/saved-payloads`, { name: 'shared', payload: { t: 'a' } }, { headers });
      const b = await svc.api('POST', `${base(tenantB)}/saved-payloads`, { name: 'shared', payload: { t: 'b' } }, { key: keyB, headers });
      expect([a.status, b.status]).toEqual([201, 201]);
      expect(b.body.id).not.toBe(a.body.id);
      expect(b.headers.get('idempotent-replayed')).toBeNull();
      const dest = await svc.api('POST', `${base(tenantB)}/destinations`, { name: 'contract-a', url: RECEIVER_URL }, { key: keyB });
      expect(dest.status).toBe(201);
      expect((await svc.api('GET', `${base()}/destinations/${dest.body.id}`)).status).toBe(404);
    });
  });

  describe('success answers carry the fields of spec part 2', () => {
    it('POST /destinations: 201 with id, name, url, status active, created_at, once the signing secret', async () => {
      const name = uniq('created');
      const res = await svc.api('POST', `${base()}/destinations`, { name, url: RECEIVER_URL });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ id: expect.stringMatching(/^dst_[0-9a-z]{26}$/), name, url: RECEIVER_URL, status: 'active', signing_secret: expect.stringMatching(/^whsec_/) });
      expect(isIsoUtc(res.body.created_at)).toBe(true);
      expect(Math.abs(Date.parse(res.body.created_at) - Date.now())).toBeLessThan(60_000);
      expect(res.headers.get('location')).toBe(`${base()}/destinations/${res.body.id}`);
      const again = await svc.api('GET', `${base()}/destinations/${res.body.id}`);
      expect(again.body).toMatchObject({ id: res.body.id, name, url: RECEIVER_URL, status: 'active', created_at: res.body.created_at });
      expect(again.body.signing_secret).toBeUndefined();
    });

    it('GET /destinations: {destinations, next_cursor}, every item with the destination fields and no secret', async () => {
      const res = await svc.api('GET', `${base()}/destinations`);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['destinations', 'next_cursor']);
      expect(res.body.destinations.map((d: { id: string }) => d.id)).toEqual(expect.arrayContaining([f.dest, f.dest2, f.deadDest]));
      for (const d of res.body.destinations) {
        expect(d).toMatchObject({ id: expect.stringMatching(/^dst_/), name: expect.any(String), url: expect.any(String), status: expect.any(String) });
        expect(isIsoUtc(d.created_at)).toBe(true);
        expect(d.signing_secret).toBeUndefined();
      }
    });

    it('DELETE /destinations/{id}: 204 without a body, then 404', async () => {
      const d = await created(svc.api('POST', `${base()}/destinations`, { name: uniq('gone'), url: RECEIVER_URL }));
      const res = await svc.api('DELETE', `${base()}/destinations/${d.id}`);
      expect(res.status).toBe(204);
      expect(res.body).toBeUndefined();
      problem(await svc.api('GET', `${base()}/destinations/${d.id}`), 404, 'not-found');
    });

    it('ingesters: POST 201, GET one, GET list, PUT 200, DELETE 204', async () => {
      const post = await svc.api('POST', `${base()}/ingesters`, { name: 'shape', provider: 'generic', config: { signing_secret: 'contract-secret' }, destination_ids: [f.dest] });
      expect(post.status).toBe(201);
      expect(post.body).toMatchObject({
        id: expect.stringMatching(/^ing_[0-9a-z]{26}$/), name: 'shape', provider: 'generic', config: { signing_secret: '****ret' },
        hook_url: `${svc.url}/v1/hooks/${post.body.id}`, filters: [], delivery_flows: [{ id: expect.stringMatching(/^flw_/), name: expect.any(String), destination_ids: [f.dest] }],
      });
      expect(isIsoUtc(post.body.created_at) && isIsoUtc(post.body.updated_at)).toBe(true);
      expect(post.headers.get('location')).toBe(`${base()}/ingesters/${post.body.id}`);
      expect((await svc.api('GET', `${base()}/ingesters/${post.body.id}`)).body).toEqual(post.body);
      const list = await svc.api('GET', `${base()}/ingesters`);
      expect(Object.keys(list.body).sort()).toEqual(['ingesters', 'next_cursor']);
      expect(list.body.ingesters.find((i: { id: string }) => i.id === post.body.id)).toEqual(post.body);
      const put = await svc.api('PUT', `${base()}/ingesters/${post.body.id}`, { name: 'shape renamed' });
      expect(put.status).toBe(200);
      expect(put.body).toMatchObject({ id: post.body.id, name: 'shape renamed', provider: 'generic', config: { signing_secret: '****ret' } });
      expect(Date.parse(put.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(post.body.updated_at));
      const del = await svc.api('DELETE', `${base()}/ingesters/${post.body.id}`);
      expect([del.status, del.body]).toEqual([204, undefined]);
      problem(await svc.api('GET', `${base()}/ingesters/${post.body.id}`), 404, 'not-found');
    });

    it('delivery flows: POST 201, GET one, GET list, PUT 200, DELETE 204', async () => {
      const post = await svc.api('POST', `${base()}/delivery-flows`, { name: 'shape flow', ingester_id: f.ingester, destination_ids: [f.dest, f.dest, f.dest2] });
      expect(post.status).toBe(201);
      expect(post.body).toMatchObject({ id: expect.stringMatching(/^flw_[0-9a-z]{26}$/), name: 'shape flow', ingester_id: f.ingester, destination_ids: [f.dest, f.dest2] });
      expect(isIsoUtc(post.body.created_at) && isIsoUtc(post.body.updated_at)).toBe(true);
      expect((await svc.api('GET', `${base()}/delivery-flows/${post.body.id}`)).body).toEqual(post.body);
      const list = await svc.api('GET', `${base()}/delivery-flows`);
      expect(Object.keys(list.body).sort()).toEqual(['delivery_flows', 'next_cursor']);
      expect(list.body.delivery_flows.find((x: { id: string }) => x.id === post.body.id)).toEqual(post.body);
      const put = await svc.api('PUT', `${base()}/delivery-flows/${post.body.id}`, { name: 'shape flow 2', destination_ids: [f.dest2] });
      expect(put.status).toBe(200);
      expect(put.body).toMatchObject({ id: post.body.id, name: 'shape flow 2', ingester_id: f.ingester, destination_ids: [f.dest2] });
      expect((await svc.api('DELETE', `${base()}/delivery-flows/${post.body.id}`)).status).toBe(204);
      problem(await svc.api('GET', `${base()}/delivery-flows/${post.body.id}`), 404, 'not-found');
    });

    it('saved payloads: POST 201 {id, name, payload, created_at}, GET one, GET list', async () => {
      const post = await svc.api('POST', `${base()}/saved-payloads`, { name: ' shaped ', payload: { nested: { a: [1, 'two', null] } } });
      expect(post.status).toBe(201);
      expect(post.body).toEqual({ id: expect.stringMatching(/^pld_[0-9a-z]{26}$/), name: 'shaped', payload: { nested: { a: [1, 'two', null] } }, created_at: expect.any(String) });
      expect(isIsoUtc(post.body.created_at)).toBe(true);
      expect((await svc.api('GET', `${base()}/saved-payloads/${post.body.id}`)).body).toEqual(post.body);
      const list = await svc.api('GET', `${base()}/saved-payloads`);
      expect(Object.keys(list.body).sort()).toEqual(['next_cursor', 'saved_payloads']);
      expect(list.body.saved_payloads.find((p: { id: string }) => p.id === post.body.id)).toEqual(post.body);
    });

    it('dead letters: GET list and one with stage, reason and place; POST replay 202 once the cause is fixed, then 409', async () => {
      const list = await svc.api('GET', `${base()}/dead-letters`);
      expect(Object.keys(list.body).sort()).toEqual(['dead_letters', 'next_cursor']);
      const item = list.body.dead_letters.find((l: { id: string }) => l.id === f.deadLetter);
      expect(item).toEqual({
        id: f.deadLetter, stage: 'filter', reason: expect.stringMatching(/^filter not evaluated: /), at: expect.any(String), event_id: f.deadLetterEvent, record: 'WebhookEvent', resource_id: f.deadLetterIngester,
        source: { topic: svc.service.topics.received, partition: expect.any(Number), offset: expect.any(Number) }, replayed_at: null, replayed_by: null,
      });
      expect(isIsoUtc(item.at)).toBe(true);
      const one = await svc.api('GET', `${base()}/dead-letters/${f.deadLetter}`);
      expect(one.body).toEqual({ ...item, key_base64: expect.any(String), value_base64: expect.any(String), value_bytes: expect.any(Number), value_sha256: expect.stringMatching(/^[0-9a-f]{64}$/), value_expired: false });
      expect((await svc.api('PUT', `${base()}/ingesters/${f.deadLetterIngester}`, { name: 'contract dead letters', filters: [{ type: 'header', name: 'x-tag', op: 'matches', pattern: '^t' }] })).status).toBe(200);
      const replayed = await svc.api('POST', `${base()}/dead-letters/${f.deadLetter}/replay`);
      expect(replayed.status).toBe(202);
      expect(replayed.body).toMatchObject({ status: 'replayed', dead_letter_id: f.deadLetter, event_id: f.deadLetterEvent, source: item.source, written: { topic: item.source.topic } });
      problem(await svc.api('POST', `${base()}/dead-letters/${f.deadLetter}/replay`), 409, 'conflict');
      await waitForStates(svc, f.deadLetterEvent, ['replayed', 'filtered']);
    });

    it('GET /deliveries: {deliveries, next_cursor}, every item with the delivery fields', async () => {
      const res = await svc.api('GET', `${base()}/deliveries`);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['deliveries', 'next_cursor']);
      expect(res.body.next_cursor).toBeNull();
      const dead = res.body.deliveries.find((d: { id: string }) => d.id === f.deadDelivery);
      expect(dead).toEqual({ id: f.deadDelivery, event_id: f.event, destination_id: f.deadDest, status: 'failed', response_code: 500, attempt_number: 1, attempted_at: expect.any(String), body_sha256: expect.stringMatching(/^[0-9a-f]{64}$/), error_message: expect.any(String), event_type: null, trace_id: expect.stringMatching(/^[0-9a-f]{32}$/) });
      for (const d of res.body.deliveries) {
        expect(d).toMatchObject({ id: expect.stringMatching(/^dlv_/), event_id: expect.stringMatching(/^evt_/), destination_id: expect.stringMatching(/^dst_/), status: expect.stringMatching(/^(delivered|retrying|failed)$/), attempt_number: expect.any(Number) });
        expect(Number.isInteger(d.attempt_number)).toBe(true);
        expect(d.response_code === null || Number.isInteger(d.response_code)).toBe(true);
        expect(isIsoUtc(d.attempted_at)).toBe(true);
      }
      const failed = await svc.api('GET', `${base()}/deliveries?status=failed`);
      expect(failed.body.deliveries.length).toBeGreaterThan(0);
      expect(failed.body.deliveries.every((d: { status: string }) => d.status === 'failed')).toBe(true);
    });

    it('GET /deliveries/{id}: the latest attempt and all attempts', async () => {
      const res = await svc.api('GET', `${base()}/deliveries/${f.deadDelivery}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: f.deadDelivery, event_id: f.event, destination_id: f.deadDest, status: 'failed', response_code: 500, attempt_number: 1, error_message: expect.any(String) });
      expect(isIsoUtc(res.body.attempted_at)).toBe(true);
      expect(res.body.attempts).toEqual([{ attempt_number: 1, status: 'failed', response_code: 500, attempted_at: res.body.attempted_at, body_sha256: res.body.body_sha256, error_message: expect.any(String), response_body: 'ok', trace_id: res.body.trace_id }]);
      expect(res.body.trace_id).toMatch(/^[0-9a-f]{32}$/);
    });

    it('GET /logs: {logs, next_cursor}, every entry with id, timestamp, level, message', async () => {
      const res = await svc.api('GET', `${base()}/logs`);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['logs', 'next_cursor']);
      expect(res.body.logs.map((l: { message: string }) => l.message)).toContain('contract log line');
      for (const l of res.body.logs) {
        expect(l).toMatchObject({ id: expect.any(String), level: expect.any(String), message: expect.any(String), fields: expect.any(Object) });
        expect(LOG_LEVELS).toContain(l.level);
        expect(isIsoUtc(l.timestamp)).toBe(true);
      }
    });
  });

  describe('409 conflict', () => {
    it('a duplicate destination name, also with surrounding blanks, is a 409 conflict; the first stays alone', async () => {
      const name = uniq('dup');
      expect((await svc.api('POST', `${base()}/destinations`, { name, url: RECEIVER_URL })).status).toBe(201);
      problem(await svc.api('POST', `${base()}/destinations`, { name, url: 'http://127.0.0.1:9/other' }), 409, 'conflict');
      problem(await svc.api('POST', `${base()}/destinations`, { name: `  ${name} `, url: RECEIVER_URL }), 409, 'conflict');
      const list = await svc.api('GET', `${base()}/destinations?limit=200`);
      expect(list.body.destinations.filter((d: { name: string }) => d.name === name)).toHaveLength(1);
    });
  });

  describe('part 4 rules 1 and 2: Idempotency-Key on every write route', () => {
    interface WriteCase {
      name: string;
      /** Makes what the write needs; returns the request, another body, and how to count what it made. */
      prepare(): Promise<{ method: string; path: string; body: unknown; otherBody: unknown; count?: () => Promise<number> }>;
    }
    const countNamed = (path: string, member: string, name: string) => async () =>
      (await svc.api('GET', `${base()}${path}?limit=200`)).body[member].filter((x: { name: string }) => x.name === name).length;
    const CASES: WriteCase[] = [
      {
        name: 'POST /destinations',
        async prepare() {
          const name = uniq('idem-dest');
          return { method: 'POST', path: '/destinations', body: { name, url: RECEIVER_URL }, otherBody: { name: `${name}-2`, url: RECEIVER_URL }, count: countNamed('/destinations', 'destinations', name) };
        },
      },
      {
        name: 'DELETE /destinations/{id}',
        async prepare() {
          const d = await created(svc.api('POST', `${base()}/destinations`, { name: uniq('idem-del'), url: RECEIVER_URL }));
          return { method: 'DELETE', path: `/destinations/${d.id}`, body: undefined, otherBody: {} };
        },
      },
      {
        name: 'POST /ingesters',
        async prepare() {
          const name = uniq('idem-ing');
          return { method: 'POST', path: '/ingesters', body: { name, provider: 'none', config: {}, destination_ids: [f.dest] }, otherBody: { name, provider: 'none', config: {} }, count: countNamed('/ingesters', 'ingesters', name) };
        },
      },
      {
        name: 'PUT /ingesters/{id}',
        async prepare() {
          const i = await created(svc.api('POST', `${base()}/ingesters`, { name: uniq('idem-put'), provider: 'none', config: {} }));
          return { method: 'PUT', path: `/ingesters/${i.id}`, body: { name: 'renamed once' }, otherBody: { name: 'renamed twice' } };
        },
      },
      {
        name: 'DELETE /ingesters/{id}',
        async prepare() {
          const i = await created(svc.api('POST', `${base()}/ingesters`, { name: uniq('idem-del'), provider: 'none', config: {} }));
          return { method: 'DELETE', path: `/ingesters/${i.id}`, body: undefined, otherBody: { cascade: true } };
        },
      },
      {
        name: 'POST /delivery-flows',
        async prepare() {
          const name = uniq('idem-flow');
          return { method: 'POST', path: '/delivery-flows', body: { name, ingester_id: f.ingester, destination_ids: [f.dest] }, otherBody: { name, ingester_id: f.ingester, destination_ids: [f.dest2] }, count: countNamed('/delivery-flows', 'delivery_flows', name) };
        },
      },
      {
        name: 'PUT /delivery-flows/{id}',
        async prepare() {
          const fl = await created(svc.api('POST', `${base()}/delivery-flows`, { name: uniq('idem-put-flow'), ingester_id: f.ingester, destination_ids: [f.dest] }));
          return { method: 'PUT', path: `/delivery-flows/${fl.id}`, body: { name: 'flow once', destination_ids: [f.dest2] }, otherBody: { name: 'flow once', destination_ids: [f.dest] } };
        },
      },
      {
        name: 'DELETE /delivery-flows/{id}',
        async prepare() {
          const fl = await created(svc.api('POST', `${base()}/delivery-flows`, { name: uniq('idem-del-flow'), ingester_id: f.ingester, destination_ids: [f.dest] }));
          return { method: 'DELETE', path: `/delivery-flows/${fl.id}`, body: undefined, otherBody: null };
        },
      },
      {
        name: 'POST /saved-payloads',
        async prepare() {
          const name = uniq('idem-payload');
          return { method: 'POST', path: '/saved-payloads', body: { name, payload: { n: 1 } }, otherBody: { name, payload: { n: 2 } }, count: countNamed('/saved-payloads', 'saved_payloads', name) };
        },
      },
    ];

    it.each(CASES.map((c) => [c.name, c] as const))('%s: the same request replays the original answer, another body is 409 idempotency-conflict', async (_name, c) => {
      const req = await c.prepare();
      const key = `contract-${uniq('key')}`;
      const call = (body: unknown) => svc.api(req.method, `${base()}${req.path}`, body, { headers: { 'idempotency-key': key } });
      const first = await call(req.body);
      expect(first.status).toBeGreaterThanOrEqual(200);
      expect(first.status).toBeLessThan(300);
      expect(first.headers.get('idempotent-replayed')).toBeNull();
      const second = await call(req.body);
      expect(second.status).toBe(first.status);
      expect(second.body).toEqual(first.body);
      expect(second.headers.get('idempotent-replayed')).toBe('true');
      if (first.headers.get('location')) expect(second.headers.get('location')).toBe(first.headers.get('location'));
      if (req.count) expect(await req.count()).toBe(1);
      if (req.method === 'DELETE') {
        // run again without the key it would be a 404: the replay did not run the delete a second time
        problem(await svc.api(req.method, `${base()}${req.path}`), 404, 'not-found');
      }
      const conflict = await call(req.otherBody);
      problem(conflict, 409, 'idempotency-conflict');
      expect(conflict.body.idempotency_key).toBe(key);
      if (req.count) expect(await req.count()).toBe(1);
    });

    it('a 4xx answer is kept too: its replay is the original problem (its instance is the first request id)', async () => {
      const headers = { 'idempotency-key': `contract-${uniq('bad')}` };
      const first = await svc.api('POST', `${base()}/destinations`, { name: '', url: 'ftp://x' }, { headers });
      problem(first, 400, 'validation-error');
      const second = await svc.api('POST', `${base()}/destinations`, { name: '', url: 'ftp://x' }, { headers });
      expect(second.status).toBe(400);
      expect(second.body).toEqual(first.body);
      expect(second.headers.get('idempotent-replayed')).toBe('true');
      expect(problemViolations(second, errorBase())).toEqual([]);
      expect(second.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'));
    });

    it('an Idempotency-Key that is not 1 to 255 printable ASCII characters is a 400', async () => {
      for (const key of ['', 'x'.repeat(256), 'tab\there']) {
        const res = await svc.api('POST', `${base()}/saved-payloads`, { name: uniq('k'), payload: {} }, { headers: { 'idempotency-key': key } });
        problem(res, 400, 'validation-error');
        expect(res.body.errors).toEqual([{ field: 'Idempotency-Key', message: expect.any(String) }]);
      }
    });
  });

  describe('POST /events/{id}/retry of a dead delivery (runs after every check that must not consume it)', () => {
    it('202 {status: queued, delivery_id, message}; the same Idempotency-Key replays it, another body is 409, a new retry is 409 conflict', async () => {
      receiver.respondWith(200);
      const key = `contract-${uniq('retry')}`;
      const path = `${base()}/events/${f.event}/retry`;
      const first = await svc.api('POST', path, undefined, { headers: { 'idempotency-key': key } });
      expect(first.status).toBe(202);
      expect(first.body).toMatchObject({ status: 'queued', delivery_id: expect.stringMatching(/^dlv_[0-9a-z]{26}$/), message: expect.any(String) });
      expect(first.body.delivery_id).not.toBe(f.deadDelivery);
      const replay = await svc.api('POST', path, undefined, { headers: { 'idempotency-key': key } });
      expect([replay.status, replay.headers.get('idempotent-replayed')]).toEqual([202, 'true']);
      expect(replay.body).toEqual(first.body);
      const other = await svc.api('POST', path, {}, { headers: { 'idempotency-key': key } });
      problem(other, 409, 'idempotency-conflict');
      expect(other.body.idempotency_key).toBe(key);
      // the retried delivery reaches the receiver once: the replay queued nothing
      await receiver.waitForRequests(2);
      await new Promise((r) => setTimeout(r, 500));
      expect(receiver.requests.filter((q) => q.headers['webhook-id'] === first.body.delivery_id)).toHaveLength(1);
      problem(await svc.api('POST', path), 409, 'conflict');
    });
  });

  describe('part 4 rule 3: cursor paging', () => {
    const now = Date.now();
    const deliveryIds = Array.from({ length: 8 }, (_, i) => newId('delivery', now - 60_000 + i * 1000));
    const logIds = Array.from({ length: 7 }, (_, i) => newId('log', now - 60_000 + i * 1000));
    const logLevels = ['debug', 'info', 'warn', 'error', 'warn', 'error', 'info'];

    beforeAll(async () => {
      // tenant C: delivery attempts (5 failed, 3 delivered) and log lines written as the sink writes them
      await svc.clickhouse.insert({
        table: `${svc.config.clickhouseDatabase}.deliveries`,
        values: deliveryIds.map((id, i) => deliveryRow({
          delivery_id: id, event_id: `evt_page${i}`, tenant_id: tenantC, destination_id: 'dst_page', correlation_id: 'c', attempt_number: 1,
          status: i % 3 === 2 ? 'delivered' : 'failed', response_code: i % 3 === 2 ? 200 : 500, attempted_at: now - 60_000 + i * 1000, duration_ms: 1,
          error_message: i % 3 === 2 ? null : 'the destination answered 500', body_sha256: 'x', next_attempt_at: null,
        })),
        format: 'JSONEachRow',
      });
      await svc.clickhouse.insert({
        table: `${svc.config.clickhouseDatabase}.logs`,
        values: logIds.map((id, i) => logRow({ id, ts: now - 60_000 + i * 1000, level: logLevels[i]!, message: `line ${i}`, stage: 'deliver', tenant_id: tenantC, event_id: null, delivery_id: null, destination_id: null, ingester_id: null, correlation_id: null, fields: '{}' })),
        format: 'JSONEachRow',
      });
    });

    const pageAll = async (path: string, member: string, limit: number) => {
      const pages: string[][] = [];
      let cursor: string | null = null;
      do {
        const sep = path.includes('?') ? '&' : '?';
        const res: Answer = await svc.api('GET', `${base(tenantC)}${path}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, undefined, { key: keyC });
        expect(res.status).toBe(200);
        expect(res.body[member].length).toBeLessThanOrEqual(limit);
        pages.push(res.body[member].map((x: { id: string }) => x.id));
        cursor = res.body.next_cursor;
        if (cursor !== null) expect(typeof cursor).toBe('string');
        expect(pages.length).toBeLessThan(20);
      } while (cursor);
      return pages;
    };

    it.each([
      ['destinations', '/destinations', (i: number) => ({ name: `page-${i}`, url: RECEIVER_URL })],
      ['saved_payloads', '/saved-payloads', (i: number) => ({ name: `page-${i}`, payload: { i } })],
      ['ingesters', '/ingesters', (i: number) => ({ name: `page-${i}`, provider: 'none', config: {} })],
    ] as const)('%s: the next_cursor with the same query gives the next page, in creation order, without duplicates', async (member, path, body) => {
      const made: string[] = [];
      for (let i = 0; i < 5; i++) made.push((await created(svc.api('POST', `${base(tenantC)}${path}`, body(i), { key: keyC }))).id);
      expect(await pageAll(path, member, 2)).toEqual([made.slice(0, 2), made.slice(2, 4), made.slice(4)]);
    });

    it('delivery_flows: the same', async () => {
      const ing = await created(svc.api('POST', `${base(tenantC)}/ingesters`, { name: 'flows', provider: 'none', config: {} }, { key: keyC }));
      const dst = await created(svc.api('POST', `${base(tenantC)}/destinations`, { name: 'flows', url: RECEIVER_URL }, { key: keyC }));
      const made: string[] = [];
      for (let i = 0; i < 3; i++) made.push((await created(svc.api('POST', `${base(tenantC)}/delivery-flows`, { name: `f${i}`, ingester_id: ing.id, destination_ids: [dst.id] }, { key: keyC }))).id);
      expect(await pageAll('/delivery-flows', 'delivery_flows', 2)).toEqual([made.slice(0, 2), made.slice(2)]);
    });

    it('deliveries: newest first, filtered, the cursor continues with the same status filter', async () => {
      const failed = deliveryIds.filter((_, i) => i % 3 !== 2).reverse();
      expect(await pageAll('/deliveries?status=failed', 'deliveries', 2)).toEqual([failed.slice(0, 2), failed.slice(2, 4), failed.slice(4)]);
      expect((await pageAll('/deliveries', 'deliveries', 3)).flat()).toEqual([...deliveryIds].reverse());
    });

    it('logs: newest first, level as a minimum, the cursor continues with the same level filter', async () => {
      const warnOrWorse = logIds.filter((_, i) => ['warn', 'error'].includes(logLevels[i]!)).reverse();
      expect(await pageAll('/logs?level=warn', 'logs', 3)).toEqual([warnOrWorse.slice(0, 3), warnOrWorse.slice(3)]);
    });

    it('a cursor sent with other filters is a 400 validation-error naming the cursor', async () => {
      const first = await svc.api('GET', `${base(tenantC)}/deliveries?status=failed&limit=1`, undefined, { key: keyC });
      const cursor = encodeURIComponent(first.body.next_cursor);
      for (const query of [`status=delivered&cursor=${cursor}`, `cursor=${cursor}`, `status=retrying&limit=1&cursor=${cursor}`]) {
        const res = await svc.api('GET', `${base(tenantC)}/deliveries?${query}`, undefined, { key: keyC });
        problem(res, 400, 'validation-error');
        expect(res.body.errors).toEqual([{ field: 'cursor', message: expect.any(String) }]);
      }
      // the same filters with another page size continue
      expect((await svc.api('GET', `${base(tenantC)}/deliveries?status=failed&limit=3&cursor=${cursor}`, undefined, { key: keyC })).status).toBe(200);
      const logs = await svc.api('GET', `${base(tenantC)}/logs?level=info&limit=1`, undefined, { key: keyC });
      const logCursor = encodeURIComponent(logs.body.next_cursor);
      for (const query of [`level=error&cursor=${logCursor}`, `cursor=${logCursor}`]) {
        const res = await svc.api('GET', `${base(tenantC)}/logs?${query}`, undefined, { key: keyC });
        problem(res, 400, 'validation-error');
        expect(res.body.errors).toEqual([{ field: 'cursor', message: expect.any(String) }]);
      }
      // a deliveries cursor is no logs cursor
      problem(await svc.api('GET', `${base(tenantC)}/logs?cursor=${cursor}`, undefined, { key: keyC }), 400, 'validation-error');
    });

    it.each(table(LISTS))('%s: a cursor that is not one the API issued is a 400', async (_name, route) => {
      for (const junk of ['nope', '%%%', Buffer.from('{"p":"x","f":1}').toString('base64url'), Buffer.from('[1,2]').toString('base64url'), 'eyJwIjpbXX0']) {
        const res = await send(route, { path: `${route.path(f)}?cursor=${encodeURIComponent(junk)}` });
        problem(res, 400, 'validation-error');
      }
    });

    /** A cursor the API issued, with its position replaced: base64url JSON, readable and editable by any client. */
    const tampered = (cursor: string, position: unknown[]) => {
      const decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { p: unknown[]; f: string };
      return encodeURIComponent(Buffer.from(JSON.stringify({ ...decoded, p: position })).toString('base64url'));
    };

    // BUG: the position inside a cursor goes to ClickHouse unchecked; a cursor whose filter
    // fingerprint is intact but whose position is not a time/number makes the query fail: 500.
    it('GET /deliveries with an edited cursor (position not a time) is a 400, not a 500', async () => {
      const first = await svc.api('GET', `${base(tenantC)}/deliveries?limit=1`, undefined, { key: keyC });
      const res = await svc.api('GET', `${base(tenantC)}/deliveries?cursor=${tampered(first.body.next_cursor, ['not a time', 'dlv_x', 1])}`, undefined, { key: keyC });
      problem(res, 400, 'validation-error');
    });

    it('GET /deliveries with an edited cursor (negative attempt number) is a 400, not a 500', async () => {
      const first = await svc.api('GET', `${base(tenantC)}/deliveries?limit=1`, undefined, { key: keyC });
      const [at, id] = JSON.parse(Buffer.from(first.body.next_cursor, 'base64url').toString('utf8')).p as [string, string];
      const res = await svc.api('GET', `${base(tenantC)}/deliveries?cursor=${tampered(first.body.next_cursor, [at, id, -1])}`, undefined, { key: keyC });
      problem(res, 400, 'validation-error');
    });

    it('GET /logs with an edited cursor (position not a time) is a 400, not a 500', async () => {
      const first = await svc.api('GET', `${base(tenantC)}/logs?limit=1`, undefined, { key: keyC });
      const res = await svc.api('GET', `${base(tenantC)}/logs?cursor=${tampered(first.body.next_cursor, ['yesterday', 'log_x'])}`, undefined, { key: keyC });
      problem(res, 400, 'validation-error');
    });
  });

  describe('query validation', () => {
    it('422 unprocessable-entity for an unknown deliveries status', async () => {
      for (const status of ['lost', 'FAILED', '', 'failed,delivered', 'queued']) {
        problem(await svc.api('GET', `${base()}/deliveries?status=${encodeURIComponent(status)}`), 422, 'unprocessable-entity');
      }
      for (const status of ['delivered', 'retrying', 'failed']) expect((await svc.api('GET', `${base()}/deliveries?status=${status}`)).status).toBe(200);
    });

    it('422 unprocessable-entity for an unknown logs level', async () => {
      for (const level of ['loud', 'ERROR', '', 'fatal', 'warning']) {
        problem(await svc.api('GET', `${base()}/logs?level=${encodeURIComponent(level)}`), 422, 'unprocessable-entity');
      }
      for (const level of LOG_LEVELS) expect((await svc.api('GET', `${base()}/logs?level=${level}`)).status).toBe(200);
    });

    it.each(table(LISTS))('%s: 400 validation-error for a limit out of range or not an integer; 1 and 200 are fine', async (_name, route) => {
      for (const limit of ['0', '201', '-1', '1.5', 'abc', '', '1e2', '99999999999999999999', ' 5']) {
        const res = await send(route, { path: `${route.path(f)}?limit=${encodeURIComponent(limit)}` });
        problem(res, 400, 'validation-error');
        expect(res.body.errors).toEqual([{ field: 'limit', message: expect.any(String) }]);
      }
      problem(await send(route, { path: `${route.path(f)}?limit=1&limit=2` }), 400, 'validation-error');
      for (const limit of ['1', '200']) expect((await send(route, { path: `${route.path(f)}?limit=${limit}` })).status).toBe(200);
    });
  });

  describe('request bodies', () => {
    const writes = ROUTES.filter((r) => r.body && r.method !== 'DELETE');
    it.each(table(writes))('%s: invalid JSON is a 400, a body that is not an object a 400, a non-JSON content type a 415', async (_name, route) => {
      const path = `${base()}${route.path(f)}`;
      problem(await svc.api(route.method, path, '{"name":'), 400, 'validation-error');
      for (const body of ['[]', '"text"', '42', 'null']) {
        const res = await svc.api(route.method, path, body);
        problem(res, 400, 'validation-error');
        expect(res.body.errors).toContainEqual({ field: 'body', message: 'must be a JSON object' });
      }
      problem(await svc.api(route.method, path, JSON.stringify(route.body!(f)), { headers: { 'content-type': 'text/plain' } }), 415, 'unsupported-media-type');
      const bare = await rawRequest(svc.url, { method: route.method, path, headers: { authorization: `Bearer ${svc.apiKey}` }, body: JSON.stringify(route.body!(f)) });
      problem(bare as unknown as Answer, 415, 'unsupported-media-type');
    });

    it('a body above the limit is a 413 payload-too-large', async () => {
      problem(await svc.api('POST', `${base()}/destinations`, { name: 'x'.repeat(1_100_000), url: RECEIVER_URL }), 413, 'payload-too-large');
      problem(await svc.api('POST', `${base()}/saved-payloads`, { name: 'big', payload: { s: 'x'.repeat(300 * 1024) } }), 413, 'payload-too-large');
    });

    // BUG: a JSON body nested a few thousand levels deep overflows the stack of the recursive
    // canonical JSON of the Idempotency-Key fingerprint (api/idempotency.ts canonicalJson): 500.
    it('a deeply nested body with an Idempotency-Key is a 400, not a 500', async () => {
      const deep = `${'['.repeat(50_000)}${']'.repeat(50_000)}`;
      const res = await svc.api('POST', `${base()}/saved-payloads`, `{"name":${deep}}`, { headers: { 'idempotency-key': `contract-${uniq('deep')}` } });
      problem(res, 400, 'validation-error');
    });

    // BUG: a saved payload nested ~5,000 levels deep passes validation, then JSON.stringify of
    // the size check (api/routes/saved-payloads.ts) overflows the stack: 500.
    it('POST /saved-payloads with a deeply nested payload is a 4xx, not a 500', async () => {
      const deep = `${'['.repeat(50_000)}${']'.repeat(50_000)}`;
      const res = await svc.api('POST', `${base()}/saved-payloads`, `{"name":"deep","payload":{"a":${deep}}}`);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(problemViolations(res, errorBase())).toEqual([]);
    });

    // BUG: an ingester config nested deeply passes validation and fails when stored: 500.
    it('POST /ingesters with a deeply nested config is a 4xx, not a 500', async () => {
      const deep = `${'['.repeat(50_000)}${']'.repeat(50_000)}`;
      const res = await svc.api('POST', `${base()}/ingesters`, `{"name":"deep","provider":"none","config":{"a":${deep}}}`);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(problemViolations(res, errorBase())).toEqual([]);
    });
  });

  describe('paths and methods', () => {
    // BUG: a path parameter with a malformed percent-escape makes the router's decodeURIComponent
    // throw a URIError (status 400 but not `expose`), which api/problem.ts maps to a 500.
    it('a malformed percent-escape in the tenant segment is a 4xx, not a 500', async () => {
      const res = await svc.api('GET', '/v1/tenants/%ZZ/destinations');
      expect(res.status).toBeLessThan(500);
      expect(problemViolations(res, errorBase())).toEqual([]);
    });

    it('a malformed percent-escape in an id segment is a 4xx, not a 500', async () => {
      const res = await svc.api('GET', `${base()}/destinations/%E0%A4%A`);
      expect(res.status).toBeLessThan(500);
      expect(problemViolations(res, errorBase())).toEqual([]);
    });

    it('a malformed percent-escape in a Hook URL is a 4xx, not a 500', async () => {
      const res = await svc.api('POST', '/v1/hooks/%ZZ', { x: 1 }, { key: null });
      expect(res.status).toBeLessThan(500);
      expect(problemViolations(res, errorBase())).toEqual([]);
    });

    it('a method a collection does not have is a 4xx problem', async () => {
      for (const [method, path] of [['PATCH', '/destinations'], ['PUT', '/destinations'], ['DELETE', '/saved-payloads'], ['PATCH', '/ingesters'], ['PATCH', `/ingesters/${f.ingester}`], ['POST', '/deliveries'], ['POST', '/logs']] as const) {
        const res = await svc.api(method, `${base()}${path}`);
        expect([404, 405]).toContain(res.status);
        expect(problemViolations(res, errorBase())).toEqual([]);
      }
    });

    // DEVIATION: 405 answers (only /ingesters has them) carry no Allow header (RFC 9110 §15.5.6: MUST).
    it('a 405 method-not-allowed names the allowed methods in Allow', async () => {
      const res = await svc.api('PATCH', `${base()}/ingesters`);
      problem(res, 405, 'method-not-allowed');
      expect(res.headers.get('allow')).toMatch(/GET/);
    });

    // DEVIATION: a request Node's HTTP parser refuses (unknown method token) gets a bare 400 with
    // no problem document and no request id (no clientError handler on the server).
    it('a request with an unknown method token still gets a problem document', async () => {
      const res = await rawRequest(svc.url, { method: 'FROB', path: `${base()}/destinations`, headers: { authorization: `Bearer ${svc.apiKey}` } });
      expect(res.status).toBe(400);
      expect(problemViolations(res, errorBase())).toEqual([]);
    });

    it('a request whose headers exceed the server\'s limit is a 431 problem, not a 400', async () => {
      const headers = { authorization: `Bearer ${svc.apiKey}`, 'x-padding': 'x'.repeat(maxHeaderSize) };
      const res = await rawRequest(svc.url, { method: 'GET', path: `${base()}/destinations`, headers });
      expectProblem(res, 431, 'request-header-fields-too-large', errorBase());
      expect(res.headers.connection).toBe('close');
      // just under the limit the same request is answered by the route
      const under = await rawRequest(svc.url, { method: 'GET', path: `${base()}/destinations`, headers: { ...headers, 'x-padding': 'x'.repeat(maxHeaderSize - 1024) } });
      expect(under.status).toBe(200);
    });
  });

  // DEVIATION (minor): ERROR_BASE defaults to the public base URL, but with PORT=0 the service
  // fixes up the public base URL (Hook URLs) to the bound port and not the error base, so every
  // problem type is http://127.0.0.1:0/errors/<slug> (service/service.ts, core/config.ts).
  (process.env.ERROR_BASE || process.env.PUBLIC_BASE_URL ? it.skip : it)('without ERROR_BASE, problem types live under the same base URL as the Hook URLs', async () => {
    const ing = await created(svc.api('POST', `${base()}/ingesters`, { name: uniq('base'), provider: 'none', config: {} }));
    const hookBase = new URL(ing.hook_url).origin;
    const res = await svc.api('GET', `${base()}/destinations/${UNKNOWN.dst}`);
    expect(res.body.type).toBe(`${hookBase}/errors/not-found`);
  });

  it('every answer carries an X-Request-Id, and the header differs per request', async () => {
    const a = await svc.api('GET', `${base()}/destinations`);
    const b = await svc.api('GET', `${base()}/destinations`);
    expect(a.headers.get('x-request-id')).toMatch(/^req_[0-9a-z]{26}$/);
    expect(headerOf(b, 'x-request-id')).not.toBe(a.headers.get('x-request-id'));
  });
});
