import { randomBytes } from 'node:crypto';
import { COMPATIBILITY, SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import type { Kafka } from 'kafkajs';
import { createKafka } from '../platform/kafka/client';
import { startSchemaRegistry, type SchemaRegistryServer } from '../infra/registry/server';

/** The registry against a real broker: the real Confluent client must work unchanged. */

const brokers = (process.env.KAFKA_BROKERS ?? '').split(',').filter((b) => b !== '');
let kafka: Kafka;
const topics: string[] = [];
const servers: SchemaRegistryServer[] = [];

function newTopic(): string {
  const topic = `test-schemas-${randomBytes(5).toString('hex')}`;
  topics.push(topic);
  return topic;
}

async function start(topic: string): Promise<SchemaRegistryServer> {
  const server = await startSchemaRegistry({ kafka, topic });
  servers.push(server);
  return server;
}

async function stop(server: SchemaRegistryServer): Promise<void> {
  servers.splice(servers.indexOf(server), 1);
  await server.close();
}

const MEDIA_TYPE = 'application/vnd.schemaregistry.v1+json';

async function http(
  url: string,
  method = 'GET',
  body?: unknown,
  contentType = MEDIA_TYPE,
): Promise<{ status: number; contentType: string | null; body: any }> {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? {} : { 'content-type': contentType },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, contentType: res.headers.get('content-type'), body: text ? JSON.parse(text) : undefined };
}

const avro = (schema: object) => ({ type: SchemaType.AVRO as const, schema: JSON.stringify(schema) });

const userV1 = { type: 'record' as const, name: 'User', namespace: 'test.registry', fields: [{ name: 'name', type: 'string' }] };
const userV2 = { ...userV1, fields: [...userV1.fields, { name: 'age', type: 'int', default: -1 }] };
const userNoDefault = { ...userV1, fields: [...userV2.fields, { name: 'email', type: 'string' }] };

beforeAll(() => {
  if (brokers.length === 0) throw new Error('KAFKA_BROKERS is not set (comma-separated host:port list)');
  kafka = createKafka(brokers, 'registry-test');
});

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

afterAll(async () => {
  const admin = kafka.admin();
  await admin.connect();
  await admin.deleteTopics({ topics }).catch(() => undefined);
  await admin.disconnect();
});

test('registers a schema and round-trips a record through the Confluent wire format', async () => {
  const server = await start(newTopic());
  const registry = new SchemaRegistry({ host: server.url });

  const { id } = await registry.register(avro(userV1), { subject: 'users-value' });
  expect(Number.isInteger(id) && id > 0).toBe(true);

  const encoded = await registry.encode(id, { name: 'Ada' });
  expect(encoded[0]).toBe(0);
  expect(encoded.readInt32BE(1)).toBe(id);
  expect(await registry.decode(encoded)).toEqual({ name: 'Ada' });

  // a client with an empty cache has to fetch the writer schema by id
  const fresh = new SchemaRegistry({ host: server.url });
  expect(await fresh.decode(encoded)).toEqual({ name: 'Ada' });
  expect(await fresh.getLatestSchemaId('users-value')).toBe(id);
  expect(await fresh.getRegistryId('users-value', 1)).toBe(id);
  expect(await fresh.getRegistryIdBySchema('users-value', avro(userV1))).toBe(id);

  // whitespace and key order do not make a new schema
  const reordered = JSON.stringify({ fields: userV1.fields, namespace: 'test.registry', type: 'record', name: 'User' }, null, 2);
  expect((await registry.register({ type: SchemaType.AVRO, schema: reordered }, { subject: 'users-value' })).id).toBe(id);
  expect((await registry.register(avro(userV1), { subject: 'users-value' })).id).toBe(id);
  expect((await http(`${server.url}/subjects/users-value/versions`)).body).toEqual([1]);

  // the same schema under another subject keeps its global id
  expect((await registry.register(avro(userV1), { subject: 'users-copy' })).id).toBe(id);
  expect((await http(`${server.url}/subjects`)).body).toEqual(['users-copy', 'users-value']);
  expect((await http(`${server.url}/schemas/ids/${id}/versions`)).body).toEqual(
    expect.arrayContaining([{ subject: 'users-value', version: 1 }, { subject: 'users-copy', version: 1 }]),
  );

  const latest = await http(`${server.url}/subjects/users-value/versions/latest`);
  expect(latest.contentType).toBe(MEDIA_TYPE);
  expect(latest.body).toEqual({ subject: 'users-value', version: 1, id, schema: JSON.stringify(userV1) });
  expect((await http(`${server.url}/schemas/ids/${id}`)).body).toEqual({ schema: JSON.stringify(userV1) });
});

