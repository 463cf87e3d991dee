import { startTestService, type TestService } from './support/service';

/** The ground rules every route shares: keys, scopes, tenants, problems. The full contract has its own suite. */
describe('API ground rules', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
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

  it('404 problem for an unknown route', async () => {
    expectProblem(await svc.api('GET', '/v1/nothing-here'), 404, 'not-found');
  });
});
