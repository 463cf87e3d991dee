import { startTestService, type TestService } from './support/service';

/** The ground rules every route shares: keys, scopes, tenants, problems. The full contract has its own suite. */
describe('API ground rules', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ RATE_LIMITS: 'default=1000/60s;GET /v1/tenants/:tenantId/ingesters=3/60s', RATE_LIMIT_TIMEOUT_MS: '10000' });
  });
  afterAll(async () => {
    await svc?.stop();
  });

  const expectProblem = (res: { status: number; headers: Headers; body: any }, status: number, slug: string) => {
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.body).toMatchObject({ type: `${svc.config.errorBase}/errors/${slug}`, status, title: expect.any(String), detail: expect.any(String) });
    expect(res.body.instance).toBe(res.headers.get('x-request-id'));
    expect(JSON.stringify(res.body)).not.toMatch(/at .*\.ts:\d+/);
  };

  it('401 without a key, with a malformed key and with an unknown key', async () => {
    const path = `/v1/tenants/${svc.tenantId}/destinations`;
    expectProblem(await svc.api('GET', path, undefined, { key: null }), 401, 'unauthorized');
    expectProblem(await svc.api('GET', path, undefined, { key: 'nope' }), 401, 'unauthorized');
    const forged = `${svc.apiKey.slice(0, -4)}AAAA`;
    expectProblem(await svc.api('GET', path, undefined, { key: forged }), 401, 'unauthorized');
  });

  it('403 insufficient-scope names the scope', async () => {
    const key = await svc.newKey(['read:destinations']);
    const res = await svc.api('POST', `/v1/tenants/${svc.tenantId}/destinations`, { name: 'x', url: 'http://127.0.0.1:9/x' }, { key });
    expectProblem(res, 403, 'insufficient-scope');
    expect(res.body.required_scope).toBe('write:destinations');
  });

  it("404 for another tenant's path", async () => {
    const other = await svc.newKey(['read:destinations'], { tenantId: `${svc.tenantId}-other` });
    expectProblem(await svc.api('GET', `/v1/tenants/${svc.tenantId}/destinations`, undefined, { key: other }), 404, 'not-found');
  });

  it('400 validation-error lists every field, and invalid JSON is a 400 too', async () => {
    const res = await svc.api('POST', `/v1/tenants/${svc.tenantId}/destinations`, { name: '', url: 'ftp://x' });
    expectProblem(res, 400, 'validation-error');
    expect(res.body.errors).toEqual([
      { field: 'name', message: 'must not be empty' },
      { field: 'url', message: 'must be an http or https URL' },
    ]);
    expectProblem(await svc.api('POST', `/v1/tenants/${svc.tenantId}/destinations`, '{"name":'), 400, 'validation-error');
  });

  it('409 conflict for a duplicate destination name, even under concurrency', async () => {
    const attempts = await Promise.all(
      Array.from({ length: 8 }, () => svc.api('POST', `/v1/tenants/${svc.tenantId}/destinations`, { name: 'only-one', url: 'http://127.0.0.1:9/x' })),
    );
    expect(attempts.filter((r) => r.status === 201)).toHaveLength(1);
    for (const r of attempts.filter((r) => r.status !== 201)) expectProblem(r, 409, 'conflict');
    const list = await svc.api('GET', `/v1/tenants/${svc.tenantId}/destinations`);
    expect(list.body.destinations.filter((d: { name: string }) => d.name === 'only-one')).toHaveLength(1);
    expect(list.body.destinations[0].signing_secret).toBeUndefined();
  });

  it('422 for an unknown delivery status filter, 400 for an out-of-range limit', async () => {
    expectProblem(await svc.api('GET', `/v1/tenants/${svc.tenantId}/deliveries?status=lost`), 422, 'unprocessable-entity');
    expectProblem(await svc.api('GET', `/v1/tenants/${svc.tenantId}/deliveries?limit=0`), 400, 'validation-error');
    expectProblem(await svc.api('GET', `/v1/tenants/${svc.tenantId}/deliveries?limit=abc`), 400, 'validation-error');
  });

  it('Idempotency-Key: the same request gives the original answer once, another body a 409', async () => {
    const path = `/v1/tenants/${svc.tenantId}/destinations`;
    const headers = { 'idempotency-key': 'create-once-1' };
    const [a, b] = await Promise.all([
      svc.api('POST', path, { name: 'idem', url: 'http://127.0.0.1:9/x' }, { headers }),
      svc.api('POST', path, { url: 'http://127.0.0.1:9/x', name: 'idem' }, { headers }),
    ]);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.id).toBe(b.body.id);
    expect(a.body.signing_secret).toBe(b.body.signing_secret);
    const list = await svc.api('GET', path);
    expect(list.body.destinations.filter((d: { name: string }) => d.name === 'idem')).toHaveLength(1);
    const other = await svc.api('POST', path, { name: 'idem-2', url: 'http://127.0.0.1:9/x' }, { headers });
    expectProblem(other, 409, 'idempotency-conflict');
    expect(other.body.idempotency_key).toBe('create-once-1');
  });

  it('429 with Retry-After past a route\'s limit, and RateLimit headers on every answer', async () => {
    const key = await svc.newKey(['read:ingesters']);
    const path = `/v1/tenants/${svc.tenantId}/ingesters`;
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await svc.api('GET', path, undefined, { key }));
    expect(answers.slice(0, 3).map((a) => a.status)).toEqual([200, 200, 200]);
    expect(answers.map((a) => a.headers.get('ratelimit-remaining'))).toEqual(['2', '1', '0', '0']);
    expectProblem(answers[3]!, 429, 'rate-limit-exceeded');
    expect(answers[3]!.body.retry_after_seconds).toBeGreaterThanOrEqual(1);
    expect(answers[3]!.headers.get('retry-after')).toBe(String(answers[3]!.body.retry_after_seconds));
    // another key has its own bucket
    expect((await svc.api('GET', path)).status).toBe(200);
  });

  it('404 problem for an unknown route', async () => {
    expectProblem(await svc.api('GET', '/v1/nothing-here'), 404, 'not-found');
  });
});
