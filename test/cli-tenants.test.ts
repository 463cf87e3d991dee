import { runScript } from './support/process';
import { startTestService, type TestService } from './support/service';
import { uniqueSuffix } from './support/ids';

/**
 * An operator onboards a tenant in three commands (an operator key, the tenant, a portal link)
 * and manages it from the command line: limits, suspension, portal sessions, and the one-line
 * refusals (a tenant key, a malformed flag, deleting a tenant).
 */
describe('cli tenants and portal', () => {
  let svc: TestService;
  const sfx = uniqueSuffix();
  const env = (key?: string) => ({ ...process.env, TOPIC_PREFIX: svc.config.topicPrefix, DATA_DIR: svc.config.dataDir, HOOKLINE_API_URL: svc.url, ...(key ? { HOOKLINE_API_KEY: key } : {}) });
  const cli = async (args: string[], key?: string) => {
    const r = await runScript('cli/main.ts', args, env(key));
    return { ...r, json: r.code === 0 ? (JSON.parse(r.stdout) as Record<string, any>) : undefined };
  };
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('onboards a tenant in three commands, then changes, suspends and resumes it', async () => {
    const made = await cli(['keys', 'create', '--operator', '--name', 'ops']);
    expect(made.code).toBe(0);
    const operator = String(made.json!.api_key);
    expect(made.json).toMatchObject({ tenant_id: '*operator', scopes: [] });

    const id = `cli-${sfx}`;
    const tenant = await cli(['tenants', 'create', id, '--name', 'Acme from the CLI', '--accent-color', '#0a7cff', '--frame-ancestors', 'https://app.acme.test', '--metadata', 'plan=pro,region=eu'], operator);
    expect(tenant.code).toBe(0);
    expect(tenant.json).toMatchObject({ id, name: 'Acme from the CLI', metadata: { plan: 'pro', region: 'eu' }, portal: { accent_color: '#0a7cff', frame_ancestors: ['https://app.acme.test'] } });

    const link = await cli(['portal', 'link', '--tenant', id, '--scopes', 'read:destinations,write:destinations', '--session-seconds', '900'], operator);
    expect(link.code).toBe(0);
    expect(link.json!.url).toMatch(new RegExp(`^${svc.url}/ui/\\?tenant=${id}#portal=hlc_`));
    const opened = await fetch(`${svc.url}/v1/portal/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: String(link.json!.url).split('#portal=')[1] }) });
    expect(opened.status).toBe(200);

    const sessions = await cli(['portal', 'sessions', '--tenant', id], operator);
    expect(sessions.json!.portal_sessions.map((p: { id: string }) => p.id)).toEqual([link.json!.id]);
    expect((await cli(['portal', 'revoke', link.json!.id, '--tenant', id], operator)).json).toEqual({ revoked: true, id: link.json!.id });

    const limited = await cli(['tenants', 'update', id, '--ingest-per-hook', '50/1s', '--quota', 'destinations=5,ingesters=default', '--max-payload-bytes', '2048', '--retention', 'bodies=7d,attempts=12h,logs=default'], operator);
    expect(limited.json!.limits).toMatchObject({ ingest_per_hook: { limit: 50, window_seconds: 1 }, max_payload_bytes: 2048, quotas: { destinations: 5, ingesters: null }, retention: { bodies_seconds: 604_800, attempts_seconds: 43_200, logs_seconds: null } });
    expect((await cli(['tenants', 'suspend', id], operator)).json).toMatchObject({ state: 'suspended' });
    expect((await cli(['tenants', 'get', id], operator)).json).toMatchObject({ state: 'suspended' });
    expect((await cli(['tenants', 'resume', id], operator)).json).toMatchObject({ state: 'active', suspended_at: null });
    expect((await cli(['tenants', 'list', '--limit', '200'], operator)).json!.tenants.map((t: { id: string }) => t.id)).toContain(id);

    const keys = await cli(['keys', 'list', '--operator']);
    expect(keys.json!.api_keys.map((k: { id: string }) => k.id)).toContain(made.json!.key_id);
    expect((await cli(['keys', 'revoke', '--operator', '--id', String(made.json!.key_id)])).json).toMatchObject({ status: 'revoked' });
    const refused = await cli(['tenants', 'get', id], operator);
    expect(refused.code).toBe(1);
    expect(refused.stderr.split('\n')[0]).toMatch(/^401 unauthorized: the API key has been revoked/);
  }, 120_000);

  it.each([
    [['tenants', 'list'], 'tenant', /^403 permission-denied: only an operator key may manage tenants/],
    [['tenants', 'delete', 'acme'], 'operator', /^tenants delete erases acme for good .*run it again with --yes/],
    [['tenants', 'create', 'Bad Id', '--name', 'x'], 'operator', /is not a tenant id/],
    [['tenants', 'create', 'acme-x'], 'operator', /needs --name/],
    [['tenants', 'update', 'acme-x', '--ingest-per-hook', 'lots'], 'operator', /--ingest-per-hook: expected N\/window/],
    [['tenants', 'update', 'acme-x', '--retention', 'bodies=forever'], 'operator', /--retention: bodies: a tenant's period is at most 3650d/],
    [['tenants', 'update', 'acme-x', '--retention', 'bodies=3w'], 'operator', /--retention: bodies: expected a duration such as 30d/],
    [['tenants', 'update', 'acme-x', '--retention', 'bodys=3d'], 'operator', /--retention: "bodys=3d" is not <kind>=<period>/],
    [['tenants', 'frobnicate'], 'operator', /unknown command "tenants frobnicate"/],
    [['portal', 'link'], 'operator', /needs --tenant/],
    [['keys', 'create', '--operator', '--tenant', 'acme'], 'operator', /takes no --tenant/],
  ])('refuses %j with one line on stderr and exit 1', async (args, who, message) => {
    const key = who === 'operator' ? await svc.operatorKey() : svc.apiKey;
    const r = await cli(args, key);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.split('\n')[0]).toMatch(message);
  });

  it('deletes a tenant only with --yes, erasing it, and prints what was erased', async () => {
    const operator = await svc.operatorKey();
    const id = `gone-${sfx}`;
    expect((await cli(['tenants', 'create', id, '--name', 'Erased'], operator)).code).toBe(0);
    const unconfirmed = await cli(['tenants', 'delete', id], operator);
    expect(unconfirmed.code).toBe(1);
    expect((await cli(['tenants', 'get', id], operator)).json).toMatchObject({ id, state: 'active' });
    const r = await cli(['tenants', 'delete', id, '--yes'], operator);
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ erased: true, id });
    expect(r.json!.removed).toEqual(expect.arrayContaining([expect.stringMatching(/^config entities/), 'Redis keys', expect.stringMatching(/^ClickHouse rows/)]));
    const after = await cli(['tenants', 'get', id], operator);
    expect(after.code).toBe(1);
    expect(after.stderr.split('\n')[0]).toMatch(/^404 not-found/);
    expect((await cli(['tenants', 'delete', id, '--yes'], operator)).stderr.split('\n')[0]).toMatch(/^404 not-found/);
    // the host's key command, which makes tenants as it goes, does not bring an erased one back
    const again = await cli(['keys', 'create', '--tenant', id, '--scopes', 'all']);
    expect(again.code).toBe(1);
    expect(again.stderr.split('\n')[0]).toBe(`tenant ${id} was erased (or is being erased); its id is not given out again`);
  }, 60_000);
});
