import { Redis } from 'ioredis';
import { issueApiKey } from '../../platform/config-store/tenants';
import { KeyUsage } from '../../platform/redis/key-usage';
import { problemViolations } from '../support/problem';
import { eventually, startTestService, type TestService } from '../support/service';

/** Tenant API keys over the API: create, list, get, revoke, expiry, what a key may grant, quota, last use. */
describe('API keys', () => {
  let svc: TestService;
  const base = () => `/v1/tenants/${svc.tenantId}/api-keys`;
  const QUOTA = 20;

  beforeAll(async () => {
    svc = await startTestService({ MAX_API_KEYS_PER_TENANT: String(QUOTA), API_KEY_LAST_USED_INTERVAL_SECONDS: '1', RATE_LIMITS: 'default=100000/60s' });
  });
  afterAll(async () => {
    await svc?.stop();
  });

  const expectProblem = (res: { status: number; headers: Headers; body: any }, status: number, slug: string, extra: Record<string, unknown> = {}) => {
    expect({ status: res.status, body: res.body }).toMatchObject({ status, body: { type: `${svc.config.errorBase}/errors/${slug}`, status, ...extra } });
    expect(problemViolations(res, svc.config.errorBase)).toEqual([]);
  };
  const SHOWN = ['created_at', 'expires_at', 'id', 'last_used_at', 'name', 'resource_ids', 'revoked_at', 'scopes', 'status'];

  it('creates a key whose plain value is shown once, lists and gets it without secret or hash', async () => {
    const created = await svc.api('POST', base(), { name: ' ci deploy ', scopes: ['read:destinations', 'read:keys', 'read:keys'] });
    expect(created.status).toBe(201);
    expect(Object.keys(created.body).sort()).toEqual([...SHOWN, 'api_key'].sort());
    expect(created.body).toMatchObject({ name: 'ci deploy', scopes: ['read:destinations', 'read:keys'], resource_ids: null, expires_at: null, revoked_at: null, last_used_at: null, status: 'active' });
    expect(created.body.api_key).toMatch(/^hlk_[0-9a-z]{26}_[A-Za-z0-9_-]{43}$/);
    expect(created.headers.get('location')).toBe(`${base()}/${created.body.id}`);
    const plain = created.body.api_key as string;
    const stored = svc.service.store.get('api_key', svc.tenantId, created.body.id)!;

    // the new key works at once, with its scopes only
    expect((await svc.api('GET', `/v1/tenants/${svc.tenantId}/destinations`, undefined, { key: plain })).status).toBe(200);
    expectProblem(await svc.api('GET', `/v1/tenants/${svc.tenantId}/deliveries`, undefined, { key: plain }), 403, 'insufficient-scope', { required_scope: 'read:deliveries' });

    const list = await svc.api('GET', base());
    expect(list.status).toBe(200);
    const text = JSON.stringify(list.body);
    expect(text).not.toContain(plain);
    expect(text).not.toContain(stored.secret_sha256);
    expect(list.body.next_cursor).toBeNull();
    const listed = list.body.api_keys.find((k: any) => k.id === created.body.id);
    expect(Object.keys(listed).sort()).toEqual(SHOWN);
    expect(list.body.api_keys[0].id < list.body.api_keys[list.body.api_keys.length - 1].id || list.body.api_keys.length === 1).toBe(true);

    const one = await svc.api('GET', `${base()}/${created.body.id}`, undefined, { key: plain });
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ id: created.body.id, name: 'ci deploy', status: 'active' });
    expect(JSON.stringify(one.body)).not.toContain(stored.secret_sha256);

    // paged like the other lists
    const page = await svc.api('GET', `${base()}?limit=1`);
    expect(page.body.api_keys).toHaveLength(1);
    const next = await svc.api('GET', `${base()}?limit=1&cursor=${page.body.next_cursor}`);
    expect(next.body.api_keys[0].id > page.body.api_keys[0].id).toBe(true);
    expectProblem(await svc.api('GET', `${base()}?limit=0`), 400, 'validation-error');
    expectProblem(await svc.api('GET', `${base()}/key_01j9zx5w3k8f6t2q4r7m1n0bcd`), 404, 'not-found');
  });

  it('refuses unknown members, bad scopes and expiries with 400 naming each field', async () => {
    const bad = await svc.api('POST', base(), { name: 'x', scopes: ['read:keys'], colour: 'blue', secret_sha256: 'ab' });
    expectProblem(bad, 400, 'validation-error');
    expect(bad.body.errors.map((e: any) => e.field).sort()).toEqual(['colour', 'secret_sha256']);
    const fields = async (body: unknown) => (await svc.api('POST', base(), body)).body.errors.map((e: any) => e.field);
    expect(await fields({ scopes: ['read:keys'] })).toEqual(['name']);
    expect(await fields({ name: '   ', scopes: ['read:keys'] })).toEqual(['name']);
    expect(await fields({ name: 'x' })).toEqual(['scopes']);
    expect(await fields({ name: 'x', scopes: [] })).toEqual(['scopes']);
    expect(await fields({ name: 'x', scopes: ['read:keys', 'fly:kites'] })).toEqual(['scopes[1]']);
    expect(await fields({ name: 'x', scopes: ['read:keys'], expires_at: '2020-01-01T00:00:00Z' })).toEqual(['expires_at']);
    expect(await fields({ name: 'x', scopes: ['read:keys'], expires_at: 'tomorrow' })).toEqual(['expires_at']);
    expect(await fields({ name: 'x', scopes: ['read:keys'], expires_at: new Date(Date.now() + 11 * 366 * 86_400_000).toISOString() })).toEqual(['expires_at']);
    expect(await fields({ name: 'x', scopes: ['read:keys'], resource_ids: ['not an id'] })).toEqual(['resource_ids[0]']);
    expect(await fields({ name: 'x', scopes: ['read:keys'], resource_ids: Array.from({ length: 101 }, (_, i) => `dst_01j9zx5w3k8f6t2q4r7m1n0b${String(i % 10)}${'d'}`) })).toContain('resource_ids');
  });

  it('refuses a key more than the calling key: scopes (403), resources (403), lifetime (400)', async () => {
    const narrow = (await svc.api('POST', base(), { name: 'narrow', scopes: ['read:keys', 'write:keys'] })).body.api_key as string;
    expectProblem(await svc.api('POST', base(), { name: 'wider', scopes: ['write:keys', 'write:destinations'] }, { key: narrow }), 403, 'insufficient-scope', { required_scope: 'write:destinations' });
    const narrower = await svc.api('POST', base(), { name: 'narrower', scopes: ['read:keys'] }, { key: narrow });
    expect(narrower.status).toBe(201);

    const dst = 'dst_01j9zx5w3k8f6t2q4r7m1n0bcd';
    const limited = (await issueApiKey(svc.service.store, svc.tenantId, ['read:keys', 'write:keys'], { resourceIds: [dst] })).api_key;
    expectProblem(await svc.api('POST', base(), { name: 'elsewhere', scopes: ['read:keys'], resource_ids: ['dst_01j9zx5w3k8f6t2q4r7m1n0bce'] }, { key: limited }), 403, 'permission-denied', { resource_id: 'dst_01j9zx5w3k8f6t2q4r7m1n0bce' });
    const inherited = await svc.api('POST', base(), { name: 'inherits', scopes: ['read:keys'] }, { key: limited });
    expect(inherited.status).toBe(201);
    expect(inherited.body.resource_ids).toEqual([dst]);

    const expiry = new Date(Date.now() + 3_600_000).toISOString();
    const expiring = (await issueApiKey(svc.service.store, svc.tenantId, ['read:keys', 'write:keys'], { expiresAt: expiry })).api_key;
    expectProblem(await svc.api('POST', base(), { name: 'outlives', scopes: ['read:keys'], expires_at: new Date(Date.now() + 7_200_000).toISOString() }, { key: expiring }), 400, 'validation-error');
    const sameLife = await svc.api('POST', base(), { name: 'same life', scopes: ['read:keys'] }, { key: expiring });
    expect(sameLife.body.expires_at).toBe(expiry);
  });

  it('shows an expired key as expired and refuses it', async () => {
    const soon = new Date(Date.now() + 1_500).toISOString();
    const created = await svc.api('POST', base(), { name: 'short', scopes: ['read:keys'], expires_at: soon });
    expect(created.body).toMatchObject({ status: 'active', expires_at: soon });
    await new Promise((r) => setTimeout(r, 1_600));
    expectProblem(await svc.api('GET', base(), undefined, { key: created.body.api_key }), 401, 'unauthorized');
    expect((await svc.api('GET', `${base()}/${created.body.id}`)).body.status).toBe('expired');
  });

  it('revokes a key: refused at once with 401, still listed with revoked_at; a key may revoke itself', async () => {
    const created = await svc.api('POST', base(), { name: 'to revoke', scopes: ['read:keys', 'write:keys'] });
    const plain = created.body.api_key as string;
    const withBody = await svc.api('POST', `${base()}/${created.body.id}/revoke`, { reason: 'leaked' });
    expectProblem(withBody, 400, 'validation-error');
    expect(withBody.body.errors).toEqual([{ field: 'reason', message: 'is not a member of this body' }]);
    expect((await svc.api('GET', base(), undefined, { key: plain })).status).toBe(200);
    const revoked = await svc.api('POST', `${base()}/${created.body.id}/revoke`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id: created.body.id, status: 'revoked', revoked_at: expect.any(String) });
    const refused = await svc.api('GET', base(), undefined, { key: plain });
    expectProblem(refused, 401, 'unauthorized');
    expect(refused.body.detail).toBe('the API key has been revoked');
    expect(refused.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    // again: nothing changes
    const again = await svc.api('POST', `${base()}/${created.body.id}/revoke`);
    expect(again.body.revoked_at).toBe(revoked.body.revoked_at);
    const listed = (await svc.api('GET', `${base()}?limit=200`)).body.api_keys.find((k: any) => k.id === created.body.id);
    expect(listed).toMatchObject({ status: 'revoked', revoked_at: revoked.body.revoked_at });

    const self = await svc.api('POST', base(), { name: 'self', scopes: ['write:keys'] });
    const selfRevoked = await svc.api('POST', `${base()}/${self.body.id}/revoke`, undefined, { key: self.body.api_key });
    expect(selfRevoked.status).toBe(200);
    expect(selfRevoked.body.status).toBe('revoked');
    expect((await svc.api('POST', `${base()}/${self.body.id}/revoke`, undefined, { key: self.body.api_key })).status).toBe(401);
    expectProblem(await svc.api('POST', `${base()}/key_01j9zx5w3k8f6t2q4r7m1n0bcd/revoke`), 404, 'not-found');
    // a key without write:keys may not
    const reader = (await svc.api('POST', base(), { name: 'reader', scopes: ['read:keys'] })).body;
    expectProblem(await svc.api('POST', `${base()}/${reader.id}/revoke`, undefined, { key: reader.api_key }), 403, 'insufficient-scope', { required_scope: 'write:keys' });
  });

  it('records the last use of a key and shows it', async () => {
    const created = await svc.api('POST', base(), { name: 'used', scopes: ['read:keys'] });
    expect((await svc.api('GET', `${base()}/${created.body.id}`)).body.last_used_at).toBeNull();
    const before = Date.now();
    expect((await svc.api('GET', base(), undefined, { key: created.body.api_key })).status).toBe(200);
    const shown = await eventually('last_used_at', async () => {
      const r = await svc.api('GET', `${base()}/${created.body.id}`);
      return r.body.last_used_at ? String(r.body.last_used_at) : undefined;
    }, 10_000, 50);
    expect(Date.parse(shown)).toBeGreaterThanOrEqual(before - 5);
    expect(Date.parse(shown)).toBeLessThanOrEqual(Date.now());
  });

  it('writes a key\'s last use at most once per interval per process, and only forward', async () => {
    const redis = new Redis(svc.config.redisUrl!);
    try {
      let now = 1_700_000_000_000;
      const prefix = `${svc.config.topicPrefix}usage-test.`;
      const usage = new KeyUsage(redis, prefix, 60_000, undefined, () => now);
      const evals = jest.spyOn(redis, 'eval');
      for (let i = 0; i < 500; i++) usage.record('t1', 'key_a');
      expect(evals).toHaveBeenCalledTimes(1);
      now += 59_999;
      usage.record('t1', 'key_a');
      expect(evals).toHaveBeenCalledTimes(1);
      now += 1;
      usage.record('t1', 'key_a');
      expect(evals).toHaveBeenCalledTimes(2);
      await eventually('written', async () => ((await usage.lastUsed('t1', ['key_a'])).get('key_a') === new Date(now).toISOString() ? true : undefined), 5_000, 20);
      // another process whose clock is behind never moves it back
      const late = new KeyUsage(redis, prefix, 60_000, undefined, () => now - 30_000);
      late.record('t1', 'key_a');
      await new Promise((r) => setTimeout(r, 200));
      expect((await usage.lastUsed('t1', ['key_a', 'key_b'])).get('key_a')).toBe(new Date(now).toISOString());
      expect((await usage.lastUsed('t1', ['key_b'])).get('key_b')).toBeNull();
    } finally {
      redis.disconnect();
    }
  });

  it('enforces MAX_API_KEYS_PER_TENANT on usable keys; retired keys stay listed, the oldest dropped past the limit', async () => {
    const usable = () => svc.service.store.list('api_key', svc.tenantId).filter((k) => !k.revoked_at && !(k.expires_at && Date.parse(k.expires_at) <= Date.now()));
    let held = usable().length;
    const made: string[] = [];
    while (held < QUOTA) {
      const res = await svc.api('POST', base(), { name: `fill ${held}`, scopes: ['read:keys'] });
      expect(res.status).toBe(201);
      made.push(res.body.id);
      held++;
    }
    expectProblem(await svc.api('POST', base(), { name: 'one more', scopes: ['read:keys'] }), 403, 'quota-exceeded', { quota: 'api_keys', limit: QUOTA });
    // a malformed body is still a validation error
    expectProblem(await svc.api('POST', base(), { name: 'one more' }), 400, 'validation-error');

    // revoking frees a place; revoking and creating in a loop keeps at most QUOTA - 1 retired keys
    const first = made[0]!;
    expect((await svc.api('POST', `${base()}/${first}/revoke`)).status).toBe(200);
    const rounds = QUOTA + 3;
    let current = (await svc.api('POST', base(), { name: 'after revoke', scopes: ['read:keys'] })).body.id as string;
    expect(current).toMatch(/^key_/);
    for (let i = 0; i < rounds; i++) {
      expect((await svc.api('POST', `${base()}/${current}/revoke`)).status).toBe(200);
      const next = await svc.api('POST', base(), { name: `loop ${i}`, scopes: ['read:keys'] });
      expect(next.status).toBe(201);
      current = next.body.id;
    }
    const all = svc.service.store.list('api_key', svc.tenantId);
    const retired = all.filter((k) => k.revoked_at);
    expect(retired.length).toBe(QUOTA - 1);
    expect(all.length).toBe(QUOTA - 1 + usable().length);
    // the first key revoked went first; the newest revoked ones are still listed
    expect(all.map((k) => k.id)).not.toContain(first);
    expect((await svc.api('GET', `${base()}/${first}`)).status).toBe(404);
  });
});