test('accepts a backward-compatible evolution and rejects an incompatible one', async () => {
  const server = await start(newTopic());
  const registry = new SchemaRegistry({ host: server.url });
  const subject = 'users-value';

  const { id: id1 } = await registry.register(avro(userV1), { subject });
  const oldRecord = await registry.encode(id1, { name: 'Grace' });

  const compatible = await http(`${server.url}/compatibility/subjects/${subject}/versions/latest`, 'POST', { schema: JSON.stringify(userV2) });
  expect(compatible.body).toEqual({ is_compatible: true });

  const { id: id2 } = await registry.register(avro(userV2), { subject });
  expect(id2).not.toBe(id1);
  expect(await registry.getRegistryId(subject, 2)).toBe(id2);
  expect(await registry.getLatestSchemaId(subject)).toBe(id2);
  // the new reader fills the new field from its default when reading old data
  expect(await registry.decode(oldRecord, { [SchemaType.AVRO]: { readerSchema: userV2 } })).toEqual({ name: 'Grace', age: -1 });

  const check = await http(`${server.url}/compatibility/subjects/${subject}/versions/latest?verbose=true`, 'POST', {
    schema: JSON.stringify(userNoDefault),
  });
  expect(check.status).toBe(200);
  expect(check.body.is_compatible).toBe(false);
  expect(check.body.messages.join(' ')).toMatch(/email/);
  await expect(registry.register(avro(userNoDefault), { subject })).rejects.toMatchObject({
    status: 409,
    message: expect.stringMatching(/incompatible/),
  });
  const raw = await http(`${server.url}/subjects/${subject}/versions`, 'POST', { schema: JSON.stringify(userNoDefault) });
  expect(raw.status).toBe(409);
  expect(raw.body.error_code).toBe(409);
  expect((await http(`${server.url}/subjects/${subject}/versions`)).body).toEqual([1, 2]);
});

test('compatibility levels are configurable globally and per subject and change what is accepted', async () => {
  const server = await start(newTopic());
  const registry = new SchemaRegistry({ host: server.url });

  expect((await http(`${server.url}/config`)).body).toEqual({ compatibilityLevel: 'BACKWARD' });
  expect((await http(`${server.url}/config`, 'PUT', { compatibility: 'FULL' })).body).toEqual({ compatibility: 'FULL' });
  expect((await http(`${server.url}/config`)).body).toEqual({ compatibilityLevel: 'FULL' });
  const bad = await http(`${server.url}/config`, 'PUT', { compatibility: 'SIDEWAYS' });
  expect(bad.status).toBe(422);
  expect(bad.body.error_code).toBe(42203);

  const unset = await http(`${server.url}/config/users-value`);
  expect(unset.status).toBe(404);
  expect(unset.body.error_code).toBe(40408);
  expect((await http(`${server.url}/config/users-value?defaultToGlobal=true`)).body).toEqual({ compatibilityLevel: 'FULL' });

  // the client pins a subject's level on its first registration
  await registry.register(avro(userV1), { subject: 'users-value', compatibility: COMPATIBILITY.FORWARD });
  expect((await http(`${server.url}/config/users-value`)).body).toEqual({ compatibilityLevel: 'FORWARD' });

  // FORWARD: old readers skip a new field, so a field without default is fine
  const forward = await registry.register(avro(userNoDefault), { subject: 'users-value', compatibility: COMPATIBILITY.FORWARD });
  expect(await registry.getLatestSchemaId('users-value')).toBe(forward.id);

  // FULL also needs the new reader to read old data, which lacks the field
  await registry.register(avro(userV1), { subject: 'strict-value', compatibility: COMPATIBILITY.FULL });
  await expect(
    registry.register(avro(userNoDefault), { subject: 'strict-value', compatibility: COMPATIBILITY.FULL }),
  ).rejects.toMatchObject({ status: 409 });

  const put = await http(`${server.url}/config/strict-value`, 'PUT', { compatibility: 'none' });
  expect(put.body).toEqual({ compatibility: 'NONE' });
  expect((await http(`${server.url}/config/strict-value`)).body).toEqual({ compatibilityLevel: 'NONE' });
  const accepted = await http(`${server.url}/subjects/strict-value/versions`, 'POST', { schema: JSON.stringify(userNoDefault) });
  expect(accepted.status).toBe(200);
  expect(accepted.body.id).toBe(forward.id);
});

