import { startTestService, type TestService } from '../support/service';

/**
 * Destination types as the API takes them: the types and their schemas at /v1/destination-types,
 * the same schemas in the OpenAPI document, and create and change checking a destination's url,
 * config and credentials against its type, with the service's own infrastructure refused.
 */
describe('destination types', () => {
  let svc: TestService;
  const base = () => `/v1/tenants/${svc.tenantId}/destinations`;
  beforeAll(async () => {
    svc = await startTestService({ LOG_LEVEL: 'warn' });
  });
  afterAll(() => svc?.stop());

  it('lists every type with its config schema, the same the OpenAPI document carries, without authentication', async () => {
    const res = await fetch(`${svc.url}/v1/destination-types`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { destination_types: { type: string; config_schema: Record<string, unknown> | null; auth_types: string[]; schemes: string[] }[] };
    expect(body.destination_types.map((t) => t.type)).toEqual(['webhook', 'kafka', 'amqp', 'nats', 'mqtt']);
    const doc = (await (await fetch(`${svc.url}/v1/openapi.json`)).json()) as { components: { schemas: Record<string, Record<string, unknown>> }; paths: Record<string, unknown> };
    const components: Record<string, string> = { kafka: 'KafkaDestinationConfig', amqp: 'AmqpDestinationConfig', nats: 'NatsDestinationConfig', mqtt: 'MqttDestinationConfig' };
    for (const t of body.destination_types) {
      if (t.type === 'webhook') {
        expect(t.config_schema).toBeNull();
        continue;
      }
      const { description: _d, ...component } = doc.components.schemas[components[t.type]!]!;
      expect([t.type, component]).toEqual([t.type, t.config_schema]);
      expect(t.config_schema!.required).toEqual(expect.any(Array));
    }
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v1/destination-types', '/v1/tenants/{tenant_id}/destinations/{destination_id}/transformation/test']));
  });

  it('creates a destination of each broker type; what a GET shows, a PUT takes back unchanged', async () => {
    const bodies = [
      { name: 'orders topic', type: 'kafka', url: 'kafka://127.0.0.1:9,127.0.0.2:9', config: { topic: 'orders', key: '{{body.customer.id}}', sasl_mechanism: 'scram-sha-256' }, auth: { type: 'basic', username: 'svc', password: 'pw' } },
      { name: 'rabbit', type: 'amqp', url: 'amqp://127.0.0.1:9/prod', config: { exchange: 'events', routing_key: 'orders.created' }, auth: { type: 'basic', username: 'guest', password: 'guest' } },
      { name: 'stream', type: 'nats', url: 'nats://127.0.0.1:9', config: { subject: 'orders.created' }, auth: { type: 'bearer', token: 'a-long-nats-token' } },
      { name: 'mqtt', type: 'mqtt', url: 'mqtt://127.0.0.1:9', config: { topic: 'shop/orders', protocol_version: 4 } },
    ];
    for (const body of bodies) {
      const created = await svc.api('POST', base(), body);
      expect([body.type, created.status]).toEqual([body.type, 201]);
      expect(created.body).toMatchObject({ type: body.type, url: body.url, config: body.config, transformation: null });
      const shown = await svc.api('GET', `${base()}/${created.body.id}`);
      // the secret part masked, never in clear
      if (body.auth) expect(JSON.stringify(shown.body.auth)).not.toContain(body.auth.type === 'bearer' ? 'a-long-nats-token' : '"pw"');
      const put = await svc.api('PUT', `${base()}/${created.body.id}`, shown.body);
      expect([body.type, put.status, put.body]).toEqual([body.type, 200, shown.body]);
    }
  });

  it('refuses a url, config or credentials that do not fit the type, naming each field', async () => {
    const cases: [Record<string, unknown>, { field: string; message: RegExp }[]][] = [
      [{ type: 'kafka', url: 'https://example.com/hook', config: { topic: 'x' } }, [{ field: 'url', message: /kafka: URL/ }]],
      [{ type: 'kafka', url: 'kafka://127.0.0.1:9' }, [{ field: 'config', message: /required for a kafka destination/ }]],
      [{ type: 'kafka', url: 'kafka://127.0.0.1:9', config: {} }, [{ field: 'config.topic', message: /is required/ }]],
      [{ type: 'kafka', url: 'kafka://127.0.0.1:9', config: { topic: 'bad topic!' } }, [{ field: 'config.topic', message: /Kafka topic name/ }]],
      [{ type: 'kafka', url: 'kafka://127.0.0.1:9', config: { topic: 't', key: '{{secret}}' } }, [{ field: 'config.key', message: /template may use/ }]],
      [{ type: 'kafka', url: 'kafka://127.0.0.1:9', config: { topic: 't', sasl_mechanism: 'plain' } }, [{ field: 'auth', message: /must be basic/ }]],
      [{ type: 'kafka', url: 'kafka://127.0.0.1:9/orders', config: { topic: 't' } }, [{ field: 'url', message: /only bootstrap servers/ }]],
      [{ type: 'amqp', url: 'amqp://user:pw@127.0.0.1:9', config: { exchange: '', routing_key: 'q' } }, [{ field: 'url', message: /must not carry credentials/ }]],
      [{ type: 'amqp', url: 'amqp://127.0.0.1:9', config: { exchange: '', routing_key: 'q', extra: 1 } }, [{ field: 'config.extra', message: /not a member/ }]],
      [{ type: 'amqp', url: 'amqp://127.0.0.1:9', config: { exchange: '', routing_key: 'q' }, auth: { type: 'header', name: 'x-k', value: 'abcdefghij' } }, [{ field: 'auth.type', message: /must be basic for a amqp destination/ }]],
      [{ type: 'nats', url: 'nats://127.0.0.1:9', config: { subject: 'orders.*' } }, [{ field: 'config.subject', message: /without spaces or wildcards/ }]],
      [{ type: 'mqtt', url: 'mqtt://127.0.0.1:9', config: { topic: 'a/#' } }, [{ field: 'config.topic', message: /without wildcards/ }]],
      [{ type: 'webhook', url: 'http://127.0.0.1:9/h', config: { topic: 'x' } }, [{ field: 'config', message: /must be null for a webhook/ }]],
      [{ url: 'ftp://127.0.0.1/h' }, [{ field: 'url', message: /http or https URL/ }]],
      [{ type: 'sqs', url: 'https://example.com' }, [{ field: 'type', message: /must be one of webhook, kafka, amqp, nats, mqtt/ }]],
    ];
    for (const [i, [body, errors]] of cases.entries()) {
      const res = await svc.api('POST', base(), { name: `bad ${i}`, ...body });
      expect([i, res.status, res.body.errors]).toEqual([i, 400, errors.map((e) => ({ field: e.field, message: expect.stringMatching(e.message) }))]);
    }
  });

  it("refuses a broker destination at the service's own Kafka or Redis, in any server of its list", async () => {
    const ownKafka = process.env.KAFKA_BROKERS!.split(',')[0]!;
    const redis = new URL(process.env.REDIS_URL!);
    for (const [type, url, config] of [
      ['kafka', `kafka://127.0.0.2:9,${ownKafka}`, { topic: 'hookline.webhooks.received' }],
      ['kafka', `kafka://localhost:${ownKafka.split(':')[1]}`, { topic: 'x' }],
      ['mqtt', `mqtt://${redis.hostname}:${redis.port || 6379}`, { topic: 'x' }],
    ] as const) {
      const res = await svc.api('POST', base(), { name: `own ${url}`, type, url, config });
      expect([url, res.status, res.body.errors]).toEqual([url, 422, [{ field: 'url', message: expect.stringMatching(/own endpoint or infrastructure/) }]]);
    }
  });

  it('changes a webhook into a broker destination, checking the members the change leaves together, and keeps it in the history', async () => {
    const created = await svc.api('POST', base(), { name: 'to become nats', url: 'http://127.0.0.1:9/h' });
    expect(created.status).toBe(201);
    const path = `${base()}/${created.body.id}`;
    const half = await svc.api('PATCH', path, { type: 'nats' });
    expect([half.status, half.body.errors]).toEqual([400, expect.arrayContaining([{ field: 'url', message: expect.stringMatching(/nats: URL/) }, { field: 'config', message: expect.stringMatching(/required/) }])]);
    const whole = await svc.api('PATCH', path, { type: 'nats', url: 'nats://127.0.0.1:9', config: { subject: 'orders' } });
    expect([whole.status, whole.body.type, whole.body.config]).toEqual([200, 'nats', { subject: 'orders' }]);
    const back = await svc.api('PATCH', path, { type: 'webhook', url: 'http://127.0.0.1:9/h' });
    expect([back.status, back.body.errors]).toEqual([400, [{ field: 'config', message: expect.stringMatching(/must be null/) }]]);
    const history = await svc.api('GET', `${path}/changes`);
    expect(history.body.changes[0]).toMatchObject({ action: 'updated', changes: { type: { from: 'webhook', to: 'nats' }, url: { to: 'nats://127.0.0.1:9' }, config: { from: null, to: { subject: 'orders' } } } });
  });

  it('checks a transformation compiles on create and update, and test-runs it on a saved payload or a body', async () => {
    const bad = await svc.api('POST', base(), { name: 'bad code', url: 'http://127.0.0.1:9/h', transformation: 'function transform(e) { return {' });
    expect([bad.status, bad.body.errors]).toEqual([400, [{ field: 'transformation', message: expect.stringMatching(/does not compile/) }]]);
    const none = await svc.api('POST', base(), { name: 'no transform fn', url: 'http://127.0.0.1:9/h', transformation: 'const x = 1;' });
    expect([none.status, none.body.errors?.[0]?.field]).toEqual([400, 'transformation']);
    const code = 'function transform(e) { return { body: { id: e.id, total: e.body.amount * 2 }, headers: { "x-shape": "v2" } }; }';
    const created = await svc.api('POST', base(), { name: 'reshaped', url: 'http://127.0.0.1:9/h', transformation: code });
    expect([created.status, created.body.transformation]).toEqual([201, code]);
    const test = `${base()}/${created.body.id}/transformation/test`;
    const payload = await svc.api('POST', `/v1/tenants/${svc.tenantId}/saved-payloads`, { name: 'order', payload: { amount: 21 } });
    const run = await svc.api('POST', test, { payload_id: payload.body.id });
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ outcome: 'send', content_type: 'application/json', headers: { 'x-shape': 'v2' }, cpu_ms: expect.any(Number) });
    expect(JSON.parse(run.body.body)).toEqual({ id: 'evt_test', total: 42 });
    expect(run.body.body_sha256).toMatch(/^[0-9a-f]{64}$/);
    // code tried before it is saved, and a body given here
    const drop = await svc.api('POST', test, { body: { amount: 1 }, transformation: 'function transform(e) { return e.body.amount < 5 ? null : { body: e.body }; }' });
    expect(drop.body).toMatchObject({ outcome: 'drop' });
    const loop = await svc.api('POST', test, { body: 'text', transformation: 'function transform(e) { for (;;) {} }' });
    expect(loop.body).toMatchObject({ outcome: 'fail', error: expect.stringMatching(/ran out of time/) });
    const neither = await svc.api('POST', test, {});
    expect([neither.status, neither.body.errors]).toEqual([400, [{ field: 'body', message: 'give exactly one of payload_id and body' }]]);
    const cleared = await svc.api('PATCH', `${base()}/${created.body.id}`, { transformation: null });
    expect([cleared.status, cleared.body.transformation]).toEqual([200, null]);
  });
});
