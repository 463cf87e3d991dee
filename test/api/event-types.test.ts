import { MAX_SCHEMA_BYTES } from '../../core/event-type-schema';
import { SCOPES } from '../../core/scopes';
import { startTestService, type TestService } from '../support/service';

/** The event type catalogue through the running API: create, uniqueness, schemas, paging, replace, delete, scopes, quota. */
describe('event type catalogue', () => {
  let svc: TestService;
  const base = () => `/v1/tenants/${svc.tenantId}/event-types`;
  const invoiceSchema = { type: 'object', required: ['type', 'data'], properties: { type: { const: 'invoice.paid' }, data: { type: 'object', properties: { amount: { type: 'integer', minimum: 0 }, id: { type: 'string', pattern: '^in_[0-9a-z]+$' } } } } };

  beforeAll(async () => {
    svc = await startTestService({ LOG_LEVEL: 'warn', MAX_EVENT_TYPES_PER_TENANT: '5' });
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('creates, shows, lists a page at a time, replaces and deletes', async () => {
    const created = await svc.api('POST', base(), { name: 'invoice.paid', description: 'An invoice was paid.', schema: invoiceSchema });
    expect(created.status).toBe(201);
    // the example is built from the schema: each property's const, or a value of its type
    expect(created.body).toEqual({ id: expect.stringMatching(/^etp_[0-9a-z]{26}$/), name: 'invoice.paid', description: 'An invoice was paid.', schema: invoiceSchema, example: { type: 'invoice.paid', data: { id: 'string', amount: 0 } }, created_at: expect.any(String), updated_at: expect.any(String) });
    const id = String(created.body.id);
    expect(created.headers.get('location')).toBe(`${base()}/${id}`);
    const stored = svc.service.store.get('event_type', svc.tenantId, id);
    expect(stored).toMatchObject({ kind: 'event_type', name: 'invoice.paid', schema: invoiceSchema });

    const bare = await svc.api('POST', base(), { name: 'customer:created_v2-x' });
    expect(bare.status).toBe(201);
    expect(bare.body).toMatchObject({ description: null, schema: null });

    expect((await svc.api('GET', `${base()}/${id}`)).body).toEqual(created.body);
    const page1 = await svc.api('GET', `${base()}?limit=1`);
    expect(page1.body.event_types.map((t: { id: string }) => t.id)).toEqual([id]);
    const page2 = await svc.api('GET', `${base()}?limit=1&cursor=${page1.body.next_cursor}`);
    expect(page2.body).toEqual({ event_types: [bare.body], next_cursor: null });

    // GET-then-PUT keeps the name; absent members become null
    const replaced = await svc.api('PUT', `${base()}/${id}`, { ...created.body, description: 'Paid in full.' });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ id, name: 'invoice.paid', description: 'Paid in full.', schema: invoiceSchema });
    const cleared = await svc.api('PUT', `${base()}/${id}`, {});
    expect(cleared.body).toMatchObject({ description: null, schema: null });
    const renamed = await svc.api('PUT', `${base()}/${id}`, { name: 'invoice.settled' });
    expect(renamed.status).toBe(422);
    expect(renamed.body.errors).toEqual([{ field: 'name', message: expect.stringMatching(/cannot be changed/) }]);

    expect((await svc.api('DELETE', `${base()}/${id}`)).status).toBe(204);
    expect((await svc.api('GET', `${base()}/${id}`)).status).toBe(404);
    expect((await svc.api('DELETE', `${base()}/${id}`)).status).toBe(404);
    expect((await svc.api('PUT', `${base()}/${id}`, {})).status).toBe(404);
    // the name is free again
    expect((await svc.api('POST', base(), { name: 'invoice.paid' })).status).toBe(201);
  });

  it('refuses a duplicate name (409), malformed bodies (400) and schemas that cannot be used (422)', async () => {
    expect((await svc.api('POST', base(), { name: 'dup.name' })).status).toBe(201);
    const dup = await svc.api('POST', base(), { name: 'DUP.name' });
    expect(dup.status).toBe(409);
    expect(dup.body.type).toMatch(/\/errors\/conflict$/);

    const unknown = await svc.api('POST', base(), { name: 'x.y', schemas: {} });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors).toEqual([{ field: 'schemas', message: 'is not a member of this body' }]);
    const malformed = await svc.api('POST', base(), { name: 'has space', description: 'd'.repeat(1001), schema: [1] });
    expect(malformed.status).toBe(400);
    expect(malformed.body.errors.map((e: { field: string }) => e.field)).toEqual(['name', 'description', 'schema']);
    expect((await svc.api('POST', base(), { description: 'no name' })).body.errors).toEqual([{ field: 'name', message: 'is required' }]);

    const cases: [unknown, string, RegExp][] = [
      [{ type: 'nope' }, 'schema.type', /not valid JSON Schema 2020-12/],
      [{ properties: { a: { minLength: -1 } } }, 'schema.properties.a.minLength', /not valid JSON Schema/],
      [{ $ref: 'https://example.com/invoice.json' }, 'schema.$ref', /refers outside the schema/],
      [{ properties: { a: { $ref: 'other.json#/x' } } }, 'schema.properties.a.$ref', /refers outside/],
      [{ $ref: '#/$defs/missing' }, 'schema', /does not compile/],
      [{ properties: { a: { type: 'string', pattern: '^(?=x)' } } }, 'schema', /RE2/],
      [{ $schema: 'http://json-schema.org/draft-07/schema#' }, 'schema.$schema', /2020-12/],
      [{ description: 'x'.repeat(MAX_SCHEMA_BYTES) }, 'schema', /bytes of JSON, more than/],
      [JSON.parse(`${'{"items":'.repeat(40)}{}${'}'.repeat(40)}`), 'schema', /levels deep/],
    ];
    for (const [schema, field, message] of cases) {
      const a = await svc.api('POST', base(), { name: 'refused.one', schema });
      expect({ schema, status: a.status, type: a.body.type }).toEqual({ schema, status: 422, type: expect.stringMatching(/unprocessable-entity$/) });
      expect(a.body.errors[0]).toEqual({ field, message: expect.stringMatching(message) });
    }
    // references inside the schema are fine
    const local = await svc.api('POST', base(), { name: 'local.refs', schema: { $schema: 'https://json-schema.org/draft/2020-12/schema', $defs: { money: { type: 'integer' } }, properties: { amount: { $ref: '#/$defs/money' } } } });
    expect(local.status).toBe(201);
    const put = await svc.api('PUT', `${base()}/${local.body.id}`, { schema: { type: 'nope' } });
    expect(put.status).toBe(422);
    expect(svc.service.store.get('event_type', svc.tenantId, local.body.id)?.schema).toMatchObject({ $defs: { money: { type: 'integer' } } });
  });

  it('checks scopes (403) and the quota', async () => {
    const readOnly = await svc.newKey(['read:event-types']);
    const none = await svc.newKey(SCOPES.filter((s) => !s.endsWith(':event-types')));
    expect((await svc.api('GET', base(), undefined, { key: readOnly })).status).toBe(200);
    const write = await svc.api('POST', base(), { name: 'by.reader' }, { key: readOnly });
    expect(write.status).toBe(403);
    expect(write.body.required_scope).toBe('write:event-types');
    const read = await svc.api('GET', base(), undefined, { key: none });
    expect(read.status).toBe(403);
    expect(read.body.required_scope).toBe('read:event-types');
    const anyId = (await svc.api('GET', base())).body.event_types[0].id as string;
    expect((await svc.api('GET', `${base()}/${anyId}`, undefined, { key: none })).body.required_scope).toBe('read:event-types');
    expect((await svc.api('DELETE', `${base()}/${anyId}`, undefined, { key: readOnly })).status).toBe(403);
    // another tenant's key sees nothing of this catalogue
    const other = await svc.newKey([...SCOPES], { tenantId: `${svc.tenantId}-other` });
    expect((await svc.api('GET', `/v1/tenants/${svc.tenantId}-other/event-types/${anyId}`, undefined, { key: other })).status).toBe(404);

    // MAX_EVENT_TYPES_PER_TENANT is 5 here
    for (let i = 0; (await svc.api('GET', base())).body.event_types.length < 5; i++) expect((await svc.api('POST', base(), { name: `fill.${i}` })).status).toBe(201);
    const over = await svc.api('POST', base(), { name: 'one.too.many' });
    expect(over.status).toBe(403);
    expect(over.body).toMatchObject({ quota: 'event_types', limit: 5 });
  });
});
