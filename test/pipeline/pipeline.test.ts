import Stripe from 'stripe';
import { receiverPool } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';
import { runScript } from '../support/process';
import { attemptsOf, sendEvent, transitionsOf, waitForStates } from '../support/flow';
import { readTopic } from '../../platform/kafka/topic-table';
import { CONFIG_VERSION_HEADER } from '../../pipeline/runtime/config-version';

const HOOK_LIMIT = 64 * 1024;

/** The stages together: providers, filters, fan-out, logs, and producers that bypass HTTP. */
describe('pipeline', () => {
  let svc: TestService;
  const receivers = receiverPool();
  const receiver = () => receivers.next();
  const destination = async (name: string, url: string) => {
    const res = await svc.api('POST', `/v1/tenants/${svc.tenantId}/destinations`, { name, url });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };

  beforeAll(async () => {
    // a record naming configuration not applied yet is held long enough to be seen held
    svc = await startTestService({ RETRY_TIERS: '100ms', LOG_LEVEL: 'info', INGEST_MAX_BODY_BYTES: String(HOOK_LIMIT), CONFIG_VERSION_WAIT_MS: '30000' });
  });
  afterAll(async () => {
    await Promise.all([svc?.stop(), receivers.closeAll()]);
  });

  it('fans one event out to one delivery per destination', async () => {
    const [a, b] = [await receiver(), await receiver()];
    const ids = [await destination('fan-a', a.url), await destination('fan-b', b.url)];
    const ing = await svc.api('POST', `/v1/tenants/${svc.tenantId}/ingesters`, { name: 'fan', provider: 'none', config: {}, destination_ids: ids });
    expect(ing.body.delivery_flows[0].destination_ids).toEqual(ids);
    const eventId = await sendEvent(`${svc.url}/v1/hooks/${ing.body.id}`, { fan: 'out' });
    const [ra, rb] = await Promise.all([a.waitForRequests(1), b.waitForRequests(1)]);
    expect(ra[0]!.headers['webhook-id']).not.toBe(rb[0]!.headers['webhook-id']);
    expect(ra[0]!.body.toString()).toBe('{"fan":"out"}');
    const attempts = await eventually('two deliveries', async () => {
      const rows = await attemptsOf(svc, eventId);
      return rows.length === 2 ? rows : undefined;
    });
    expect(new Set(attempts.map((r) => r.delivery_id))).toEqual(new Set([ra[0]!.headers['webhook-id'], rb[0]!.headers['webhook-id']]));
    const rows = await waitForStates(svc, eventId, ['received', 'validated', 'filtered', 'delivered', 'acked']);
    expect(rows.filter((t) => t.state === 'delivered')).toHaveLength(2);
  });

  it('verifies a Stripe-signed event, filters on its type, and logs what a filter dropped', async () => {
    const r = await receiver();
    const secret = 'whsec_test_pipeline_secret';
    const ing = await svc.api('POST', `/v1/tenants/${svc.tenantId}/ingesters`, {
      name: 'stripe',
      provider: 'stripe',
      config: { signing_secret: secret },
      filters: [{ type: 'event_type', op: 'in', values: ['charge.succeeded'] }],
      destination_ids: [await destination('stripe-dest', r.url)],
    });
    expect(ing.status).toBe(201);
    const hook = `${svc.url}/v1/hooks/${ing.body.id}`;
    const stripe = new Stripe('sk_test_unused');
    const post = async (type: string, tamper = false) => {
      const payload = JSON.stringify({ id: `evt_${type}`, object: 'event', type });
      const header = stripe.webhooks.generateTestHeaderString({ payload, secret });
      const res = await fetch(hook, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': header }, body: tamper ? payload.replace('evt_', 'evX_') : payload });
      expect(res.status).toBe(202);
      return ((await res.json()) as { event_id: string }).event_id;
    };
    const kept = await post('charge.succeeded');
    const dropped = await post('charge.failed');
    const forged = await post('charge.succeeded', true);

    await waitForStates(svc, kept, ['validated', 'filtered', 'delivered']);
    expect(JSON.parse((await r.waitForRequests(1))[0]!.body.toString()).type).toBe('charge.succeeded');
    const droppedStates = await waitForStates(svc, dropped, ['validated']);
    expect(droppedStates.map((t) => t.state)).not.toContain('filtered');
    const forgedStates = await waitForStates(svc, forged, ['failed']);
    expect(forgedStates.find((t) => t.state === 'failed')!.reason).toMatch(/signature/);

    const log = await eventually('the filter log line in ClickHouse', async () => {
      const rs = await svc.clickhouse.query({
        query: `SELECT level, message, stage, correlation_id, fields FROM ${svc.config.clickhouseDatabase}.logs WHERE tenant_id = {t:String} AND event_id = {e:String}`,
        query_params: { t: svc.tenantId, e: dropped },
        format: 'JSONEachRow',
      });
      const rows = await rs.json<{ level: string; message: string; stage: string; correlation_id: string; fields: string }>();
      return rows.find((l) => l.message === 'event dropped by filter');
    });
    expect(log.stage).toBe('filter');
    expect(log.correlation_id).toBeTruthy();
    expect(JSON.parse(log.fields)).toMatchObject({ rule_index: 0, reason: expect.stringContaining('charge.failed') });
    await new Promise((res) => setTimeout(res, 500));
    expect(r.requests).toHaveLength(1);
  });

  it('delivers events a producer wrote straight onto the received topic (the example of docs/ingestion.md)', async () => {
    const r = await receiver();
    const ing = await svc.api('POST', `/v1/tenants/${svc.tenantId}/ingesters`, { name: 'direct', provider: 'none', config: {}, destination_ids: [await destination('direct-dest', r.url)] });
    const env = { ...process.env, TOPIC_PREFIX: svc.config.topicPrefix };
    const out = await runScript('examples/produce-direct.ts', ['--tenant', svc.tenantId, '--ingester', ing.body.id, '--count', '50'], env);
    expect(out.code).toBe(0);
    const { produced, first_event_id } = JSON.parse(out.stdout) as { produced: number; first_event_id: string };
    expect(produced).toBe(50);
    await r.waitForRequests(50);
    const bodies = new Set(r.requests.map((q) => (JSON.parse(q.body.toString()) as { n: number }).n));
    expect(bodies.size).toBe(50);
    const states = (await waitForStates(svc, first_event_id, ['received', 'validated', 'filtered', 'delivered', 'acked'])).map((t) => t.state);
    expect(new Set(states)).toEqual(new Set(['received', 'validated', 'filtered', 'delivered', 'acked']));
    // the example names the newest configuration version, which holds the ingester
    const received = (await readTopic(svc.service.kafka, svc.service.topics.received)).find((rec) => rec.key?.toString() === `${svc.tenantId}/${first_event_id}`);
    expect(BigInt(String(received?.headers[CONFIG_VERSION_HEADER]))).toBeGreaterThanOrEqual(svc.service.store.versionOf('ingester', svc.tenantId, ing.body.id)!);
  });

  it('holds a record a producer wrote straight onto Kafka until the process has the configuration version it names', async () => {
    const r = await receiver();
    const ing = await svc.api('POST', `/v1/tenants/${svc.tenantId}/ingesters`, { name: 'direct-versioned', provider: 'none', config: {}, destination_ids: [await destination('direct-versioned-dest', r.url)] });
    // a version the configuration has not reached yet: the next change will be it
    const ahead = svc.service.store.version + 1n;
    const env = { ...process.env, TOPIC_PREFIX: svc.config.topicPrefix };
    const out = await runScript('examples/produce-direct.ts', ['--tenant', svc.tenantId, '--ingester', ing.body.id, '--config-version', ahead.toString()], env);
    expect(out.code).toBe(0);
    const { first_event_id } = JSON.parse(out.stdout) as { first_event_id: string };
    await eventually('the record stored as received', async () => ((await transitionsOf(svc, first_event_id)).some((t) => t.state === 'received') ? true : undefined));
    await new Promise((res) => setTimeout(res, 2_000));
    expect(r.requests).toHaveLength(0);
    expect((await transitionsOf(svc, first_event_id)).map((t) => t.state)).toEqual(['received']);
    // any change of the configuration brings the version there: the record goes on
    await destination('moves the version on', r.url);
    expect(svc.service.store.version).toBeGreaterThanOrEqual(ahead);
    await r.waitForRequests(1);
    await waitForStates(svc, first_event_id, ['validated', 'filtered', 'delivered']);
  });

  // `/v1/hooks/{id}/` (trailing slash) is the same Hook URL, answered by the router; the plain
  // path of an uncompressed body is answered without it: both must store and answer the same
  it('answers the Hook URL the same with and without the web framework', async () => {
    const ing = await svc.api('POST', `/v1/tenants/${svc.tenantId}/ingesters`, { name: 'paths', provider: 'none', config: {} });
    const send = (suffix: string, n: number) => fetch(`${svc.url}/v1/hooks/${ing.body.id as string}${suffix}?src=test&n=${n}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-correlation-id': `paths-${n}`, 'x-extra': 'a' }, body: '{"same":true}' });
    const [fast, routed] = [await send('', 1), await send('/', 2)];
    for (const [res, n] of [[fast, 1], [routed, 2]] as const) {
      expect(res.status).toBe(202);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(res.headers.get('x-correlation-id')).toBe(`paths-${n}`);
      expect(res.headers.get('x-request-id')).toMatch(/^req_/);
      expect(await res.json()).toEqual({ event_id: expect.stringMatching(/^evt_/), correlation_id: `paths-${n}`, status: 'received' });
    }
    const rows = await eventually('both events stored', async () => {
      const rs = await svc.clickhouse.query({ query: `SELECT correlation_id, content_type, headers, body FROM ${svc.config.clickhouseDatabase}.events FINAL WHERE ingester_id = {id:String} ORDER BY correlation_id`, query_params: { id: ing.body.id }, format: 'JSONEachRow' });
      const got = await rs.json<{ correlation_id: string; content_type: string; headers: string; body: string }>();
      return got.length === 2 ? got : undefined;
    });
    expect(rows.map((r) => r.correlation_id)).toEqual(['paths-1', 'paths-2']);
    expect(rows[0]!.body).toBe(rows[1]!.body);
    expect(rows[0]!.content_type).toBe('application/json');
    // the same headers in the same order; only the correlation id differs
    const headers = (h: string) => (JSON.parse(h) as [string, string][]).filter(([name]) => name !== 'x-correlation-id');
    expect(headers(rows[0]!.headers)).toEqual(headers(rows[1]!.headers));
    expect(headers(rows[0]!.headers)).toContainEqual(['x-extra', 'a']);
  });

  it('refuses a body over the limit from both paths with the same problem, chunked or not', async () => {
    const ing = await svc.api('POST', `/v1/tenants/${svc.tenantId}/ingesters`, { name: 'big', provider: 'none', config: {} });
    const hook = `${svc.url}/v1/hooks/${ing.body.id as string}`;
    const big = Buffer.alloc(HOOK_LIMIT + 1, 'a');
    // a declared length over the limit goes to the router; a chunked body outgrows it in the fast path
    const declared = await fetch(hook, { method: 'POST', body: big });
    const chunked = await fetch(hook, { method: 'POST', body: new ReadableStream({ start(c) { c.enqueue(big.subarray(0, 40_000)); c.enqueue(big.subarray(40_000)); c.close(); } }), duplex: 'half' } as RequestInit);
    for (const res of [declared, chunked]) {
      expect(res.status).toBe(413);
      expect(res.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
      const problem = (await res.json()) as Record<string, unknown>;
      expect(problem).toMatchObject({ status: 413, title: expect.any(String), type: expect.stringMatching(/\/errors\/payload-too-large$/), instance: res.headers.get('x-request-id') });
    }
    // exactly at the limit is accepted, chunked too
    const atLimit = await fetch(hook, { method: 'POST', body: new ReadableStream({ start(c) { c.enqueue(big.subarray(0, HOOK_LIMIT)); c.close(); } }), duplex: 'half' } as RequestInit);
    expect(atLimit.status).toBe(202);
  });
});
