import { Webhook } from 'standardwebhooks';
import { receiverPool, startReceiver, type Receiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';
import { runScript } from '../support/process';
import { newSigningSecret } from '../../core/signing/standard-webhooks';
import { attemptsOf, destinationWithIngester, sendEvent, transitionsOf, waitForStates } from '../support/flow';
import { readTopic } from '../../platform/kafka/topic-table';
import { CONFIG_VERSION_HEADER } from '../../pipeline/runtime/config-version';

/** The delivery engine against real Kafka, Redis and chdb, with schedules short enough to watch. */
describe('delivery engine', () => {
  let svc: TestService;
  const receivers = receiverPool();
  const receiver = () => receivers.next();

  beforeAll(async () => {
    svc = await startTestService({ RETRY_TIERS: '100ms', BREAKER_MIN_ATTEMPTS: '4', BREAKER_ERROR_PERCENT: '50', BREAKER_RESET_MS: '2000', DELIVERY_TIMEOUT_MS: '3000' });
  });
  afterAll(async () => {
    await Promise.all([svc?.stop(), receivers.closeAll()]);
  });

  it('retries on the schedule with one webhook-id, then delivers and acks', async () => {
    const r = await receiver();
    r.respondBy((_req, i) => ({ status: i < 3 ? 500 : 200 }));
    const { hookUrl, secret } = await destinationWithIngester(svc, 'flaky', r.url, { retry_schedule_ms: [0, 300, 300, 300] });
    const eventId = await sendEvent(hookUrl);
    const got = await r.waitForRequests(4);
    const ids = new Set(got.map((q) => q.headers['webhook-id']));
    expect(ids.size).toBe(1);
    for (let i = 1; i < 4; i++) expect(got[i]!.at - got[i - 1]!.at).toBeGreaterThanOrEqual(260);
    // every attempt is signed afresh and verifies
    for (const q of got) {
      expect(() => new Webhook(secret).verify(q.body.toString(), { 'webhook-id': String(q.headers['webhook-id']), 'webhook-timestamp': String(q.headers['webhook-timestamp']), 'webhook-signature': String(q.headers['webhook-signature']) })).not.toThrow();
    }
    const rows = await waitForStates(svc, eventId, ['received', 'validated', 'filtered', 'delivered', 'acked']);
    expect(rows.filter((t) => t.state === 'failed')).toHaveLength(0);
    const attempts = await eventually('four attempt rows', async () => {
      const a = await attemptsOf(svc, eventId);
      return a.length === 4 ? a : undefined;
    });
    expect(attempts.map((a) => [a.attempt_number, a.status, a.response_code])).toEqual([
      [1, 'retrying', 500],
      [2, 'retrying', 500],
      [3, 'retrying', 500],
      [4, 'delivered', 200],
    ]);
    await new Promise((res) => setTimeout(res, 500));
    expect(r.requests).toHaveLength(4);
    // one log line per attempt, written by the sink from the outcome record: no second copy shipped
    const deliveryId = rows.find((t) => t.state === 'delivered')!.delivery_id;
    const lines = await eventually('four attempt log lines', async () => {
      const rs = await svc.clickhouse.query({ query: `SELECT level, message, stage, fields FROM ${svc.config.clickhouseDatabase}.logs FINAL WHERE tenant_id = {t:String} AND delivery_id = {d:String} ORDER BY ts`, query_params: { t: svc.tenantId, d: deliveryId }, format: 'JSONEachRow' });
      const l = await rs.json<{ level: string; message: string; stage: string; fields: string }>();
      return l.length >= 4 ? l : undefined;
    });
    expect(lines.map((l) => [l.level, l.message, l.stage, JSON.parse(l.fields).attempt, JSON.parse(l.fields).response_code])).toEqual([
      ['info', 'attempt failed; retry scheduled', 'deliver', 1, 500],
      ['info', 'attempt failed; retry scheduled', 'deliver', 2, 500],
      ['info', 'attempt failed; retry scheduled', 'deliver', 3, 500],
      ['info', 'delivered', 'deliver', 4, 200],
    ]);
  });

  it('dead-letters an exhausted delivery, and a retry through the API delivers it as a new delivery', async () => {
    const r = await receiver();
    r.respondWith(500);
    const { hookUrl } = await destinationWithIngester(svc, 'down', r.url, { retry_schedule_ms: [0, 100, 100] });
    const eventId = await sendEvent(hookUrl);
    const rows = await waitForStates(svc, eventId, ['failed', 'dlq_queued']);
    expect(r.requests).toHaveLength(3);
    const deadId = rows.find((t) => t.state === 'dlq_queued')!.delivery_id;
    expect(rows.find((t) => t.state === 'failed')!.reason).toMatch(/retries exhausted after 3 attempts/);

    r.respondWith(200);
    const retry = await eventually('the dead delivery to be retriable', async () => {
      const res = await svc.api('POST', `/v1/tenants/${svc.tenantId}/events/${eventId}/retry`);
      return res.status === 202 ? res : undefined;
    });
    expect(retry.body).toMatchObject({ status: 'queued', delivery_id: expect.stringMatching(/^dlv_/), message: expect.any(String) });
    expect(retry.body.delivery_id).not.toBe(deadId);
    await r.waitForRequests(4);
    expect(r.requests[3]!.headers['webhook-id']).toBe(retry.body.delivery_id);
    const after = await waitForStates(svc, eventId, ['replayed', 'delivered']);
    expect(after.find((t) => t.state === 'replayed')!.delivery_id).toBe(retry.body.delivery_id);
    expect(after.find((t) => t.state === 'delivered')!.delivery_id).toBe(retry.body.delivery_id);

    const again = await svc.api('POST', `/v1/tenants/${svc.tenantId}/events/${eventId}/retry`);
    expect(again.status).toBe(409);
    const unknown = await svc.api('POST', `/v1/tenants/${svc.tenantId}/events/evt_01jzzzzzzzzzzzzzzzzzzzzzzz/retry`);
    expect(unknown.status).toBe(404);
  });

  it('disables the destination on 410 Gone and stops trying', async () => {
    const r = await receiver();
    r.respondWith(410);
    const { hookUrl, destinationId } = await destinationWithIngester(svc, 'gone', r.url, { retry_schedule_ms: [0, 100, 100, 100] });
    const eventId = await sendEvent(hookUrl);
    const rows = await waitForStates(svc, eventId, ['failed', 'dlq_queued']);
    expect(rows.find((t) => t.state === 'failed')!.reason).toMatch(/410/);
    const dest = await svc.api('GET', `/v1/tenants/${svc.tenantId}/destinations/${destinationId}`);
    expect(dest.body.status).toBe('disabled');
    expect(dest.body.disabled_reason).toMatch(/Gone/);
    await new Promise((res) => setTimeout(res, 500));
    expect(r.requests).toHaveLength(1);
  });

  it('honours Retry-After on 429 and 503', async () => {
    const r = await receiver();
    r.respondBy((_req, i) => (i === 0 ? { status: 429, headers: { 'retry-after': '1' } } : i === 1 ? { status: 503, headers: { 'retry-after': '1' } } : { status: 200 }));
    const { hookUrl } = await destinationWithIngester(svc, 'throttled', r.url, { retry_schedule_ms: [0, 100, 100, 100] });
    const eventId = await sendEvent(hookUrl);
    const got = await r.waitForRequests(3);
    expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(950);
    expect(got[2]!.at - got[1]!.at).toBeGreaterThanOrEqual(950);
    await waitForStates(svc, eventId, ['delivered']);
  });

  it('opens the breaker of a failing destination, holds its deliveries without burning attempts, and leaves others alone', async () => {
    const bad = await receiver();
    const good = await receiver();
    let healthy = false;
    bad.respondBy(() => ({ status: healthy ? 200 : 503 }));
    const schedule = Array.from({ length: 30 }, (_, i) => (i === 0 ? 0 : 100));
    const b = await destinationWithIngester(svc, 'breaker-bad', bad.url, { retry_schedule_ms: schedule });
    const g = await destinationWithIngester(svc, 'breaker-good', good.url);
    const badEvent = await sendEvent(b.hookUrl);

    // four quick failures open the breaker; then nothing reaches the destination for the reset window
    await bad.waitForRequests(4);
    const openedAt = bad.requests[3]!.at;
    await new Promise((res) => setTimeout(res, 1200));
    expect(bad.requests).toHaveLength(4);

    // another destination is delivered to at once meanwhile
    const sent = Date.now();
    const goodEvent = await sendEvent(g.hookUrl);
    await good.waitForRequests(1, 5000);
    expect(good.requests[0]!.at - sent).toBeLessThan(1500);
    await waitForStates(svc, goodEvent, ['delivered']);

    // half-open: one trial after the reset window; it fails, so the breaker opens again
    await bad.waitForRequests(5, 5000);
    expect(bad.requests[4]!.at - openedAt).toBeGreaterThanOrEqual(1900);
    healthy = true;
    // the next trial succeeds and closes it
    await waitForStates(svc, badEvent, ['delivered'], 15_000);
    const attempts = await eventually('attempt rows for every request', async () => {
      const a = await attemptsOf(svc, badEvent);
      return a.length === bad.requests.length ? a : undefined;
    });
    // waiting behind an open breaker burned no attempt: one attempt number per request made
    expect(attempts.map((a) => a.attempt_number)).toEqual(bad.requests.map((_, i) => i + 1));
    expect(attempts[attempts.length - 1]!.status).toBe('delivered');
    const states = (await transitionsOf(svc, badEvent)).map((t) => t.state);
    expect(states).not.toContain('failed');
  });
  it('counts timeouts as failures: a destination that never answers trips its breaker', async () => {
    const r = await receiver();
    r.respondBy(() => 'hang');
    const { hookUrl } = await destinationWithIngester(svc, 'silent', r.url, { retry_schedule_ms: [0, 1000, 1000, 1000, 1000, 1000] });
    await Promise.all([1, 2, 3, 4, 5, 6].map((n) => sendEvent(hookUrl, { n })));
    await r.waitForRequests(6);
    // each of the six times out after DELIVERY_TIMEOUT_MS (3 s), its retry due 1 s later. The fourth
    // timeout opens the breaker at the earliest (BREAKER_MIN_ATTEMPTS), and once all six have timed
    // out it is open whatever came between; so the next request to arrive is the half-open trial,
    // BREAKER_RESET_MS (2 s) after the breaker opened. Without the breaker it would be a retry,
    // at most 1 s after the fourth request's timeout. An attempt's timer starts before its request
    // reaches the receiver (connecting, queueing), so times taken at the receiver put the timeouts
    // late by up to a few hundred ms on a busy machine: the bound sits between 1 s and 2 s.
    const fourthTimeout = r.requests[3]!.at + 3_000;
    const allTimedOut = r.requests[5]!.at + 3_000 + 100;
    const next = await eventually('a request after the first six timed out', async () => r.requests.find((q) => q.at > allTimedOut), 15_000, 50);
    expect(next.at - fourthTimeout).toBeGreaterThanOrEqual(1_500);
  });

  it('replays a destination\'s dead letters in bulk from the CLI, each once', async () => {
    const r = await receiver();
    r.respondWith(500);
    const { hookUrl, destinationId } = await destinationWithIngester(svc, 'bulk', r.url, { retry_schedule_ms: [0] });
    const events = await Promise.all([1, 2, 3].map((n) => sendEvent(hookUrl, { n })));
    for (const e of events) await waitForStates(svc, e, ['dlq_queued']);
    expect(r.requests).toHaveLength(3);
    r.respondWith(200);
    const env = { ...process.env, TOPIC_PREFIX: svc.config.topicPrefix, DATA_DIR: svc.config.dataDir };
    const first = await runScript('cli/main.ts', ['dlq', 'replay', '--destination', destinationId], env);
    expect(first.code).toBe(0);
    const summary = JSON.parse(first.stdout) as { dead_letters: number; replayed: number; already_replayed: number; delivery_ids: string[] };
    expect(summary).toMatchObject({ destination_id: destinationId, dead_letters: 3, replayed: 3, already_replayed: 0 });
    expect(first.stderr).toMatch(/replaying .*3\/3 dead letters/);
    await r.waitForRequests(6);
    expect(new Set(r.requests.slice(3).map((q) => String(q.headers['webhook-id'])))).toEqual(new Set(summary.delivery_ids));
    // the replayed tasks name the configuration the CLI had applied, which holds the destination
    const destinationVersion = svc.service.store.versionOf('destination', svc.tenantId, destinationId)!;
    const codec = svc.service.apiServices!.replay.codec;
    const replayedTasks: (string | undefined)[] = [];
    for (const record of await readTopic(svc.service.kafka, svc.service.topics.deliveryRequested)) {
      const task = await codec.decode('DeliveryTask', record.value!);
      if (summary.delivery_ids.includes(task.delivery_id)) replayedTasks.push(record.headers[CONFIG_VERSION_HEADER]?.toString());
    }
    expect(replayedTasks).toHaveLength(3);
    for (const version of replayedTasks) expect(BigInt(version ?? -1)).toBeGreaterThanOrEqual(destinationVersion);
    for (const e of events) await waitForStates(svc, e, ['replayed', 'delivered']);
    const second = await runScript('cli/main.ts', ['dlq', 'replay', '--destination', destinationId, '--no-progress'], env);
    expect(JSON.parse(second.stdout)).toMatchObject({ dead_letters: 3, replayed: 0, already_replayed: 3 });
    await new Promise((res) => setTimeout(res, 500));
    expect(r.requests).toHaveLength(6);
  });
});

describe('SSRF guard in the delivery path', () => {
  let svc: TestService;
  let r: Receiver;
  beforeAll(async () => {
    [svc, r] = await Promise.all([startTestService({ DESTINATION_ALLOWED_NETWORKS: 'none', RETRY_TIERS: '100ms' }), startReceiver()]);
  });
  afterAll(async () => {
    await Promise.all([svc?.stop(), r?.close()]);
  });

  it('refuses a loopback destination when it is created', async () => {
    const res = await svc.api('POST', `/v1/tenants/${svc.tenantId}/destinations`, { name: 'internal now', url: r.url.replace('127.0.0.1', 'localhost') });
    expect([res.status, res.body.errors?.[0]?.field]).toEqual([422, 'url']);
  });

  it('refuses a loopback destination at connect time and dead-letters the delivery without retries', async () => {
    // a destination written when its name still pointed elsewhere (or under a wider allow list)
    const now = new Date().toISOString();
    const destinationId = `dst_guard${Date.now()}`;
    await svc.service.store.put({ kind: 'destination', id: destinationId, tenant_id: svc.tenantId, name: 'internal', url: r.url.replace('127.0.0.1', 'localhost'), status: 'active', signing_secret: newSigningSecret(), disabled_reason: null, retry_schedule_ms: [0, 100, 100], created_at: now, updated_at: now });
    const ing = await svc.api('POST', `/v1/tenants/${svc.tenantId}/ingesters`, { name: 'internal in', provider: 'none', config: {}, destination_ids: [destinationId] });
    const eventId = await sendEvent(ing.body.hook_url);
    const rows = await waitForStates(svc, eventId, ['failed', 'dlq_queued']);
    const reason = rows.find((t) => t.state === 'failed')!.reason;
    expect(reason).toMatch(/localhost.*loopback/);
    expect(reason).not.toMatch(/127\.0\.0\.1|::1/);
    const attempts = await eventually('the refused attempt row', async () => {
      const a = await attemptsOf(svc, eventId);
      return a.length > 0 ? a : undefined;
    });
    expect(attempts).toHaveLength(1);
    expect(r.requests).toHaveLength(0);
    // the attempt's error, readable by the tenant, names the host as written and no address
    const rs = await svc.clickhouse.query({ query: `SELECT error_message FROM ${svc.config.clickhouseDatabase}.deliveries FINAL WHERE event_id = {id:String}`, query_params: { id: eventId }, format: 'JSONEachRow' });
    const [row] = await rs.json<{ error_message: string | null }>();
    expect(row?.error_message).toMatch(/localhost/);
    expect(row?.error_message).not.toMatch(/127\.0\.0\.1|::1/);
  });
});
