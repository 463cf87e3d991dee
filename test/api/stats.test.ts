import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { newId } from '../../core/ids';
import { consumerGroups } from '../../core/topics';
import { deliveryRow } from '../../pipeline/sink/rows';
import { BreakerBoard } from '../../platform/redis/breaker-board';
import { MAX_EVENT_BODY_SHOWN } from '../../api/routes/events';
import { UI_CONTENT_SECURITY_POLICY } from '../../api/ui';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../api/app';
import { Logger } from '../../core/log';
import { healthProbe } from '../../service/health';
import { buildInfo } from '../../service/service';
import { runScript } from '../support/process';
import { startReceiver, type Receiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';
import { destinationWithIngester, waitForStates } from '../support/flow';

type Json = Record<string, any>;

/**
 * What the dashboard reads besides deliveries and evidence: GET .../stats (attempts per bucket of
 * the window by outcome, lag per stage, breakers of the tenant's destinations only), GET /v1/me
 * and GET .../events/{id}; the same through the CLI and the MCP tools; and /ui served with its
 * Content-Security-Policy.
 */
describe('stats, identity and received events', () => {
  let svc: TestService;
  let receiver: Receiver;
  let redis: Redis;
  let board: BreakerBoard;
  let destA = '';
  let destB = '';
  let hookA = '';
  const other = () => `${svc.tenantId}-other`;
  const base = () => `/v1/tenants/${svc.tenantId}`;

  /** Attempts written as the sink writes them: `n` of each status at `atMs`, to `destination`. */
  async function seedAttempts(tenant: string, destination: string, atMs: number, n: { delivered?: number; retrying?: number; failed?: number }): Promise<void> {
    const rows = Object.entries(n).flatMap(([status, k]) =>
      Array.from({ length: k ?? 0 }, (_, i) => deliveryRow({
        delivery_id: newId('delivery'), event_id: newId('event'), tenant_id: tenant, destination_id: destination, correlation_id: 'c', attempt_number: 1,
        status: status as 'delivered', response_code: status === 'delivered' ? 200 : 503, attempted_at: atMs + i, duration_ms: 3,
        error_message: status === 'delivered' ? null : 'the destination answered 503', body_sha256: 'x'.repeat(64), next_attempt_at: null,
      })),
    );
    // twice, as a sink that read its input again would: FINAL counts each attempt once
    for (let i = 0; i < 2; i++) await svc.clickhouse.insert({ table: `${svc.config.clickhouseDatabase}.deliveries`, values: rows, format: 'JSONEachRow' });
  }

  beforeAll(async () => {
    [svc, receiver] = await Promise.all([startTestService({ LOG_LEVEL: 'warn', EVIDENCE_BATCH_AGE_MS: '50' }), startReceiver()]);
    const a = await destinationWithIngester(svc, 'stats a', receiver.url);
    destA = a.destinationId;
    hookA = a.hookUrl;
    const b = await svc.api('POST', `${base()}/destinations`, { name: 'stats b', url: `${receiver.url}/b` });
    destB = b.body.id;
    redis = new Redis(svc.config.redisUrl!);
    board = new BreakerBoard(redis, svc.config.topicPrefix, { expiresMs: 120_000 });
  }, 120_000);

  afterAll(async () => {
    await board?.stop();
    redis?.disconnect();
    await Promise.all([svc?.stop(), receiver?.close()]);
  });

  it('GET /v1/me names the key\'s tenant, scopes and limits, never its secret', async () => {
    const limited = await svc.newKey(['read:stats'], { resourceIds: [destA] });
    const me = await svc.api('GET', '/v1/me', undefined, { key: limited });
    expect(me.status).toBe(200);
    expect(me.body).toEqual({ tenant_id: svc.tenantId, key_id: expect.stringMatching(/^key_/), name: null, scopes: ['read:stats'], resource_ids: [destA], expires_at: null });
    // the secret is everything after hlk_<ulid>_ (it may itself hold '_')
    const secret = limited.slice(limited.indexOf('_', 'hlk_'.length) + 1);
    expect(secret).toHaveLength(43);
    expect(JSON.stringify(me.body)).not.toContain(secret);
    expect((await svc.api('GET', '/v1/me', undefined, { key: null })).status).toBe(401);
    expect((await svc.api('GET', '/v1/me', undefined, { key: 'hlk_nope' })).status).toBe(401);
    expect(Number(me.headers.get('ratelimit-limit'))).toBeGreaterThan(0);
  });

  it('counts the tenant\'s attempts per bucket of the window, by outcome, and no other tenant\'s', async () => {
    const now = Date.now();
    const halfHourAgo = now - 30 * 60_000;
    await seedAttempts(svc.tenantId, destA, halfHourAgo, { delivered: 7, retrying: 2, failed: 1 });
    await seedAttempts(svc.tenantId, destB, halfHourAgo, { delivered: 3 });
    await seedAttempts(svc.tenantId, destA, now - 3 * 3600_000, { failed: 5 });
    await seedAttempts(other(), destA, halfHourAgo, { failed: 40 });

    const stats = await svc.api('GET', `${base()}/stats?window=1h`);
    expect(stats.status).toBe(200);
    const s = stats.body;
    expect(s).toMatchObject({ window_seconds: 3600, bucket_seconds: 60, buckets: expect.any(Array), destinations: 2 });
    expect(s.buckets).toHaveLength(60);
    expect(Date.parse(s.to) - Date.parse(s.from)).toBe(3600_000);
    expect(Date.parse(s.to)).toBeGreaterThan(now);
    const bucket = s.buckets.find((b: Json) => Date.parse(b.start) <= halfHourAgo && halfHourAgo < Date.parse(b.start) + 60_000);
    expect(bucket).toMatchObject({ delivered: 10, retrying: 2, failed: 1 });
    expect(s.totals).toEqual({ attempts: 13, delivered: 10, retrying: 2, failed: 1, error_rate: 3 / 13 });
    expect(s.buckets.filter((b: Json) => b !== bucket).every((b: Json) => b.delivered + b.retrying + b.failed === 0)).toBe(true);

    // the three hours reach the older failures; wider windows use wider buckets
    const wide = (await svc.api('GET', `${base()}/stats?window=24h`)).body;
    expect(wide).toMatchObject({ window_seconds: 86_400, bucket_seconds: 900, totals: { attempts: 18, failed: 6 } });
    expect(wide.buckets).toHaveLength(96);
    expect((await svc.api('GET', `${base()}/stats?window=6h`)).body.bucket_seconds).toBe(300);
    expect((await svc.api('GET', `${base()}/stats?window=15m`)).body).toMatchObject({ bucket_seconds: 60, totals: { attempts: 0, error_rate: null } });
    expect((await svc.api('GET', `${base()}/stats`)).body.window_seconds).toBe(3600);

    // a key limited to destination A counts and lists A only
    const limited = await svc.newKey(['read:stats'], { resourceIds: [destA] });
    const mine = (await svc.api('GET', `${base()}/stats`, undefined, { key: limited })).body;
    expect(mine.totals).toMatchObject({ attempts: 10, delivered: 7 });
    expect(mine.breakers.map((b: Json) => b.destination_id)).toEqual([destA]);
    expect(mine.destinations).toBe(1);
  });

  it('refuses a window it does not take, and answers only with the scope', async () => {
    for (const window of ['0m', '4m', '25h', '1d', '90s', 'abc', '']) {
      const r = await svc.api('GET', `${base()}/stats?window=${window}`);
      expect({ window, status: r.status, fields: r.body.errors?.map((e: Json) => e.field) }).toEqual({ window, status: 400, fields: ['window'] });
    }
    expect((await svc.api('GET', `${base()}/stats?window=1h&window=2h`)).status).toBe(400);
    const noScope = await svc.newKey(['read:deliveries']);
    const refused = await svc.api('GET', `${base()}/stats`, undefined, { key: noScope });
    expect(refused.status).toBe(403);
    expect(refused.body.required_scope).toBe('read:stats');
    const stranger = await svc.newKey(['read:stats'], { tenantId: other() });
    expect((await svc.api('GET', `${base()}/stats`, undefined, { key: stranger })).status).toBe(404);
  });

  it('shows the lag of every stage of the pipeline and the breakers of the tenant\'s destinations only', async () => {
    const otherDest = (await svc.api('POST', `/v1/tenants/${other()}/destinations`, { name: 'other', url: `${receiver.url}/o` }, { key: await svc.newKey(['write:destinations'], { tenantId: other() }) })).body.id;
    await board.record(svc.tenantId, destB, 'open', Date.now() - 5_000);
    await board.record(other(), otherDest, 'open');
    const s = await eventually('the open breaker', async () => {
      const r = (await svc.api('GET', `${base()}/stats`)).body;
      return r.breakers?.[0]?.state === 'open' ? r : undefined;
    });
    expect(s.breakers).toEqual([
      { destination_id: destB, name: 'stats b', status: 'active', state: 'open', since: expect.any(String) },
      { destination_id: destA, name: 'stats a', status: 'active', state: 'closed', since: null },
    ]);
    expect(Date.now() - Date.parse(s.breakers[0].since)).toBeGreaterThanOrEqual(5_000);
    expect(JSON.stringify(s)).not.toContain(otherDest);
    expect(s.lag.stages.map((l: Json) => l.stage)).toEqual(consumerGroups(svc.service.topics).map((g) => g.name));
    expect(s.lag.stages.every((l: Json) => Number.isInteger(l.lag) && l.lag >= 0)).toBe(true);
    await board.record(svc.tenantId, destB, 'closed');
  });

  it('GET .../events/{id} shows the body as received, text or binary, whole or cut, to the keys that may see it', async () => {
    const text = JSON.stringify({ order: 42, note: 'päyload <b>bold</b>' });
    const send = async (body: Buffer | string, contentType: string) => {
      const res = await fetch(hookA, { method: 'POST', headers: { 'content-type': contentType }, body });
      expect(res.status).toBe(202);
      return ((await res.json()) as Json).event_id as string;
    };
    const binary = Buffer.from([0xff, 0x00, 0xfe, 0x01, 0x80]);
    const large = `${'€'.repeat(30_000)}`; // 90,000 bytes of three-byte characters
    const ids = { text: await send(text, 'application/json'), binary: await send(binary, 'application/octet-stream'), large: await send(large, 'text/plain') };
    const get = (id: string, key?: string) => svc.api('GET', `${base()}/events/${id}`, undefined, { key });
    const shown = await eventually('the events stored', async () => {
      const all = await Promise.all(Object.values(ids).map((id) => get(id)));
      return all.every((r) => r.status === 200) ? all.map((r) => r.body) : undefined;
    });
    const [t, b, l] = shown as [Json, Json, Json];
    expect(t).toEqual({
      id: ids.text, ingester_id: expect.stringMatching(/^ing_/), correlation_id: expect.any(String), event_type: null, received_at: expect.any(String), content_type: 'application/json',
      body_sha256: createHash('sha256').update(text).digest('hex'), body: text, body_encoding: 'utf8', body_bytes: Buffer.byteLength(text), body_truncated: false, body_verified: true, body_expired: false,
    });
    expect(b).toMatchObject({ body: binary.toString('base64'), body_encoding: 'base64', body_bytes: 5, body_truncated: false, body_sha256: createHash('sha256').update(binary).digest('hex') });
    expect(l).toMatchObject({ body_encoding: 'utf8', body_bytes: 90_000, body_truncated: true });
    // cut at a character boundary, within the limit
    expect(l.body).toBe('€'.repeat(Math.floor(MAX_EVENT_BODY_SHOWN / 3)));

    expect((await get(newId('event'))).status).toBe(404);
    expect((await get(ids.text, await svc.newKey(['read:deliveries']))).body.required_scope).toBe('read:events');
    // limited keys: one of the event's destination (once delivered) or its ingester may read it; another may not
    await waitForStates(svc, ids.text, ['delivered']);
    expect((await get(ids.text, await svc.newKey(['read:events'], { resourceIds: [destA] }))).status).toBe(200);
    expect((await get(ids.text, await svc.newKey(['read:events'], { resourceIds: [t.ingester_id] }))).status).toBe(200);
    const denied = await get(ids.text, await svc.newKey(['read:events'], { resourceIds: [destB] }));
    expect(denied.status).toBe(403);
    expect(denied.body.resource_id).toBe(t.ingester_id);
    expect((await get(ids.text, await svc.newKey(['read:events'], { tenantId: other() }))).status).toBe(404);
  });

  it('the CLI and the MCP tools answer as the routes do', async () => {
    const env = { ...process.env, HOOKLINE_API_KEY: svc.apiKey, HOOKLINE_API_URL: svc.url, HOOKLINE_TENANT: svc.tenantId };
    const event = (await svc.api('GET', `${base()}/deliveries?limit=1&destination_id=${destA}&response_code=2xx`)).body.deliveries.find((d: Json) => d.event_id)?.event_id;
    const [stats, whoami, shown, badWindow, noId] = await Promise.all([
      runScript('cli/main.ts', ['stats', '--window', '24h'], env),
      runScript('cli/main.ts', ['whoami'], { ...env, HOOKLINE_TENANT: '' }),
      runScript('cli/main.ts', ['events', 'get', event], env),
      runScript('cli/main.ts', ['stats', '--window', '2d'], env),
      runScript('cli/main.ts', ['events', 'get'], env),
    ]);
    expect(stats.stderr).toBe('');
    expect(JSON.parse(stats.stdout)).toMatchObject({ window_seconds: 86_400, totals: { attempts: expect.any(Number) } });
    expect(JSON.parse(whoami.stdout)).toMatchObject({ tenant_id: svc.tenantId, scopes: expect.arrayContaining(['read:stats']) });
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: event, body_verified: true });
    expect(badWindow.code).toBe(1);
    expect(badWindow.stderr.trim()).toMatch(/^400 validation-error: window must be/);
    expect(noId.code).toBe(1);
    expect(noId.stderr).toMatch(/events get <event id>/);

    const client = new Client({ name: 'stats-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/v1/mcp`), { requestInit: { headers: { authorization: `Bearer ${svc.apiKey}` } } }));
    try {
      const call = async (name: string, args: Json = {}) => (await client.callTool({ name, arguments: args })) as { isError?: boolean; structuredContent?: Json };
      expect((await call('get_identity')).structuredContent).toMatchObject({ tenant_id: svc.tenantId });
      expect((await call('get_tenant_stats', { window: '24h' })).structuredContent).toMatchObject({ bucket_seconds: 900 });
      expect((await call('get_event', { event_id: event })).structuredContent).toMatchObject({ id: event });
      const refused = await call('get_tenant_stats', { window: '2d' });
      expect(refused.isError).toBe(true);
    } finally {
      await client.close();
    }
  }, 120_000);

  it('serves the dashboard at /ui with a strict Content-Security-Policy, and nothing but its files', async () => {
    for (const path of ['/ui', '/ui/']) {
      const page = await fetch(`${svc.url}${path}`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(page.headers.get('content-security-policy')).toBe(UI_CONTENT_SECURITY_POLICY);
      expect(UI_CONTENT_SECURITY_POLICY).toMatch(/^default-src 'self';/);
      expect(page.headers.get('x-content-type-options')).toBe('nosniff');
      expect(await page.text()).toContain('<script type="module" src="/ui/js/app.js"></script>');
    }
    const script = await fetch(`${svc.url}/ui/js/evidence.js`);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await script.text()).toContain('export async function verifyEvidence');
    for (const path of ['/ui/package.json', '/ui/js/nope.js', '/ui/../package.json', '/ui/%2e%2e/package.json', '/ui/js/../../api/app.ts']) {
      const r = await fetch(`${svc.url}${path}`);
      expect({ path, status: r.status }).toEqual({ path, status: 404 });
    }
    expect((await fetch(`${svc.url}/ui`, { method: 'POST' })).status).toBe(404);

    // a process without the API stage serves no dashboard
    const server = http.createServer(createApp({ errorBase: () => 'https://errors.example', log: new Logger('error'), probe: healthProbe({}), build: buildInfo(), services: () => undefined, serveApi: false, stages: ['deliver'] }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    try {
      const r = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/ui`);
      expect(r.status).toBe(404);
      expect(((await r.json()) as Json).detail).toMatch(/not the API/);
    } finally {
      server.close();
    }
  });
});