test('transitive levels check every earlier version, plain ones only the latest', async () => {
  const server = await start(newTopic());
  const subject = 'shapes';
  const v1 = { type: 'record', name: 'Shape', fields: [{ name: 'size', type: 'string' }] };
  const v2 = { type: 'record', name: 'Shape', fields: [] };
  const v3 = { type: 'record', name: 'Shape', fields: [{ name: 'size', type: 'int', default: 0 }] };
  const register = (schema: object) => http(`${server.url}/subjects/${subject}/versions`, 'POST', { schema: JSON.stringify(schema) });

  await http(`${server.url}/config/${subject}`, 'PUT', { compatibility: 'BACKWARD_TRANSITIVE' });
  expect((await register(v1)).status).toBe(200);
  expect((await register(v2)).status).toBe(200);
  // v3 reads v2 data (size from its default) but not v1 data (size is a string there)
  const all = await http(`${server.url}/compatibility/subjects/${subject}/versions`, 'POST', { schema: JSON.stringify(v3) });
  expect(all.body).toEqual({ is_compatible: false });
  const againstV1 = await http(`${server.url}/compatibility/subjects/${subject}/versions/1`, 'POST', { schema: JSON.stringify(v3) });
  expect(againstV1.body).toEqual({ is_compatible: false });
  const againstV2 = await http(`${server.url}/compatibility/subjects/${subject}/versions/2`, 'POST', { schema: JSON.stringify(v3) });
  expect(againstV2.body).toEqual({ is_compatible: true });
  expect((await register(v3)).status).toBe(409);

  await http(`${server.url}/config/${subject}`, 'PUT', { compatibility: 'BACKWARD' });
  const accepted = await register(v3);
  expect(accepted.status).toBe(200);
  expect((await http(`${server.url}/subjects/${subject}/versions/3`)).body.id).toBe(accepted.body.id);
});

test('schemas with references resolve through the referenced subject', async () => {
  const server = await start(newTopic());
  const registry = new SchemaRegistry({ host: server.url });
  const address = { type: 'record', name: 'Address', namespace: 'test.registry', fields: [{ name: 'city', type: 'string' }] };
  const person = {
    type: 'record',
    name: 'Person',
    namespace: 'test.registry',
    fields: [{ name: 'home', type: 'test.registry.Address' }],
  };
  await registry.register(avro(address), { subject: 'address' });
  const references = [{ name: 'test.registry.Address', subject: 'address', version: 1 }];
  const { id } = await registry.register({ ...avro(person), references }, { subject: 'person' });

  const fetched = await http(`${server.url}/schemas/ids/${id}`);
  expect(fetched.body.references).toEqual(references);
  const fresh = new SchemaRegistry({ host: server.url });
  const encoded = await registry.encode(id, { home: { city: 'Lisbon' } });
  expect(await fresh.decode(encoded)).toEqual({ home: { city: 'Lisbon' } });

  const dangling = await http(`${server.url}/subjects/other/versions`, 'POST', {
    schema: JSON.stringify(person),
    references: [{ name: 'test.registry.Address', subject: 'address', version: 7 }],
  });
  expect(dangling.status).toBe(422);
  expect(dangling.body.error_code).toBe(42201);
});

