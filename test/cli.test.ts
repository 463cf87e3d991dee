import { runScript } from './support/process';
import { startTestService, type TestService } from './support/service';

describe('cli keys create', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(async () => {
    await svc?.stop();
  });

  const env = () => ({ ...process.env, TOPIC_PREFIX: svc.config.topicPrefix, DATA_DIR: svc.config.dataDir });

  it('prints exactly one JSON object on stdout, and the key works at once', async () => {
    const tenant = `${svc.tenantId}-cli`;
    const r = await runScript('cli/main.ts', ['keys', 'create', '--tenant', tenant, '--scopes', 'read:destinations,write:destinations'], env());
    expect(r.code).toBe(0);
    expect(r.stdout.endsWith('\n')).toBe(true);
    expect(r.stdout.trim().split('\n')).toHaveLength(1);
    const key = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(Object.keys(key).sort()).toEqual(['api_key', 'key_id', 'scopes', 'tenant_id']);
    expect(key.tenant_id).toBe(tenant);
    expect(key.scopes).toEqual(['read:destinations', 'write:destinations']);
    const res = await svc.api('GET', `/v1/tenants/${tenant}/destinations`, undefined, { key: String(key.api_key) });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ destinations: [], next_cursor: null });
    // the scopes are enforced
    const denied = await svc.api('GET', `/v1/tenants/${tenant}/deliveries`, undefined, { key: String(key.api_key) });
    expect(denied.status).toBe(403);
    expect(denied.body.required_scope).toBe('read:deliveries');
  });

  it('grants every scope with --scopes all', async () => {
    const r = await runScript('cli/main.ts', ['keys', 'create', '--tenant', svc.tenantId, '--scopes', 'all'], env());
    expect(r.code).toBe(0);
    const key = JSON.parse(r.stdout) as { scopes: string[] };
    expect(key.scopes).toContain('write:destinations');
    expect(key.scopes).toContain('read:evidence');
    expect(key.scopes.length).toBeGreaterThan(10);
  });

  it.each([
    [['keys', 'create', '--scopes', 'all'], /needs --tenant/],
    [['keys', 'create', '--tenant', 'Bad Tenant!', '--scopes', 'all'], /is not a tenant id/],
    [['keys', 'create', '--tenant', 'acme', '--scopes', 'read:destinations,fly:kites'], /unknown scope fly:kites/],
    [['keys', 'frobnicate'], /unknown command/],
  ])('refuses %j with one line on stderr and exit 1', async (args, message) => {
    const r = await runScript('cli/main.ts', args, env());
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.split('\n')[0]).toMatch(message);
  });

  it('lists a tenant\'s keys without secret or hash, and revokes one so the API refuses it', async () => {
    const tenant = `${svc.tenantId}-list`;
    const created = await runScript('cli/main.ts', ['keys', 'create', '--tenant', tenant, '--scopes', 'read:keys', '--name', 'ci'], env());
    expect(created.code).toBe(0);
    const key = JSON.parse(created.stdout) as { key_id: string; api_key: string };
    expect((await svc.api('GET', `/v1/tenants/${tenant}/api-keys`, undefined, { key: key.api_key })).status).toBe(200);

    const listed = await runScript('cli/main.ts', ['keys', 'list', '--tenant', tenant], env());
    expect(listed.code).toBe(0);
    expect(listed.stdout.trim().split('\n')).toHaveLength(1);
    const list = JSON.parse(listed.stdout) as { tenant_id: string; api_keys: Record<string, unknown>[] };
    expect(list.tenant_id).toBe(tenant);
    expect(list.api_keys).toHaveLength(1);
    expect(list.api_keys[0]).toMatchObject({ id: key.key_id, name: 'ci', scopes: ['read:keys'], status: 'active', revoked_at: null });
    // the API use above is recorded (this service writes a key's first use at once)
    expect(typeof list.api_keys[0]!.last_used_at).toBe('string');
    const stored = svc.service.store.get('api_key', tenant, key.key_id)!;
    expect(listed.stdout).not.toContain(key.api_key);
    expect(listed.stdout).not.toContain(stored.secret_sha256);

    const revoked = await runScript('cli/main.ts', ['keys', 'revoke', '--tenant', tenant, '--id', key.key_id], env());
    expect(revoked.code).toBe(0);
    expect(JSON.parse(revoked.stdout)).toMatchObject({ id: key.key_id, status: 'revoked', revoked_at: expect.any(String) });
    const refused = await svc.api('GET', `/v1/tenants/${tenant}/api-keys`, undefined, { key: key.api_key });
    expect(refused.status).toBe(401);
    expect(refused.body.detail).toBe('the API key has been revoked');
    const after = JSON.parse((await runScript('cli/main.ts', ['keys', 'list', '--tenant', tenant], env())).stdout) as { api_keys: { status: string }[] };
    expect(after.api_keys.map((k) => k.status)).toEqual(['revoked']);
  });

  it.each([
    [['keys', 'list'], /^keys list needs --tenant/],
    [['keys', 'list', '--tenant', 'Bad!'], /is not a tenant id/],
    [['keys', 'revoke', '--tenant', 'acme'], /^keys revoke needs --id/],
    [['keys', 'revoke', '--tenant', 'acme', '--id', 'dst_x'], /is not a key id/],
    [['keys', 'revoke', '--tenant', 'acme', '--id', 'key_01j9zx5w3k8f6t2q4r7m1n0bcd'], /^tenant acme has no API key key_01j9zx5w3k8f6t2q4r7m1n0bcd$/],
    [['keys', 'create', '--tenant', 'acme', '--scopes', 'all', '--name', '  '], /--name must be/],
  ])('keys list/revoke refuse %j with one line on stderr and exit 1', async (args, message) => {
    const r = await runScript('cli/main.ts', args, env());
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr.trim()).toMatch(message);
  });

  it('says so when no service runs on the data dir', async () => {
    const bare = { ...process.env, DATA_DIR: '/nonexistent/hookline' } as NodeJS.ProcessEnv;
    delete bare.KAFKA_BROKERS;
    delete bare.SCHEMA_REGISTRY_URL;
    const r = await runScript('cli/main.ts', ['keys', 'create', '--tenant', 'acme', '--scopes', 'all'], bare);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim()).toMatch(/^no running service found for DATA_DIR=\/nonexistent\/hookline/);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe('cli health', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('says each process is ready, and exits 1 naming the one that does not answer', async () => {
    const ok = await runScript('cli/main.ts', ['health', '--url', svc.url], { ...process.env });
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout.trim())).toMatchObject({ url: svc.url, ready: true, failing: [], stages: expect.arrayContaining(['api', 'deliver']) });

    const down = 'http://127.0.0.1:9';
    const bad = await runScript('cli/main.ts', ['health', '--url', svc.url, '--url', down], { ...process.env });
    expect(bad.code).toBe(1);
    const lines = bad.stdout.trim().split('\n').map((l) => JSON.parse(l) as { url: string; ready: boolean });
    expect(lines.map((l) => [l.url, l.ready])).toEqual([[svc.url, true], [down, false]]);
    expect(bad.stderr.trim().split('\n')[0]).toMatch(/^not ready: http:\/\/127\.0\.0\.1:9: /);

    const wrong = await runScript('cli/main.ts', ['health', '--url', 'not a url'], { ...process.env });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr.trim()).toBe('--url: not a URL: "not a url"');
  });
});
