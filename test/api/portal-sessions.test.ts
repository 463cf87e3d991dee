import { problemViolations } from '../support/problem';
import { startTestService, type TestService } from '../support/service';
import { uniqueSuffix } from '../support/ids';

/**
 * Portal sessions against the running service: who may make a link and with what; the link opens
 * once, into an HttpOnly cookie that acts only with the X-Hookline-Portal header, within the
 * session's scopes, destinations and tenant; links and sessions expire; revoking and signing out
 * end a session at once; the page of a portal link may be framed only by its tenant's origins.
 */
describe('portal sessions', () => {
  let svc: TestService;
  let operator = '';
  const sfx = uniqueSuffix();
  const acme = `acme-${sfx}`;
  let acmeKey = '';
  let destA = '';
  let destB = '';
  let eventTypeId = '';
  const expectProblem = (res: { status: number; headers: Headers; body: any }, status: number, slug: string) => {
    expect({ status: res.status, type: res.body?.type, detail: res.body?.detail }).toEqual({ status, type: `${svc.config.errorBase}/errors/${slug}`, detail: expect.any(String) });
    expect(problemViolations(res, svc.config.errorBase)).toEqual([]);
  };
  const codeOf = (url: string) => url.split('#portal=')[1]!;
  const open = async (code: string) => {
    const res = await fetch(`${svc.url}/v1/portal/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code }) });
    const body = (await res.json().catch(() => undefined)) as any;
    return { status: res.status, headers: res.headers, body, cookie: /hookline_portal=([^;]+)/.exec(res.headers.get('set-cookie') ?? '')?.[1] };
  };
  /** A request in the portal session: its cookie and the header, no key. */
  const asPortal = (cookie: string, method: string, path: string, body?: unknown, header = true) =>
    svc.api(method, path, body, { key: null, headers: { cookie: `hookline_portal=${cookie}`, ...(header ? { 'x-hookline-portal': '1' } : {}) } });
  const newSession = async (body: unknown = {}, key = operator, tenant = acme) => {
    const res = await svc.api('POST', `/v1/tenants/${tenant}/portal-sessions`, body, { key });
    if (res.status !== 201) throw new Error(`no session: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as { id: string; url: string; scopes: string[]; destination_ids: string[] | null; expires_at: string; link_expires_at: string };
  };

  beforeAll(async () => {
    svc = await startTestService();
    operator = await svc.operatorKey();
    expect((await svc.api('POST', '/v1/tenants', { id: acme, name: 'Acme Corp', portal: { logo_url: 'https://acme.test/logo.png', accent_color: '#ff5500', frame_ancestors: ['https://app.acme.test', 'http://localhost:3000'] } }, { key: operator })).status).toBe(201);
    acmeKey = await svc.newKey(['write:destinations', 'read:destinations', 'write:portal-sessions', 'read:portal-sessions'], { tenantId: acme });
    destA = (await svc.api('POST', `/v1/tenants/${acme}/destinations`, { name: 'a', url: 'http://127.0.0.1:9/a' }, { key: acmeKey })).body.id;
    destB = (await svc.api('POST', `/v1/tenants/${acme}/destinations`, { name: 'b', url: 'http://127.0.0.1:9/b' }, { key: acmeKey })).body.id;
    eventTypeId = (await svc.api('POST', `/v1/tenants/${acme}/event-types`, { name: 'order.created' }, { key: await svc.newKey(['write:event-types'], { tenantId: acme }) })).body.id;
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('an operator, or a tenant key with write:portal-sessions, makes a link; others cannot', async () => {
    const s = await newSession();
    expect(s.url).toMatch(new RegExp(`^${svc.url}/ui/\\?tenant=${acme}#portal=hlc_[A-Za-z0-9_-]{43}$`));
    expect(s.scopes).toEqual(['read:destinations', 'write:destinations', 'read:event-types', 'read:deliveries', 'read:events', 'write:events', 'read:evidence', 'read:payloads', 'read:stats']);
    expect(Date.parse(s.expires_at) - Date.now()).toBeGreaterThan(3_500_000);
    // a tenant key: only scopes it holds, never scopes of keys or sessions
    const own = await newSession({ scopes: ['read:destinations'] }, acmeKey);
    expect(own.scopes).toEqual(['read:destinations']);
    expectProblem(await svc.api('POST', `/v1/tenants/${acme}/portal-sessions`, { scopes: ['read:deliveries'] }, { key: acmeKey }), 403, 'insufficient-scope');
    const barred = await svc.api('POST', `/v1/tenants/${acme}/portal-sessions`, { scopes: ['write:keys'], destination_ids: [`dst_${'0'.repeat(26)}`] }, { key: operator });
    expectProblem(barred, 400, 'validation-error');
    expect(barred.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(['destination_ids[0]', 'scopes[0]']);
    const noScope = await svc.newKey(['read:destinations'], { tenantId: acme });
    expectProblem(await svc.api('POST', `/v1/tenants/${acme}/portal-sessions`, {}, { key: noScope }), 403, 'insufficient-scope');
    // another tenant's key sees no such tenant; an operator, no tenant that does not exist
    expectProblem(await svc.api('POST', `/v1/tenants/${acme}/portal-sessions`, {}), 404, 'not-found');
    expectProblem(await svc.api('POST', `/v1/tenants/nobody-${sfx}/portal-sessions`, {}, { key: operator }), 404, 'not-found');
    const listed = await svc.api('GET', `/v1/tenants/${acme}/portal-sessions`, undefined, { key: acmeKey });
    expect(listed.body.portal_sessions.map((p: { id: string }) => p.id)).toEqual(expect.arrayContaining([s.id, own.id]));
    expect(JSON.stringify(listed.body)).not.toContain(codeOf(s.url));
  });

  it('the link opens once, into an HttpOnly cookie that acts within the session, and only with its header', async () => {
    const s = await newSession({ scopes: ['read:destinations', 'read:event-types'], destination_ids: [destA] });
    const opened = await open(codeOf(s.url));
    expect(opened.status).toBe(200);
    expect(opened.body).toEqual({ tenant_id: acme, scopes: ['read:destinations', 'read:event-types'], destination_ids: [destA], expires_at: s.expires_at });
    const setCookie = opened.headers.get('set-cookie')!;
    expect(setCookie).toMatch(/^hookline_portal=hls_[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=\d+$/);
    const cookie = opened.cookie!;
    // once only
    expectProblem(await open(codeOf(s.url)), 401, 'unauthorized');

    const me = await asPortal(cookie, 'GET', '/v1/me');
    expect(me.body).toMatchObject({ tenant_id: acme, key_id: s.id, scopes: ['read:destinations', 'read:event-types'], resource_ids: [destA], portal: { tenant_name: 'Acme Corp', logo_url: 'https://acme.test/logo.png', accent_color: '#ff5500' } });
    // only its destinations, only its scopes, only its tenant
    const list = await asPortal(cookie, 'GET', `/v1/tenants/${acme}/destinations`);
    expect(list.body.destinations.map((d: { id: string }) => d.id)).toEqual([destA]);
    expectProblem(await asPortal(cookie, 'GET', `/v1/tenants/${acme}/destinations/${destB}`), 403, 'permission-denied');
    // limited to some destinations, it still reads the tenant's catalogue
    expect((await asPortal(cookie, 'GET', `/v1/tenants/${acme}/event-types`)).body.event_types.map((t: { id: string }) => t.id)).toEqual([eventTypeId]);
    expectProblem(await asPortal(cookie, 'POST', `/v1/tenants/${acme}/destinations`, { name: 'c', url: 'http://127.0.0.1:9/c' }), 403, 'insufficient-scope');
    expectProblem(await asPortal(cookie, 'GET', `/v1/tenants/${svc.tenantId}/destinations`), 404, 'not-found');
    expectProblem(await asPortal(cookie, 'GET', '/v1/tenants'), 401, 'unauthorized');
    // the cookie alone (a request another site could make) does nothing
    expectProblem(await asPortal(cookie, 'GET', '/v1/me', undefined, false), 401, 'unauthorized');
    expectProblem(await asPortal('hls_' + 'x'.repeat(43), 'GET', '/v1/me'), 401, 'unauthorized');
  });

  it('revoking ends the session at once, and so does signing out', async () => {
    const s = await newSession();
    const cookie = (await open(codeOf(s.url))).cookie!;
    expect((await asPortal(cookie, 'GET', '/v1/me')).status).toBe(200);
    expect((await svc.api('DELETE', `/v1/tenants/${acme}/portal-sessions/${s.id}`, undefined, { key: acmeKey })).status).toBe(204);
    expectProblem(await asPortal(cookie, 'GET', '/v1/me'), 401, 'unauthorized');
    expectProblem(await svc.api('GET', `/v1/tenants/${acme}/portal-sessions/${s.id}`, undefined, { key: acmeKey }), 404, 'not-found');
    expectProblem(await svc.api('DELETE', `/v1/tenants/${acme}/portal-sessions/${s.id}`, undefined, { key: acmeKey }), 404, 'not-found');

    // a link revoked before it is opened does not open
    const unopened = await newSession();
    expect((await svc.api('DELETE', `/v1/tenants/${acme}/portal-sessions/${unopened.id}`, undefined, { key: operator })).status).toBe(204);
    expect((await open(codeOf(unopened.url))).status).toBe(401);

    const t = await newSession();
    const c2 = (await open(codeOf(t.url))).cookie!;
    const out = await fetch(`${svc.url}/v1/portal/session`, { method: 'DELETE', headers: { cookie: `hookline_portal=${c2}` } });
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toMatch(/^hookline_portal=; .*Max-Age=0$/);
    expectProblem(await asPortal(c2, 'GET', '/v1/me'), 401, 'unauthorized');
  });

  it('links and sessions expire', async () => {
    const unused = await newSession({ link_seconds: 10, session_seconds: 60 });
    const short = await newSession({ link_seconds: 10, session_seconds: 10 });
    const cookie = (await open(codeOf(short.url))).cookie!;
    expect((await asPortal(cookie, 'GET', '/v1/me')).status).toBe(200);
    await new Promise((r) => setTimeout(r, 11_000));
    expect((await open(codeOf(unused.url))).status).toBe(401);
    expectProblem(await asPortal(cookie, 'GET', '/v1/me'), 401, 'unauthorized');
    const live = (await svc.api('GET', `/v1/tenants/${acme}/portal-sessions`, undefined, { key: operator })).body.portal_sessions.map((p: { id: string }) => p.id);
    expect(live).toContain(unused.id);
    expect(live).not.toContain(short.id);
    expectProblem(await svc.api('POST', `/v1/tenants/${acme}/portal-sessions`, { session_seconds: 5, link_seconds: 100_000 }, { key: operator }), 400, 'validation-error');
  }, 30_000);

  it("the portal page may be framed by its tenant's origins only", async () => {
    const framed = await fetch(`${svc.url}/ui/?tenant=${acme}`);
    expect(framed.headers.get('content-security-policy')).toContain('frame-ancestors https://app.acme.test http://localhost:3000;');
    expect(framed.headers.get('x-frame-options')).toBeNull();
    for (const url of [`${svc.url}/ui/`, `${svc.url}/ui/?tenant=${svc.tenantId}`, `${svc.url}/ui/?tenant=nobody-${sfx}`]) {
      const res = await fetch(url);
      expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(res.headers.get('x-frame-options')).toBe('DENY');
    }
  });
});