test('state survives a restart and ids continue after the highest one', async () => {
  const topic = newTopic();
  const first = await start(topic);
  const client1 = new SchemaRegistry({ host: first.url });
  const { id: a } = await client1.register(avro(userV1), { subject: 'users-value' });
  const { id: b } = await client1.register(avro(userV2), { subject: 'users-value' });
  const order = { type: 'record', name: 'Order', namespace: 'test.registry', fields: [{ name: 'total', type: 'long' }] };
  const { id: c } = await client1.register(avro(order), { subject: 'orders-value' });
  await http(`${first.url}/config`, 'PUT', { compatibility: 'FORWARD' });
  const encoded = await client1.encode(b, { name: 'Linus', age: 54 });
  await stop(first);

  const second = await start(topic);
  expect(second.url).not.toBe(first.url);
  const client2 = new SchemaRegistry({ host: second.url });
  expect(await client2.decode(encoded)).toEqual({ name: 'Linus', age: 54 });
  expect(await client2.getLatestSchemaId('users-value')).toBe(b);
  expect(await client2.getRegistryId('users-value', 1)).toBe(a);
  expect(await client2.getRegistryIdBySchema('orders-value', avro(order))).toBe(c);
  expect((await http(`${second.url}/subjects`)).body).toEqual(['orders-value', 'users-value']);
  expect((await http(`${second.url}/config`)).body).toEqual({ compatibilityLevel: 'FORWARD' });
  expect((await http(`${second.url}/config/users-value`)).body).toEqual({ compatibilityLevel: 'BACKWARD' });

  // re-registering is idempotent; new schemas get the next ids and the next version
  expect((await client2.register(avro(userV2), { subject: 'users-value' })).id).toBe(b);
  const userV3 = { ...userV2, fields: [...userV2.fields, { name: 'city', type: 'string', default: '' }] };
  const { id: d } = await client2.register(avro(userV3), { subject: 'users-value' });
  expect(d).toBe(Math.max(a, b, c) + 1);
  expect((await http(`${second.url}/subjects/users-value/versions/latest`)).body).toMatchObject({ version: 3, id: d });
  const invoice = { type: 'record', name: 'Invoice', fields: [{ name: 'n', type: 'int' }] };
  expect((await client2.register(avro(invoice), { subject: 'invoices-value' })).id).toBe(d + 1);
});

test('concurrent registrations get distinct ids and versions', async () => {
  const server = await start(newTopic());
  const registry = new SchemaRegistry({ host: server.url });
  const schemas = Array.from({ length: 10 }, (_, i) => ({
    type: 'record',
    name: `Event${i}`,
    namespace: 'test.concurrent',
    fields: [{ name: `field${i}`, type: 'string' }],
  }));

  const ids = await Promise.all(schemas.map((s, i) => registry.register(avro(s), { subject: `subject-${i}` }).then((r) => r.id)));
  expect(new Set(ids).size).toBe(10);
  expect([...ids].sort((x, y) => x - y)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));

  // one subject, many writers: every schema becomes its own version
  await http(`${server.url}/config/shared`, 'PUT', { compatibility: 'NONE' });
  const shared = await Promise.all(
    schemas.map((s) => http(`${server.url}/subjects/shared/versions`, 'POST', { schema: JSON.stringify(s) })),
  );
  expect(shared.map((r) => r.status)).toEqual(Array(10).fill(200));
  expect(new Set(shared.map((r) => r.body.id))).toEqual(new Set(ids));
  expect((await http(`${server.url}/subjects/shared/versions`)).body).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));

  // the same new schema from many writers at once is registered once
  const same = { type: 'record', name: 'Same', fields: [{ name: 'x', type: 'long' }] };
  const again = await Promise.all(
    Array.from({ length: 5 }, () => http(`${server.url}/subjects/same/versions`, 'POST', { schema: JSON.stringify(same) })),
  );
  expect(new Set(again.map((r) => r.body.id)).size).toBe(1);
  expect((await http(`${server.url}/subjects/same/versions`)).body).toEqual([1]);
});

