import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../core/config';
import { Logger } from '../../core/log';
import { startService, type RunningService } from '../../service/service';
import { destinationWithIngester, sendEvent } from '../support/flow';
import { uniqueSuffix } from '../support/ids';
import { parseExposition, valueOf, type Exposition } from '../support/metrics';
import { startReceiver, type Receiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';

/**
 * GET /metrics of a running service while webhooks go through it: the counters and histograms
 * move with real deliveries to a real receiver, the consumer lag of every stage is read from
 * Kafka, a failing destination's breaker shows once it opens, and METRICS_TOKEN guards it all.
 * A process that runs only some stages (no API) serves /metrics too.
 */

const TOKEN = 'test-metrics-token-5f1c0a9e2b7d';
const MAX_BODY = 2048;

describe('Prometheus metrics', () => {
  let svc: TestService;
  let ok: Receiver;
  let failing: Receiver;

  beforeAll(async () => {
    [svc, ok, failing] = await Promise.all([
      // a breaker opens after two failed attempts and stays open for the rest of the run
      startTestService({ METRICS_TOKEN: TOKEN, INGEST_MAX_BODY_BYTES: String(MAX_BODY), BREAKER_MIN_ATTEMPTS: '2', BREAKER_ERROR_PERCENT: '1', BREAKER_RESET_MS: '600000' }),
      startReceiver(),
      startReceiver(),
    ]);
    failing.respondWith(500);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([svc?.stop(), ok?.close(), failing?.close()]);
  });

  async function scrape(base = svc.url, token: string | null = TOKEN): Promise<Exposition> {
    const res = await fetch(`${base}/metrics`, { headers: token === null ? {} : { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    return parseExposition(await res.text());
  }

  it('answers 401 without the token or with another, 200 in the Prometheus text format with it', async () => {
    const none = await fetch(`${svc.url}/metrics`);
    expect(none.status).toBe(401);
    expect(none.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    const problem = (await none.json()) as Record<string, unknown>;
    expect(problem).toMatchObject({ type: `${svc.config.errorBase}/errors/unauthorized`, status: 401, instance: none.headers.get('x-request-id') });
    // an API key is not the metrics token, nor is a prefix of the token or the token with more
    for (const wrong of [svc.apiKey, TOKEN.slice(0, -1), `${TOKEN}x`]) {
      const res = await fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${wrong}` } });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
      expect(await res.text()).not.toContain('hookline_');
    }
    const res = await fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await res.text();
    expect(text).toMatch(/^# TYPE hookline_deliveries_total counter$/m);
    expect(text).toMatch(/^# TYPE hookline_delivery_duration_seconds histogram$/m);
    // the Node process metrics under their standard names
    const e = parseExposition(text);
    expect(valueOf(e, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(valueOf(e, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(valueOf(e, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
  });

  it('counts deliveries, their durations and the webhooks accepted at the Hook URL', async () => {
    const { hookUrl } = await destinationWithIngester(svc, 'metrics ok', `${ok.url}/ok`);
    const before = await scrape();
    const delivered = { outcome: 'delivered' };
    for (let i = 0; i < 3; i++) await sendEvent(hookUrl, { n: i });
    await ok.waitForRequests(3, 30_000);
    const after = await eventually('3 deliveries counted', async () => {
      const e = await scrape();
      return valueOf(e, 'hookline_deliveries_total', delivered) - valueOf(before, 'hookline_deliveries_total', delivered) >= 3 ? e : undefined;
    });
    const delta = (name: string, labels: Record<string, string>) => valueOf(after, name, labels) - valueOf(before, name, labels);
    expect(delta('hookline_deliveries_total', delivered)).toBe(3);
    expect(delta('hookline_ingest_requests_total', { outcome: 'accepted', reason: '' })).toBe(3);
    // the histogram of the same attempts: count, sum and the +Inf bucket move by as much
    expect(delta('hookline_delivery_duration_seconds_count', delivered)).toBe(3);
    expect(delta('hookline_delivery_duration_seconds_bucket', { ...delivered, le: '+Inf' })).toBe(3);
    expect(delta('hookline_delivery_duration_seconds_sum', delivered)).toBeGreaterThan(0);
    // buckets are cumulative: each at most the next, the last the count
    const buckets = after.samples.filter((s) => s.name === 'hookline_delivery_duration_seconds_bucket' && s.labels.outcome === 'delivered');
    expect(buckets.length).toBeGreaterThan(5);
    for (let i = 1; i < buckets.length; i++) expect(buckets[i]!.value).toBeGreaterThanOrEqual(buckets[i - 1]!.value);
    // the records of those deliveries went to Kafka in gathered requests, and into ClickHouse
    expect(delta('hookline_kafka_produce_duration_seconds_count', { topic: svc.service.topics.received })).toBeGreaterThan(0);
    await eventually('sink rows counted', async () => {
      const e = await scrape();
      return valueOf(e, 'hookline_sink_rows_total', { table: 'deliveries' }) - valueOf(before, 'hookline_sink_rows_total', { table: 'deliveries' }) >= 3 ? e : undefined;
    });
    await eventually('evidence sealed', async () => {
      const e = await scrape();
      return valueOf(e, 'hookline_evidence_tree_size') >= 3 && valueOf(e, 'hookline_evidence_seal_duration_seconds_count') > 0 ? e : undefined;
    });
    const sunk = await scrape();
    expect(valueOf(sunk, 'hookline_sink_flush_duration_seconds_count')).toBeGreaterThan(valueOf(before, 'hookline_sink_flush_duration_seconds_count'));
  });

  it('counts refusals at the Hook URL by reason', async () => {
    const { hookUrl } = await destinationWithIngester(svc, 'metrics refusals', `${ok.url}/refusals`);
    const before = await scrape();
    const post = (url: string, body: string | Uint8Array, headers: Record<string, string> = {}) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    expect((await post(`${svc.url}/v1/hooks/ing_01jzzzzzzzzzzzzzzzzzzzzzzz`, '{}')).status).toBe(404);
    // too large: declared up front (the router refuses it), and streamed without a length (the fast path does)
    expect((await post(hookUrl, 'x'.repeat(MAX_BODY + 1))).status).toBe(413);
    const chunked = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new Uint8Array(MAX_BODY));
        c.enqueue(new Uint8Array(10));
        c.close();
      },
    });
    const streamed = await fetch(hookUrl, { method: 'POST', body: chunked, duplex: 'half' } as RequestInit);
    expect(streamed.status).toBe(413);
    expect((await post(hookUrl, '{}', { 'x-hookline-hops': '99' })).status).toBe(422);
    const after = await scrape();
    const refused = (reason: string) => valueOf(after, 'hookline_ingest_requests_total', { outcome: 'refused', reason }) - valueOf(before, 'hookline_ingest_requests_total', { outcome: 'refused', reason });
    expect({ unknown_hook: refused('unknown_hook'), too_large: refused('too_large'), too_many_hops: refused('too_many_hops'), rate_limited: refused('rate_limited') }).toEqual({ unknown_hook: 1, too_large: 2, too_many_hops: 1, rate_limited: 0 });
    expect(valueOf(after, 'hookline_ingest_requests_total', { outcome: 'accepted', reason: '' })).toBe(valueOf(before, 'hookline_ingest_requests_total', { outcome: 'accepted', reason: '' }));
  });

  it('shows the consumer lag of every stage of the process, per topic and partition', async () => {
    const e = await scrape();
    const lag = e.samples.filter((s) => s.name === 'hookline_consumer_lag' && s.labels.topic!.startsWith(svc.config.topicPrefix));
    const stages = new Set(lag.map((s) => s.labels.stage));
    for (const stage of ['validate', 'deliver', 'release', 'retry', 'evidence-sequencer', 'sink']) expect([...stages]).toContain(stage);
    const deliver = lag.filter((s) => s.labels.stage === 'deliver');
    expect(deliver.map((s) => `${s.labels.topic}/${s.labels.partition}`).sort()).toEqual([`${svc.service.topics.deliveryRequested}/0`, `${svc.service.topics.deliveryRequested}/1`]);
    for (const s of lag) expect(s.value).toBeGreaterThanOrEqual(0);
  });

  it('names a failing destination once its breaker opens, and counts the attempts that failed', async () => {
    const before = await scrape();
    const { hookUrl, destinationId } = await destinationWithIngester(svc, 'metrics failing', `${failing.url}/down`, { retry_schedule_ms: [0] });
    expect(valueOf(before, 'hookline_breaker_state', { destination_id: destinationId })).toBe(0);
    await sendEvent(hookUrl, { n: 1 });
    await sendEvent(hookUrl, { n: 2 });
    // the attempt reports its failure to the breaker before the deliver stage counts it: the breaker can show open a moment before the second count
    const exhausted = { outcome: 'exhausted' };
    const open = await eventually('breaker open in the metrics, both failed attempts counted', async () => {
      const e = await scrape();
      const counted = valueOf(e, 'hookline_deliveries_total', exhausted) - valueOf(before, 'hookline_deliveries_total', exhausted);
      return valueOf(e, 'hookline_breaker_state', { destination_id: destinationId }) === 2 && counted >= 2 ? e : undefined;
    });
    expect(valueOf(open, 'hookline_breakers', { state: 'open' })).toBeGreaterThanOrEqual(1);
    // the one attempt each delivery had failed with a 500: retries exhausted, and timed
    expect(valueOf(open, 'hookline_deliveries_total', exhausted) - valueOf(before, 'hookline_deliveries_total', exhausted)).toBe(2);
    expect(valueOf(open, 'hookline_delivery_duration_seconds_count', exhausted) - valueOf(before, 'hookline_delivery_duration_seconds_count', exhausted)).toBe(2);
    // the next delivery is not attempted: it waits for the breaker
    await sendEvent(hookUrl, { n: 3 });
    await eventually('a delivery held by the open breaker', async () => {
      const e = await scrape();
      return valueOf(e, 'hookline_deliveries_total', { outcome: 'breaker_open' }) > valueOf(before, 'hookline_deliveries_total', { outcome: 'breaker_open' }) ? e : undefined;
    });
    expect(failing.requests.length).toBe(2);
  });

  it('is served by a process without the API, with the lag of its own stages', async () => {
    const dataDir = mkdtempSync(path.join(process.env.HOOKLINE_TEST_DIR ?? tmpdir(), 'metrics-'));
    const prefix = `t${uniqueSuffix()}.`;
    const config = loadConfig({ ...process.env, PORT: '0', DATA_DIR: dataDir, TOPIC_PREFIX: prefix, STAGES: 'deliver,retry', KAFKA_PARTITIONS: '2', KAFKA_REPLICATION_FACTOR: '1', BOOTSTRAP_DEMO_TENANT: 'false', LOG_LEVEL: 'error', EVIDENCE_SIGNING_KEY: '', METRICS_TOKEN: '' });
    let worker: RunningService | undefined;
    try {
      worker = await startService(config, new Logger('error'));
      const e = await scrape(worker.url!, null);
      const stages = new Set(e.samples.filter((s) => s.name === 'hookline_consumer_lag' && s.labels.topic!.startsWith(prefix)).map((s) => s.labels.stage));
      expect([...stages].sort()).toEqual(['deliver', 'release', 'retry']);
      expect(e.types.get('hookline_breaker_state')).toBe('gauge');
      expect(e.types.get('hookline_ingest_requests_total')).toBe('counter');
    } finally {
      await worker?.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
