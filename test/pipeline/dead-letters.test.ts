import type { Kafka } from 'kafkajs';
import { SCOPES } from '../../core/scopes';
import { createProducer } from '../../platform/kafka/client';
import { destinationWithIngester, transitionsOf, waitForStates } from '../support/flow';
import { uniqueSuffix } from '../support/ids';
import { runScript } from '../support/process';
import { startReceiver, type Receiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';

type Json = Record<string, any>;

/**
 * The dead letters of every stage against the running service: a record a stage set aside is
 * copied into ClickHouse and listed to its tenant with its stage and reason; once its cause is
 * fixed, replaying it puts the record back where it was read and the event is delivered, once.
 * Another tenant neither sees nor replays it; bytes that do not decode belong to no tenant.
 */
describe('dead letters of every stage', () => {
  let svc: TestService;
  let receiver: Receiver;
  let kafka: Kafka;
  const base = () => `/v1/tenants/${svc.tenantId}`;
  let otherTenant: string;
  let otherKey: string;

  beforeAll(async () => {
    [svc, receiver] = await Promise.all([startTestService({ RATE_LIMITS: 'default=100000/60s' }), startReceiver()]);
    kafka = svc.service.kafka;
    otherTenant = `${svc.tenantId}-other`;
    otherKey = await svc.newKey([...SCOPES], { tenantId: otherTenant });
  }, 60_000);
  afterAll(async () => {
    await Promise.all([svc?.stop(), receiver?.close()]);
  });

  async function post(hookUrl: string, body: unknown, headers: Record<string, string> = {}): Promise<string> {
    const res = await fetch(hookUrl, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    expect(res.status).toBe(202);
    return ((await res.json()) as { event_id: string }).event_id;
  }

  /** The tenant's letter of this event, once the sink has copied it. */
  async function letterOfEvent(eventId: string, query = ''): Promise<Json> {
    return eventually(`the dead letter of ${eventId} listed`, async () => {
      const res = await svc.api('GET', `${base()}/dead-letters?limit=200${query}`);
      expect(res.status).toBe(200);
      return (res.body.dead_letters as Json[]).find((l) => l.event_id === eventId);
    });
  }

  /** An ingester routed to the receiver whose stored filters no longer compile: its events are set aside by the filter stage. */
  async function brokenIngester(name: string) {
    const made = await destinationWithIngester(svc, name, receiver.url, {}, { filters: [{ type: 'header', name: 'x-tag', op: 'matches', pattern: '^t' }] });
    // a lookahead, written to the config topic the way an older version could store it
    const stored = svc.service.store.get('ingester', svc.tenantId, made.ingesterId)!;
    await svc.service.store.put({ ...stored, filters: [{ type: 'header', name: 'x-tag', op: 'matches', pattern: '^t(?=a)' }] });
    return made;
  }

  it('a record the filter stage sets aside is listed with stage and reason, stored in ClickHouse, hidden from other tenants, and delivered once when replayed after the fix', async () => {
    const { ingesterId, hookUrl } = await brokenIngester(`broken-${uniqueSuffix()}`);
    const eventId = await post(hookUrl, { order: 1 }, { 'x-tag': 'ta' });
    await waitForStates(svc, eventId, ['failed', 'dlq_queued']);

    const letter = await letterOfEvent(eventId, '&stage=filter');
    expect(letter).toMatchObject({
      id: expect.stringMatching(/^dlt_[0-9a-z]{26}$/),
      stage: 'filter',
      reason: expect.stringMatching(/^filter not evaluated: the ingester's filters are invalid: filters\[0\]\.pattern is not a valid RE2 regular expression/),
      record: 'WebhookEvent',
      resource_id: ingesterId,
      source: { topic: svc.service.topics.received, partition: expect.any(Number), offset: expect.any(Number) },
      replayed_at: null,
      replayed_by: null,
    });
    expect(Date.parse(letter.at)).toBeGreaterThan(Date.now() - 120_000);

    // in ClickHouse, with the exact bytes that were read
    const rs = await svc.clickhouse.query({
      query: `SELECT tenant_id, stage, reason, source_topic, named_tenant_id, event_id, value_sha256 FROM ${svc.config.clickhouseDatabase}.dead_letters FINAL WHERE id = {id:String}`,
      query_params: { id: letter.id },
      format: 'JSONEachRow',
    });
    expect(await rs.json()).toEqual([{ tenant_id: svc.tenantId, stage: 'filter', reason: letter.reason, source_topic: svc.service.topics.received, named_tenant_id: svc.tenantId, event_id: eventId, value_sha256: expect.stringMatching(/^[0-9a-f]{64}$/) }]);
    const one = await svc.api('GET', `${base()}/dead-letters/${letter.id}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ ...letter, value_sha256: expect.any(String), value_bytes: expect.any(Number) });
    // the record's exact bytes, its body sealed as on Kafka: the service's codec opens it
    const value = Buffer.from(one.body.value_base64, 'base64');
    expect(value.includes(Buffer.from('{"order":1}'))).toBe(false);
    expect((await svc.service.apiServices!.replay.codec.decode('WebhookEvent', value)).body.toString()).toBe('{"order":1}');

    // another tenant: nothing on its own path, 404 on this one
    const theirs = await svc.api('GET', `/v1/tenants/${otherTenant}/dead-letters`, undefined, { key: otherKey });
    expect(theirs.body).toEqual({ dead_letters: [], next_cursor: null });
    for (const [method, path] of [['GET', `/dead-letters/${letter.id}`], ['POST', `/dead-letters/${letter.id}/replay`]] as const) {
      expect((await svc.api(method, `/v1/tenants/${otherTenant}${path}`, undefined, { key: otherKey })).status).toBe(404);
      expect((await svc.api(method, `${base()}${path}`, undefined, { key: otherKey })).status).toBe(404);
    }
    // a key limited to another ingester does not see it either
    const limited = await svc.newKey([...SCOPES], { resourceIds: ['ing_01j9zx5w3k8f6t2q4r7m1n0bcd'] });
    expect((await svc.api('GET', `${base()}/dead-letters`, undefined, { key: limited })).body.dead_letters.map((l: Json) => l.id)).not.toContain(letter.id);
    const denied = await svc.api('POST', `${base()}/dead-letters/${letter.id}/replay`, undefined, { key: limited });
    expect([denied.status, denied.body.resource_id]).toEqual([403, ingesterId]);
    expect(receiver.requests).toHaveLength(0);

    // the cause fixed: filters that compile; the replay puts the record back and the event is delivered
    const fixed = await svc.api('PUT', `${base()}/ingesters/${ingesterId}`, { name: 'fixed', filters: [{ type: 'header', name: 'x-tag', op: 'matches', pattern: '^t' }] });
    expect(fixed.status).toBe(200);
    const replayed = await svc.api('POST', `${base()}/dead-letters/${letter.id}/replay`);
    expect(replayed.status).toBe(202);
    expect(replayed.body).toMatchObject({
      status: 'replayed', dead_letter_id: letter.id, stage: 'filter', event_id: eventId, source: letter.source,
      written: { topic: svc.service.topics.received, partition: expect.any(Number), offset: expect.any(Number) },
    });
    const [request] = await receiver.waitForRequests(1);
    expect(JSON.parse(request!.body.toString())).toEqual({ order: 1 });
    const states = await waitForStates(svc, eventId, ['replayed', 'filtered', 'delivered']);
    expect(states.find((s) => s.state === 'replayed')!.reason).toContain(letter.id);

    // once: a second replay is refused, and the list says when and by whom
    const again = await svc.api('POST', `${base()}/dead-letters/${letter.id}/replay`);
    expect(again.status).toBe(409);
    expect(again.body.detail).toMatch(/was replayed/);
    const marked = await eventually('the replay listed', async () => {
      const l = await letterOfEvent(eventId);
      return l.replayed_at ? l : undefined;
    });
    expect(marked.replayed_by).toMatch(/^key_/);
    expect((await svc.api('POST', `${base()}/dead-letters/${letter.id}/replay`)).status).toBe(409);
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.requests).toHaveLength(1);
    expect((await transitionsOf(svc, eventId)).filter((t) => t.state === 'delivered')).toHaveLength(1);
  }, 120_000);

  it('the CLI lists, shows and replays a tenant\'s letters through the API, by stage and time, a page at a time', async () => {
    const { ingesterId, hookUrl } = await brokenIngester(`cli-${uniqueSuffix()}`);
    const from = new Date(Date.now() - 1_000).toISOString();
    const events = [await post(hookUrl, { cli: 1 }, { 'x-tag': 'ta' }), await post(hookUrl, { cli: 2 }, { 'x-tag': 'ta' })];
    const second = await letterOfEvent(events[1]!);
    const first = await letterOfEvent(events[0]!);
    const env = { ...process.env, HOOKLINE_API_KEY: svc.apiKey, HOOKLINE_API_URL: svc.url, HOOKLINE_TENANT: svc.tenantId };
    const cli = async (...args: string[]) => {
      const r = await runScript('cli/main.ts', ['dead-letters', ...args], env);
      if (r.code !== 0) throw new Error(`dead-letters ${args.join(' ')}: ${r.stderr}`);
      return JSON.parse(r.stdout) as Json;
    };
    // newest first, one at a time: the cursor goes on with the same filters
    const [page1, one, other] = await Promise.all([
      cli('list', '--stage', 'filter', '--from', from, '--limit', '1'),
      cli('get', first.id),
      runScript('cli/main.ts', ['dead-letters', 'replay', first.id, '--tenant', otherTenant], { ...env, HOOKLINE_API_KEY: otherKey }),
    ]);
    expect(page1.dead_letters).toEqual([second]);
    const page2 = await cli('list', '--stage', 'filter', '--from', from, '--limit', '1', '--cursor', page1.next_cursor);
    expect(page2.dead_letters).toEqual([first]);
    expect(one).toMatchObject({ ...first, value_sha256: expect.any(String) });
    // another tenant's key cannot reach it
    expect(other.code).toBe(1);
    expect(other.stderr.trim()).toMatch(/^404 not-found: dead letter dlt_\w+ does not exist$/);
    expect((await cli('list', '--stage', 'deliver', '--from', from)).dead_letters).toEqual([]);
    expect((await cli('list', '--to', from)).dead_letters.map((l: Json) => l.id)).not.toContain(first.id);

    expect((await svc.api('PUT', `${base()}/ingesters/${ingesterId}`, { name: 'fixed from the command line', filters: [] })).status).toBe(200);
    const replayed = await cli('replay', first.id);
    expect(replayed).toMatchObject({ status: 'replayed', dead_letter_id: first.id, event_id: events[0], written: { topic: svc.service.topics.received } });
    await waitForStates(svc, events[0]!, ['replayed', 'delivered']);
    const refused = await runScript('cli/main.ts', ['dead-letters', 'replay', first.id], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim()).toMatch(/^409 conflict: dead letter dlt_\w+ cannot be replayed: its record was replayed/);
  }, 120_000);

  it('bytes that do not decode, written straight onto webhooks.received, are the operator\'s: in ClickHouse, listed to no tenant', async () => {
    const garbage = Buffer.from(`not avro ${uniqueSuffix()}`);
    const producer = createProducer(kafka);
    await producer.connect();
    try {
      await producer.send({ topic: svc.service.topics.received, acks: -1, messages: [{ key: `${svc.tenantId}/ing_garbage`, value: garbage }] });
    } finally {
      await producer.disconnect();
    }
    const row = await eventually('the undecodable letter in ClickHouse', async () => {
      const rs = await svc.clickhouse.query({
        query: `SELECT id, tenant_id, named_tenant_id, stage, reason, record FROM ${svc.config.clickhouseDatabase}.dead_letters FINAL WHERE value_sha256 = {sha:String}`,
        query_params: { sha: require('node:crypto').createHash('sha256').update(garbage).digest('hex') },
        format: 'JSONEachRow',
      });
      const [r] = await rs.json<Json>();
      return r;
    });
    expect(row).toMatchObject({ tenant_id: '', named_tenant_id: svc.tenantId, stage: 'validate', record: '', reason: expect.stringMatching(/^the record cannot be decoded as WebhookEvent: /) });
    expect((await svc.api('GET', `${base()}/dead-letters?limit=200`)).body.dead_letters.map((l: Json) => l.id)).not.toContain(row.id);
    expect((await svc.api('GET', `${base()}/dead-letters/${row.id}`)).status).toBe(404);
    expect((await svc.api('POST', `${base()}/dead-letters/${row.id}/replay`)).status).toBe(404);

    // the operator sees it beside the deployment, and puts it back once (it cannot decode now
    // either: the validate stage sets it aside again, a letter of its own)
    const env = { ...process.env, TOPIC_PREFIX: svc.config.topicPrefix, DATA_DIR: svc.config.dataDir };
    const listed = await runScript('cli/main.ts', ['dead-letters', 'list', '--operator', '--stage', 'validate'], env);
    expect(listed.stderr).toBe('');
    const mine = (JSON.parse(listed.stdout).dead_letters as Json[]).find((l) => l.id === row.id);
    expect(mine).toMatchObject({ tenant_id: null, named_tenant_id: svc.tenantId, stage: 'validate', reason: row.reason, source: { topic: svc.service.topics.received }, replayed_at: null });
    const replayed = await runScript('cli/main.ts', ['dead-letters', 'replay', row.id, '--operator'], env);
    expect(replayed.stderr).toBe('');
    expect(JSON.parse(replayed.stdout)).toMatchObject({ status: 'replayed', dead_letter_id: row.id, tenant_id: null, written: { topic: svc.service.topics.received } });
    const again = await eventually('the bytes set aside again', async () => {
      const rs = await svc.clickhouse.query({
        query: `SELECT id FROM ${svc.config.clickhouseDatabase}.dead_letters FINAL WHERE tenant_id = '' AND value_sha256 = {sha:String} AND id != {id:String}`,
        query_params: { sha: require('node:crypto').createHash('sha256').update(garbage).digest('hex'), id: row.id },
        format: 'JSONEachRow',
      });
      const [r] = await rs.json<Json>();
      return r;
    });
    expect(again.id).not.toBe(row.id);
    const twice = await runScript('cli/main.ts', ['dead-letters', 'replay', row.id, '--operator'], env);
    expect(twice.code).toBe(1);
    expect(twice.stderr.trim()).toMatch(/^dead letter dlt_\w+ cannot be replayed: its record was replayed at .* by operator$/);
    // the replay is recorded where the API reads it too
    const marks = await eventually('the replay in ClickHouse', async () => {
      const rs = await svc.clickhouse.query({ query: `SELECT letter_id, replayed_by FROM ${svc.config.clickhouseDatabase}.dead_letter_replays FINAL WHERE letter_id = {id:String}`, query_params: { id: row.id }, format: 'JSONEachRow' });
      const found = await rs.json<Json>();
      return found.length > 0 ? found : undefined;
    });
    expect(marks).toEqual([{ letter_id: row.id, replayed_by: 'operator' }]);
  }, 120_000);
});