test('answers errors in the Confluent shape', async () => {
  const server = await start(newTopic());
  const url = server.url;
  const { body: registered } = await http(`${url}/subjects/known/versions`, 'POST', { schema: JSON.stringify(userV1) });
  const expectError = async (res: Promise<{ status: number; contentType: string | null; body: any }>, status: number, code: number) => {
    const r = await res;
    expect({ status: r.status, code: r.body?.error_code, type: r.contentType }).toEqual({ status, code, type: MEDIA_TYPE });
    expect(typeof r.body.message).toBe('string');
  };

  await expectError(http(`${url}/subjects/unknown/versions`), 404, 40401);
  await expectError(http(`${url}/subjects/unknown/versions/1`), 404, 40401);
  await expectError(http(`${url}/subjects/unknown/versions/latest`), 404, 40401);
  await expectError(http(`${url}/subjects/known/versions/2`), 404, 40402);
  await expectError(http(`${url}/subjects/known/versions/abc`), 422, 42202);
  await expectError(http(`${url}/schemas/ids/${registered.id + 100}`), 404, 40403);
  await expectError(http(`${url}/subjects/known`, 'POST', { schema: JSON.stringify(userV2) }), 404, 40403);
  await expectError(http(`${url}/subjects/unknown`, 'POST', { schema: JSON.stringify(userV1) }), 404, 40401);
  await expectError(http(`${url}/config/known`), 404, 40408);
  await expectError(http(`${url}/compatibility/subjects/unknown/versions/1`, 'POST', { schema: JSON.stringify(userV1) }), 404, 40401);
  await expectError(http(`${url}/compatibility/subjects/known/versions/5`, 'POST', { schema: JSON.stringify(userV1) }), 404, 40402);
  // as in Confluent, a subject without versions has nothing to be incompatible with
  const fresh = await http(`${url}/compatibility/subjects/unknown/versions/latest`, 'POST', { schema: JSON.stringify(userV1) });
  expect(fresh.body).toEqual({ is_compatible: true });
  await expectError(http(`${url}/subjects/known/versions`, 'POST', { schema: '{"type": "record"' }), 422, 42201);
  await expectError(http(`${url}/subjects/known/versions`, 'POST', { schema: '{"type": "nope"}' }), 422, 42201);
  await expectError(
    http(`${url}/subjects/known/versions`, 'POST', { schema: '{"type": "object"}', schemaType: 'JSON' }),
    422,
    42201,
  );
  await expectError(http(`${url}/subjects/known/versions`, 'POST', 'schema=x', 'text/plain'), 415, 415);

  // all three request media types are accepted
  for (const type of ['application/json', 'application/vnd.schemaregistry+json', MEDIA_TYPE]) {
    const lookup = await http(`${url}/subjects/known`, 'POST', { schema: JSON.stringify(userV1) }, type);
    expect(lookup.body).toEqual({ subject: 'known', version: 1, id: registered.id, schema: JSON.stringify(userV1) });
  }

  // the real client turns a 404 into an error
  const client = new SchemaRegistry({ host: url });
  await expect(client.getLatestSchemaId('unknown')).rejects.toMatchObject({ status: 404 });
  await expect(client.getRegistryIdBySchema('known', avro(userV2))).rejects.toThrow(/not found/i);
});

test('soft and permanent deletion of a subject', async () => {
  const server = await start(newTopic());
  const url = server.url;
  const { body: v1 } = await http(`${url}/subjects/doomed/versions`, 'POST', { schema: JSON.stringify(userV1) });
  const { body: v2 } = await http(`${url}/subjects/doomed/versions`, 'POST', { schema: JSON.stringify(userV2) });

  expect((await http(`${url}/subjects/doomed?permanent=true`, 'DELETE')).body.error_code).toBe(40405);
  expect((await http(`${url}/subjects/doomed`, 'DELETE')).body).toEqual([1, 2]);
  expect((await http(`${url}/subjects`)).body).toEqual([]);
  expect((await http(`${url}/subjects?deleted=true`)).body).toEqual(['doomed']);
  expect((await http(`${url}/subjects/doomed/versions`)).body.error_code).toBe(40401);
  // readers of old records still find the schema by id
  expect((await http(`${url}/schemas/ids/${v1.id}`)).body).toEqual({ schema: JSON.stringify(userV1) });

  // registering again makes a new version (numbers are never reused) with the old id
  const again = await http(`${url}/subjects/doomed/versions`, 'POST', { schema: JSON.stringify(userV2) });
  expect(again.body.id).toBe(v2.id);
  expect((await http(`${url}/subjects/doomed/versions`)).body).toEqual([3]);

  await http(`${url}/subjects/doomed`, 'DELETE');
  expect((await http(`${url}/subjects/doomed?permanent=true`, 'DELETE')).body).toEqual([1, 2, 3]);
  expect((await http(`${url}/subjects?deleted=true`)).body).toEqual([]);
  expect((await http(`${url}/schemas/ids/${v1.id}`)).body.error_code).toBe(40403);
});
