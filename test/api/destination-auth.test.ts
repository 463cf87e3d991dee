import { startTestService, type TestService } from '../support/service';

/** Destination credentials: bounded, refused by field without echoing a value, shown masked. */
describe('destination auth', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(async () => {
    await svc?.stop();
  });
  const create = (name: string, auth: unknown) => svc.api('POST', `/v1/tenants/${svc.tenantId}/destinations`, { name, url: 'http://127.0.0.1:9/hook', auth });

  it.each([
    [{ type: 'digest', password: 'x' }, 'auth.type'],
    ['Bearer abc', 'auth'],
    [{ type: 'basic', username: 'a:b', password: 'refused-password-1' }, 'auth.username'],
    [{ type: 'basic', username: 'a', password: '' }, 'auth.password'],
    [{ type: 'basic', username: 'a', password: 'line\r\nbreak-1234' }, 'auth.password'],
    [{ type: 'bearer', token: 'has a space-1234' }, 'auth.token'],
    [{ type: 'bearer', token: 'x'.repeat(4097) }, 'auth.token'],
    [{ type: 'bearer', token: 'refused-token-1234', password: 'refused-extra-1' }, 'auth.password'],
    [{ type: 'header', name: 'bad name', value: 'refused-value-1' }, 'auth.name'],
    [{ type: 'header', name: 'Webhook-Signature', value: 'refused-value-2' }, 'auth.name'],
    [{ type: 'header', name: 'content-length', value: 'refused-value-3' }, 'auth.name'],
    [{ type: 'header', name: 'x-key' }, 'auth.value'],
  ])('400 for %j, naming %s and never the value', async (auth, field) => {
    const res = await create(`refused ${field}`, auth);
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    const text = JSON.stringify(res.body);
    for (const v of Object.values(typeof auth === 'object' ? auth : {})) if (typeof v === 'string' && v.startsWith('refused')) expect(text).not.toContain(v);
  });

  it('is shown masked on create, get and list; a destination without it shows null', async () => {
    const value = 'header-secret-value-9876';
    const made = await create('with header', { type: 'header', name: 'X-Api-Key', value });
    expect(made.status).toBe(201);
    expect(made.body.auth).toEqual({ type: 'header', name: 'x-api-key', value: '****9876' });
    const got = await svc.api('GET', `/v1/tenants/${svc.tenantId}/destinations/${made.body.id}`);
    expect(got.body.auth).toEqual({ type: 'header', name: 'x-api-key', value: '****9876' });
    const listed = await svc.api('GET', `/v1/tenants/${svc.tenantId}/destinations`);
    expect(JSON.stringify(listed.body)).not.toContain(value);
    const plain = await create('without', undefined);
    expect(plain.body.auth).toBeNull();
    // in memory the service holds the credentials as given
    expect(svc.service.store.get('destination', svc.tenantId, made.body.id)!.auth).toEqual({ type: 'header', name: 'x-api-key', value });
  });
});
