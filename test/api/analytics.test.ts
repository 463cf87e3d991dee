import { newId } from '../../core/ids';
import { deliveryRow } from '../../pipeline/sink/rows';
import { runScript } from '../support/process';
import { startReceiver, type Receiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';

type Json = Record<string, any>;

/** How long the slow receiver holds each answer: its attempts must measure above it. */
const SLOW_MS = 400;

/**
 * GET .../analytics against the running service: webhooks sent through two Hook URLs to three
 * receivers (one answering 200 at once, one 500, one 200 after SLOW_MS), and every figure checked
 * against what the receivers got: counts by outcome, success rate, attempts per delivered event,
 * each group_by, latency order, top errors, bucket edges; bad parameters, keys limited to
 * resource ids, and other tenants.
 */
describe('delivery analytics', () => {
  let svc: TestService;
  let fast: Receiver;
  let failing: Receiver;
  let slow: Receiver;
  const dest = { fast: '', failing: '', slow: '' };
  const ing = { a: '', b: '' };
  const base = () => `/v1/tenants/${svc.tenantId}/analytics`;
  let sentFrom = 0;
  let sentTo = 0;
  /** Events sent per ingester and type. */
  const SENT = { a: { 'order.paid': 4, 'order.created': 2 }, b: { 'invoice.sent': 3 } } as const;
  /** Attempts per delivery to the failing destination: its retry schedule has two entries. */
  const TRIES = 2;
  const eventsA = SENT.a['order.paid'] + SENT.a['order.created'];
  const eventsB = SENT.b['invoice.sent'];
  const range = () => `from=${new Date(sentFrom - 60_000).toISOString()}&to=${new Date(sentTo + 60_000).toISOString()}`;
  const get = (query: string, key?: string) => svc.api('GET', `${base()}?${query}`, undefined, { key });

  beforeAll(async () => {
    [svc, fast, failing, slow] = await Promise.all([
      // the breaker must not hold back the failing destination's retries
      startTestService({ LOG_LEVEL: 'warn', EVIDENCE_BATCH_AGE_MS: '50', BREAKER_MIN_ATTEMPTS: '10000' }),
      startReceiver(),
      startReceiver(),
      startReceiver(),
    ]);
    failing.respondWith(500);
    slow.respondBy(() => ({ status: 200, delayMs: SLOW_MS }));
    const post = async (path: string, body: Json) => {
      const r = await svc.api('POST', `/v1/tenants/${svc.tenantId}${path}`, body);
      if (r.status !== 201) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.id as string;
    };
    dest.fast = await post('/destinations', { name: 'fast', url: fast.url });
    dest.failing = await post('/destinations', { name: 'failing', url: failing.url, retry_schedule_ms: [0, 200] });
    dest.slow = await post('/destinations', { name: 'slow', url: slow.url });
    ing.a = await post('/ingesters', { name: 'a', provider: 'none', config: { event_type_field: 'type' }, destination_ids: [dest.fast, dest.failing] });
    ing.b = await post('/ingesters', { name: 'b', provider: 'none', config: { event_type_field: 'type' }, destination_ids: [dest.slow] });

    sentFrom = Date.now();
    const send = async (ingester: string, type: string) => {
      const res = await fetch(`${svc.url}/v1/hooks/${ingester}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type, n: Math.random() }) });
      if (res.status !== 202) throw new Error(`hook answered ${res.status}`);
    };
    for (const [type, n] of Object.entries(SENT.a)) for (let i = 0; i < n; i++) await send(ing.a, type);
    for (const [type, n] of Object.entries(SENT.b)) for (let i = 0; i < n; i++) await send(ing.b, type);
    await Promise.all([fast.waitForRequests(eventsA, 60_000), slow.waitForRequests(eventsB, 60_000), failing.waitForRequests(eventsA * TRIES, 60_000)]);
    sentTo = Date.now();
    // every attempt recorded: the views count what the receivers got, and the error view (a rollup step's last insert) holds every error
    await eventually('the attempts in the analytics', async () => {
      const r = await get(range());
      const errors = r.status === 200 ? r.body.top_errors.reduce((n: number, e: Json) => n + e.attempts, 0) : -1;
      return r.status === 200 && r.body.totals.attempts === eventsA * (1 + TRIES) + eventsB && r.body.totals.failed === eventsA && errors === eventsA * TRIES ? r : undefined;
    }, 60_000);
  }, 180_000);

  afterAll(async () => {
    await Promise.all([svc?.stop(), fast?.close(), failing?.close(), slow?.close()]);
  });

  it('counts attempts by outcome, with success rate and attempts per delivered event, as the receivers got them', async () => {
    const r = await get(range());
    expect(r.status).toBe(200);
    const delivered = fast.requests.length + slow.requests.length;
    const failed = eventsA;
    const retrying = failing.requests.length - failed;
    const attempts = fast.requests.length + slow.requests.length + failing.requests.length;
    expect(r.body.totals).toMatchObject({ attempts, delivered, retrying, failed, dropped: 0 });
    expect(r.body.totals.success_rate).toBeCloseTo(delivered / attempts, 10);
    expect(r.body.totals.attempts_per_delivered).toBeCloseTo(attempts / delivered, 10);
    expect(r.body).toMatchObject({ bucket: 'hour', bucket_seconds: 3600, group_by: null, groups: null, groups_total: null });
    // every bucket is listed, and they add up to the totals
    const sum = (k: string) => r.body.buckets.reduce((s: number, b: Json) => s + b[k], 0);
    expect(['attempts', 'delivered', 'retrying', 'failed'].map(sum)).toEqual([attempts, delivered, retrying, failed]);
    expect(r.body.buckets.length).toBe((Date.parse(r.body.to) - Date.parse(r.body.from)) / 3_600_000);
  });

  it('measures latency in order, the slow destination above the fast one, and end to end from receipt', async () => {
    const all = (await get(range())).body.totals;
    for (const q of [all.attempt_latency_ms, all.end_to_end_latency_ms]) {
      expect(q.p50).toBeGreaterThanOrEqual(0);
      expect(q.p50).toBeLessThanOrEqual(q.p95);
      expect(q.p95).toBeLessThanOrEqual(q.p99);
    }
    const one = async (d: string) => (await get(`${range()}&destination_id=${d}`)).body.totals;
    const [f, s, x] = [await one(dest.fast), await one(dest.slow), await one(dest.failing)];
    expect(s.attempt_latency_ms.p50).toBeGreaterThanOrEqual(SLOW_MS);
    expect(f.attempt_latency_ms.p99).toBeLessThan(SLOW_MS);
    expect(s.attempt_latency_ms.p50).toBeGreaterThan(f.attempt_latency_ms.p99);
    // a delivery ends after its attempt began: end to end covers the attempt
    expect(s.end_to_end_latency_ms.p50).toBeGreaterThanOrEqual(s.attempt_latency_ms.p50);
    expect(s.end_to_end_latency_ms.p99).toBeLessThan(sentTo - sentFrom + 1_000);
    // nothing delivered, nothing end to end
    expect(x.end_to_end_latency_ms).toEqual({ p50: null, p95: null, p99: null });
    expect(x.attempt_latency_ms.p50).not.toBeNull();
  });

  it('groups by each dimension, biggest first, each group adding up to the totals', async () => {
    const failingAttempts = eventsA * TRIES;
    const expected: Record<string, Record<string, number>> = {
      destination: { [dest.failing]: failingAttempts, [dest.fast]: eventsA, [dest.slow]: eventsB },
      event_type: { 'order.paid': SENT.a['order.paid'] * (1 + TRIES), 'order.created': SENT.a['order.created'] * (1 + TRIES), 'invoice.sent': eventsB },
      ingester: { [ing.a]: eventsA * (1 + TRIES), [ing.b]: eventsB },
      response_code: { '500': failingAttempts, '200': eventsA + eventsB },
      response_class: { '5xx': failingAttempts, '2xx': eventsA + eventsB },
    };
    for (const [groupBy, counts] of Object.entries(expected)) {
      const r = await get(`${range()}&group_by=${groupBy}`);
      expect(r.status).toBe(200);
      const groups = r.body.groups as Json[];
      expect({ groupBy, counts: Object.fromEntries(groups.map((g) => [g.key, g.totals.attempts])) }).toEqual({ groupBy, counts });
      expect(r.body.groups_total).toBe(Object.keys(counts).length);
      expect(groups.every((g) => g.other === false)).toBe(true);
      const sizes = groups.map((g) => g.totals.attempts);
      expect(sizes).toEqual([...sizes].sort((a, b) => b - a));
      for (const g of groups) expect(g.buckets.reduce((s: number, b: Json) => s + b.attempts, 0)).toBe(g.totals.attempts);
      // a bucket shows its start, then every figure the totals show, in the same order
      for (const b of [...(r.body.buckets as Json[]), ...groups.flatMap((g) => g.buckets as Json[])]) expect(Object.keys(b)).toEqual(['start', ...Object.keys(r.body.totals)]);
    }
    const byDest = (await get(`${range()}&group_by=destination`)).body.groups as Json[];
    const failingGroup = byDest.find((g) => g.key === dest.failing)!;
    expect(failingGroup.totals).toMatchObject({ delivered: 0, failed: eventsA, retrying: eventsA * (TRIES - 1), success_rate: 0, attempts_per_delivered: null });
    expect(byDest.find((g) => g.key === dest.fast)!.totals).toMatchObject({ delivered: eventsA, success_rate: 1, attempts_per_delivered: 1 });
  });

  it('lists the most frequent errors with their counts', async () => {
    const r = (await get(range())).body;
    expect(r.top_errors).toEqual(expect.arrayContaining([
      { message: 'the destination answered 500', attempts: eventsA * (TRIES - 1) },
      { message: `retries exhausted after ${TRIES} attempts; last: the destination answered 500`, attempts: eventsA },
    ]));
    expect(r.top_errors).toHaveLength(2);
    // minute buckets count them from the attempts themselves: the same
    expect((await get(`${range()}&bucket=minute`)).body.top_errors).toEqual(r.top_errors);
    expect((await get(`${range()}&destination_id=${dest.fast}`)).body.top_errors).toEqual([]);
  });

  it('puts each attempt in the bucket of its time, with edges rounded out to whole buckets', async () => {
    const from = new Date(sentFrom - 90_000 + 1_234);
    const r = (await get(`from=${from.toISOString()}&to=${new Date(sentTo + 60_000).toISOString()}&bucket=minute`)).body;
    expect(Date.parse(r.from)).toBe(Math.floor(from.getTime() / 60_000) * 60_000);
    expect(Date.parse(r.to) % 60_000).toBe(0);
    expect(r.buckets[0].start).toBe(r.from);
    expect(r.buckets.map((b: Json) => Date.parse(b.start))).toEqual(r.buckets.map((_: Json, i: number) => Date.parse(r.from) + i * 60_000));
    // the minute of each attempt as recorded
    const rs = await svc.clickhouse.query({
      query: `SELECT toString(toUnixTimestamp(toStartOfMinute(attempted_at))) AS m, count() AS n FROM ${svc.config.clickhouseDatabase}.deliveries FINAL WHERE tenant_id = {t:String} GROUP BY m`,
      query_params: { t: svc.tenantId },
      format: 'JSONEachRow',
    });
    const perMinute = new Map((await rs.json<{ m: string; n: string }>()).map((x) => [Number(x.m) * 1000, Number(x.n)]));
    expect(r.buckets.filter((b: Json) => b.attempts > 0).map((b: Json) => [Date.parse(b.start), b.attempts])).toEqual([...perMinute].sort((a, b) => a[0] - b[0]));
    // a range that ends at the edge before the first attempt holds none of them
    const edge = Math.floor(Math.min(...perMinute.keys()) / 60_000) * 60_000;
    const before = (await get(`from=${new Date(edge - 3_600_000).toISOString()}&to=${new Date(edge).toISOString()}&bucket=minute`)).body;
    expect(before.totals.attempts).toBe(0);
    expect(before.buckets).toHaveLength(60);
    // day buckets start at UTC midnight
    const day = (await get(`${range()}&bucket=day`)).body;
    expect(day.buckets.every((b: Json) => Date.parse(b.start) % 86_400_000 === 0)).toBe(true);
    expect(day.totals.attempts).toBe(r.totals.attempts);
  });

  it('refuses parameters it does not take, naming each', async () => {
    const cases: [string, string[]][] = [
      ['from=yesterday', ['from']],
      ['to=2026-13-01T00:00:00Z', ['to']],
      ['from=2026-01-01T00:00:00Z&to=2025-01-01T00:00:00Z', ['from']],
      ['from=2026-01-01T00:00:00Z&to=2026-06-01T00:00:00Z&bucket=day', ['from']],
      [`from=${new Date(Date.now() - 2 * 86_400_000).toISOString()}&bucket=minute`, ['bucket']],
      ['bucket=week', ['bucket']],
      ['group_by=status', ['group_by']],
      ['destination_id=', ['destination_id']],
      ['bucket=hour&bucket=day', ['bucket']],
      ['groupby=destination', ['groupby']],
    ];
    for (const [query, fields] of cases) {
      const r = await get(query);
      expect({ query, status: r.status, type: r.body.type?.split('/').pop(), fields: r.body.errors?.map((e: Json) => e.field) }).toEqual({ query, status: 400, type: 'validation-error', fields });
    }
    const noScope = await svc.newKey(['read:deliveries']);
    const refused = await get(range(), noScope);
    expect(refused.status).toBe(403);
    expect(refused.body.required_scope).toBe('read:stats');
  });

  it('shows a key limited to resource ids only the attempts to its destinations', async () => {
    const limited = await svc.newKey(['read:stats'], { resourceIds: [dest.fast] });
    const r = (await get(`${range()}&group_by=destination`, limited)).body;
    expect(r.totals).toMatchObject({ attempts: eventsA, delivered: eventsA, failed: 0 });
    expect(r.groups.map((g: Json) => g.key)).toEqual([dest.fast]);
    expect(r.top_errors).toEqual([]);
    // asking for another destination finds nothing, rather than another's attempts
    expect((await get(`${range()}&destination_id=${dest.failing}`, limited)).body.totals.attempts).toBe(0);
    const byType = (await get(`${range()}&group_by=event_type`, limited)).body.groups;
    expect(Object.fromEntries(byType.map((g: Json) => [g.key, g.totals.attempts]))).toEqual({ 'order.paid': SENT.a['order.paid'], 'order.created': SENT.a['order.created'] });
  });

  it('never shows another tenant\'s attempts, nor this tenant\'s to another', async () => {
    const other = `${svc.tenantId}-other`;
    // attempts of another tenant at the same times, to destinations of the same ids
    const rows = Array.from({ length: 25 }, (_, i) => deliveryRow({
      delivery_id: newId('delivery'), event_id: newId('event'), tenant_id: other, destination_id: dest.fast, correlation_id: 'c', attempt_number: 1,
      status: 'failed', response_code: 503, attempted_at: sentFrom + i, duration_ms: 5, error_message: 'other tenant', body_sha256: '0'.repeat(64), next_attempt_at: null,
      event_type: 'order.paid', ingester_id: ing.a, received_at: sentFrom + i - 10,
    }));
    await svc.clickhouse.insert({ table: `${svc.config.clickhouseDatabase}.deliveries`, values: rows, format: 'JSONEachRow' });
    const theirs = await svc.newKey(['read:stats'], { tenantId: other });
    expect((await get(range(), theirs)).status).toBe(404);
    // once the rollup has them in the views (a step fills the figures' views, then the errors' one): the other tenant's figures are its own
    const own = await eventually('the other tenant\'s attempts in the analytics', async () => {
      const r = (await svc.api('GET', `/v1/tenants/${other}/analytics?${range()}`, undefined, { key: theirs })).body;
      return r.totals?.attempts === 25 && r.top_errors?.length > 0 ? r : undefined;
    }, 30_000);
    expect(own.totals).toMatchObject({ attempts: 25, failed: 25 });
    expect(own.top_errors).toEqual([{ message: 'other tenant', attempts: 25 }]);
    const mine = (await get(range())).body;
    expect(mine.totals.attempts).toBe(fast.requests.length + slow.requests.length + failing.requests.length);
    expect(JSON.stringify(mine)).not.toContain('other tenant');
  });

  it('the CLI prints a table or the JSON, and the API\'s refusal in one line', async () => {
    const env = { ...process.env, HOOKLINE_API_KEY: svc.apiKey, HOOKLINE_API_URL: svc.url, HOOKLINE_TENANT: svc.tenantId };
    const from = new Date(sentFrom - 60_000).toISOString();
    const to = new Date(sentTo + 60_000).toISOString();
    const [json, table, bad] = await Promise.all([
      runScript('cli/main.ts', ['analytics', '--from', from, '--to', to, '--group-by', 'destination', '--json'], env),
      runScript('cli/main.ts', ['analytics', '--from', from, '--to', to, '--group-by', 'event_type'], env),
      runScript('cli/main.ts', ['analytics', '--bucket', 'week'], env),
    ]);
    expect(json.code).toBe(0);
    const answer = JSON.parse(json.stdout) as Json;
    expect(answer.groups.map((g: Json) => g.key).sort()).toEqual([dest.fast, dest.failing, dest.slow].sort());
    expect(table.code).toBe(0);
    const lines = table.stdout.split('\n');
    expect(lines[1]).toMatch(/^event_type\s+attempts\s+delivered/);
    expect(lines.find((l) => l.startsWith('invoice.sent'))).toMatch(new RegExp(`^invoice\\.sent\\s+${eventsB}\\s+${eventsB}\\s`));
    expect(lines.find((l) => l.startsWith('total'))).toMatch(new RegExp(`^total\\s+${answer.totals.attempts}\\s+${answer.totals.delivered}\\s`));
    expect(table.stdout).toContain('the destination answered 500');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/400 validation-error: .*bucket/);
  });
});
