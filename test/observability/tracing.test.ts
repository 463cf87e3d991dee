import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { signStandardWebhook } from '../../core/signing/standard-webhooks';
import { installSpanExporter } from '../../platform/tracing/tracing';
import { destinationWithIngester, waitForStates } from '../support/flow';
import { receiverPool } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';

/**
 * One trace per webhook, from the Hook URL to the receiver and into ClickHouse: the spans each
 * stage records (read back from an in-memory exporter), joined through the `traceparent` headers
 * of the Kafka records between them, the receiver's `traceparent`, the delivery rows, the API's
 * views and the log lines.
 */
describe('tracing', () => {
  const exporter = new InMemorySpanExporter();
  let uninstall: () => Promise<void>;
  let svc: TestService;
  const receivers = receiverPool();

  beforeAll(async () => {
    uninstall = installSpanExporter(exporter);
    svc = await startTestService({ RETRY_TIERS: '100ms', RETRY_SCHEDULE: '0,100ms', LOG_LEVEL: 'info', EVIDENCE_BATCH_AGE_MS: '50', SINK_FLUSH_MS: '100' });
  });
  afterAll(async () => {
    await Promise.all([svc?.stop(), receivers.closeAll()]);
    await uninstall?.();
  });

  const attr = (s: ReadableSpan, name: string) => s.attributes[`hookline.${name}`];
  const spansOf = (traceId: string) => exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
  const named = (spans: ReadableSpan[], name: string) => spans.filter((s) => s.name === `hookline.${name}`);
  const one = (spans: ReadableSpan[], name: string, where: (s: ReadableSpan) => boolean = () => true) => {
    const found = named(spans, name).filter(where);
    expect(found.map((s) => s.name)).toEqual([`hookline.${name}`]);
    return found[0]!;
  };
  const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

  /** Posts a webhook, with the given headers, and answers its event id. */
  const post = async (hookUrl: string, headers: Record<string, string> = {}) => {
    const res = await fetch(hookUrl, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{"traced":true}' });
    expect(res.status).toBe(202);
    return ((await res.json()) as { event_id: string }).event_id;
  };

  /** Waits until the event's trace holds every span of its way through, and answers them. */
  const traceOf = async (eventId: string, expected: string[]) => {
    const ingest = await eventually('the ingest span', async () => exporter.getFinishedSpans().find((s) => s.name === 'hookline.ingest' && attr(s, 'event_id') === eventId));
    const traceId = ingest.spanContext().traceId;
    const spans = await eventually(`spans ${expected.join(', ')}`, async () => {
      const all = spansOf(traceId);
      const counts = new Map<string, number>();
      for (const s of all) counts.set(s.name, (counts.get(s.name) ?? 0) + 1);
      const want = new Map<string, number>();
      for (const name of expected) want.set(`hookline.${name}`, (want.get(`hookline.${name}`) ?? 0) + 1);
      return [...want].every(([name, n]) => (counts.get(name) ?? 0) >= n) ? all : undefined;
    });
    return { traceId, ingest, spans };
  };

  it('follows one webhook through every stage in one trace, to the receiver, the delivery row, the API and the log lines', async () => {
    const receiver = await receivers.next();
    const { hookUrl, secret, destinationId } = await destinationWithIngester(svc, 'traced', receiver.url);
    const eventId = await post(hookUrl);
    const [request] = await receiver.waitForRequests(1);
    await waitForStates(svc, eventId, ['delivered', 'acked']);
    const { traceId, ingest, spans } = await traceOf(eventId, ['ingest', 'validate', 'filter', 'route', 'deliver', 'evidence', 'sink', 'sink']);

    // one span per stage, each the child of the span that wrote the record it read
    const validate = one(spans, 'validate');
    const filter = one(spans, 'filter');
    const route = one(spans, 'route');
    const deliver = one(spans, 'deliver');
    const evidence = one(spans, 'evidence');
    const storedEvent = one(spans, 'sink', (s) => s.attributes['db.collection.name'] === 'events');
    const storedAttempt = one(spans, 'sink', (s) => s.attributes['db.collection.name'] === 'deliveries');
    expect(spans).toHaveLength(8);
    expect(parentOf(ingest)).toBeUndefined();
    expect(parentOf(validate)).toBe(ingest.spanContext().spanId);
    expect(parentOf(filter)).toBe(validate.spanContext().spanId);
    expect(parentOf(route)).toBe(filter.spanContext().spanId);
    expect(parentOf(deliver)).toBe(route.spanContext().spanId);
    expect(parentOf(evidence)).toBe(deliver.spanContext().spanId);
    expect(parentOf(storedAttempt)).toBe(deliver.spanContext().spanId);
    expect(parentOf(storedEvent)).toBe(ingest.spanContext().spanId);
    expect([ingest.kind, validate.kind, deliver.kind, evidence.kind, storedAttempt.kind]).toEqual([SpanKind.SERVER, SpanKind.CONSUMER, SpanKind.CLIENT, SpanKind.CONSUMER, SpanKind.CONSUMER]);

    // what each step decided, with the ids of the event and its delivery
    const deliveryId = String(request!.headers['webhook-id']);
    expect(spans.every((s) => attr(s, 'tenant_id') === svc.tenantId && attr(s, 'event_id') === eventId)).toBe(true);
    expect([attr(validate, 'outcome'), attr(filter, 'outcome'), attr(route, 'outcome'), attr(deliver, 'outcome'), attr(evidence, 'outcome'), attr(storedAttempt, 'outcome')]).toEqual(['validated', 'passed', 'routed', 'delivered', 'sealed', 'stored']);
    for (const s of [deliver, evidence, storedAttempt]) expect([attr(s, 'delivery_id'), attr(s, 'destination_id')]).toEqual([deliveryId, destinationId]);
    expect(deliver.attributes['http.response.status_code']).toBe(200);
    expect(deliver.attributes['server.address']).toBe('127.0.0.1');
    // the deliver span covers the request the receiver answered
    const [start, end] = [deliver.startTime, deliver.endTime].map(([s, ns]) => s * 1000 + ns / 1e6) as [number, number];
    expect(start).toBeLessThanOrEqual(request!.at);
    expect(end).toBeGreaterThanOrEqual(request!.at);

    // the receiver can join the trace: the deliver span is its parent; the signature is unchanged
    expect(request!.headers.traceparent).toBe(`00-${traceId}-${deliver.spanContext().spanId}-01`);
    const timestamp = Number(request!.headers['webhook-timestamp']);
    expect(request!.headers['webhook-signature']).toBe(signStandardWebhook(secret, deliveryId, timestamp, request!.body));

    // the delivery row, the API's views and the stored log line of the attempt name the trace
    const rows = await svc.clickhouse.query({ query: `SELECT trace_id FROM ${svc.config.clickhouseDatabase}.deliveries FINAL WHERE delivery_id = {id:String}`, query_params: { id: deliveryId }, format: 'JSONEachRow' });
    expect(await rows.json()).toEqual([{ trace_id: traceId }]);
    const view = await svc.api('GET', `/v1/tenants/${svc.tenantId}/deliveries/${deliveryId}`);
    expect(view.status).toBe(200);
    expect([view.body.trace_id, view.body.attempts[0].trace_id]).toEqual([traceId, traceId]);
    const list = await svc.api('GET', `/v1/tenants/${svc.tenantId}/deliveries?destination_id=${destinationId}`);
    expect(list.body.deliveries.map((d: { trace_id: string }) => d.trace_id)).toEqual([traceId]);
    const logs = await svc.clickhouse.query({ query: `SELECT message, fields FROM ${svc.config.clickhouseDatabase}.logs FINAL WHERE delivery_id = {id:String}`, query_params: { id: deliveryId }, format: 'JSONEachRow' });
    const lines = await logs.json<{ message: string; fields: string }>();
    expect(lines.map((l) => [l.message, JSON.parse(l.fields).trace_id])).toEqual([['delivered', traceId]]);
  });

  it('continues the trace a sender names in traceparent, with its tracestate, and carries it across a retry', async () => {
    const receiver = await receivers.next();
    // the first attempt fails, the second (after the delay tier) succeeds
    receiver.respondBy((_req, i) => ({ status: i === 0 ? 503 : 200 }));
    const { hookUrl } = await destinationWithIngester(svc, 'traced-retry', receiver.url);
    const senderTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const senderSpan = '00f067aa0ba902b7';
    const eventId = await post(hookUrl, { traceparent: `00-${senderTrace}-${senderSpan}-01`, tracestate: 'vendor=opaque' });
    const requests = await receiver.waitForRequests(2);
    await waitForStates(svc, eventId, ['delivered']);
    const { traceId, ingest, spans } = await traceOf(eventId, ['ingest', 'validate', 'filter', 'route', 'deliver', 'retry', 'deliver', 'sink', 'sink', 'sink']);

    expect(traceId).toBe(senderTrace);
    expect(parentOf(ingest)).toBe(senderSpan);
    const [first, second] = named(spans, 'deliver').sort((a, b) => Number(attr(a, 'attempt')) - Number(attr(b, 'attempt')));
    // the delivering attempt's parent is the wait in the retry tier; the tier may read its record
    // again after a rebalance (at least once), which makes another span of the same wait, also due
    const retries = named(spans, 'retry');
    expect(retries.map((s) => attr(s, 'outcome'))).toEqual(retries.map(() => 'due'));
    const retry = retries.find((s) => s.spanContext().spanId === parentOf(second!)) ?? retries[0]!;
    expect([attr(first!, 'outcome'), attr(retry, 'outcome'), attr(second!, 'outcome')]).toEqual(['retrying', 'due', 'delivered']);
    expect(first!.attributes['http.response.status_code']).toBe(503);
    expect(parentOf(retry)).toBe(first!.spanContext().spanId);
    expect(parentOf(second!)).toBe(retry.spanContext().spanId);
    // each attempt names its own span, in the sender's trace, with the sender's tracestate
    expect(requests.map((r) => r.headers.traceparent)).toEqual([first, second].map((s) => `00-${senderTrace}-${s!.spanContext().spanId}-01`));
    expect(requests.map((r) => r.headers.tracestate)).toEqual(['vendor=opaque', 'vendor=opaque']);
    const rows = await eventually('both attempts stored', async () => {
      const rs = await svc.clickhouse.query({ query: `SELECT attempt_number, trace_id FROM ${svc.config.clickhouseDatabase}.deliveries FINAL WHERE event_id = {id:String} ORDER BY attempt_number`, query_params: { id: eventId }, format: 'JSONEachRow' });
      const got = await rs.json<{ attempt_number: number; trace_id: string }>();
      return got.length === 2 ? got : undefined;
    });
    expect(rows).toEqual([{ attempt_number: 1, trace_id: senderTrace }, { attempt_number: 2, trace_id: senderTrace }]);
  });

  it('carries the trace through a paused destination\'s hold and release', async () => {
    const receiver = await receivers.next();
    const { hookUrl, destinationId } = await destinationWithIngester(svc, 'traced-held', receiver.url);
    const patch = (enabled: boolean) => svc.api('PATCH', `/v1/tenants/${svc.tenantId}/destinations/${destinationId}`, JSON.stringify({ enabled }), { headers: { 'content-type': 'application/merge-patch+json' } });
    expect((await patch(false)).status).toBe(200);
    const eventId = await post(hookUrl);
    const held = await traceOf(eventId, ['ingest', 'deliver']);
    expect(attr(one(held.spans, 'deliver'), 'outcome')).toBe('held');
    expect(receiver.requests).toHaveLength(0);
    expect((await patch(true)).status).toBe(200);
    const [request] = await receiver.waitForRequests(1);
    const { spans } = await traceOf(eventId, ['deliver', 'release', 'deliver']);
    const [holding, delivering] = named(spans, 'deliver').sort((x, y) => x.startTime[0] - y.startTime[0] || x.startTime[1] - y.startTime[1]);
    const release = one(spans, 'release');
    expect([attr(holding!, 'outcome'), attr(release, 'outcome'), attr(delivering!, 'outcome')]).toEqual(['held', 'released', 'delivered']);
    expect(parentOf(release)).toBe(holding!.spanContext().spanId);
    expect(parentOf(delivering!)).toBe(release.spanContext().spanId);
    expect(request!.headers.traceparent).toBe(`00-${held.traceId}-${delivering!.spanContext().spanId}-01`);
  });

  it('begins a retried or replayed delivery\'s trace with a link to the trace of the delivery it repeats', async () => {
    const receiver = await receivers.next();
    // both attempts of the schedule fail; the retry asked through the API succeeds
    receiver.respondBy((_req, i) => ({ status: i < 2 ? 500 : 200 }));
    const { hookUrl, destinationId } = await destinationWithIngester(svc, 'traced-retried', receiver.url);
    const from = new Date().toISOString();
    const eventId = await post(hookUrl);
    const [first] = await receiver.waitForRequests(2);
    const original = await traceOf(eventId, ['ingest', 'deliver', 'deliver']);
    const originalDelivery = String(first!.headers['webhook-id']);
    const retried = await eventually('the retry queued', async () => {
      const res = await svc.api('POST', `/v1/tenants/${svc.tenantId}/events/${eventId}/retry`);
      return res.status === 202 ? (res.body as { delivery_id: string }) : undefined;
    });
    const requests = await receiver.waitForRequests(3);
    const replay = await eventually('the replay span', async () => exporter.getFinishedSpans().find((s) => s.name === 'hookline.replay' && attr(s, 'delivery_id') === retried.delivery_id));
    expect(attr(replay, 'replay_of')).toBe(originalDelivery);
    // a trace of its own, linked to the original one (known by its id: the rows keep no span id)
    expect(replay.spanContext().traceId).not.toBe(original.traceId);
    expect(replay.links).toEqual([{ context: expect.objectContaining({ traceId: original.traceId, spanId: '0'.repeat(16) }), attributes: { 'hookline.link': 'replay_of', 'hookline.delivery_id': originalDelivery } }]);
    // where the new delivery goes on
    expect(String(requests[2]!.headers.traceparent).slice(3, 35)).toBe(replay.spanContext().traceId);

    // a replay job links the same way: to the trace of the delivery it repeats (the retried one)
    await eventually('the retried delivery stored', async () => {
      const view = await svc.api('GET', `/v1/tenants/${svc.tenantId}/deliveries/${retried.delivery_id}`);
      return view.status === 200 && view.body.status === 'delivered' ? view.body : undefined;
    });
    const job = await svc.api('POST', `/v1/tenants/${svc.tenantId}/replays`, { from, to: new Date().toISOString(), destination_id: destinationId, status: 'delivered' });
    expect(job.body).toMatchObject({ matched: 1 });
    const replayed = await eventually('the replay job\'s span', async () => exporter.getFinishedSpans().find((s) => s.name === 'hookline.replay' && attr(s, 'replay_of') === retried.delivery_id));
    expect(replayed.links).toEqual([{ context: expect.objectContaining({ traceId: replay.spanContext().traceId }), attributes: { 'hookline.link': 'replay_of', 'hookline.delivery_id': retried.delivery_id } }]);
  });

  it('begins a new trace for a traceparent it cannot read, and never makes one trace of two webhooks', async () => {
    const receiver = await receivers.next();
    const { hookUrl } = await destinationWithIngester(svc, 'traced-bad', receiver.url);
    const a = await post(hookUrl, { traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01' });
    const b = await post(hookUrl);
    await receiver.waitForRequests(2);
    const [ta, tb] = await Promise.all([traceOf(a, ['ingest', 'deliver']), traceOf(b, ['ingest', 'deliver'])]);
    expect(ta.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(ta.traceId).not.toBe('0'.repeat(32));
    expect(parentOf(ta.ingest)).toBeUndefined();
    expect(ta.traceId).not.toBe(tb.traceId);
    expect(new Set(receiver.requests.map((r) => String(r.headers.traceparent).slice(3, 35)))).toEqual(new Set([ta.traceId, tb.traceId]));
  });
});
