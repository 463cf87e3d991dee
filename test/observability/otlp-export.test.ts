import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { destinationWithIngester } from '../support/flow';
import { randomEvidenceKey } from '../support/keyring';
import { receiverPool } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';
import { joiningEnv, spawnService, stopService, type ServiceProcess } from '../support/service-process';

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: string | number };
}
interface OtlpSpan {
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes?: OtlpAttribute[];
}
interface OtlpExport {
  resourceSpans: { resource: { attributes: OtlpAttribute[] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
}

/**
 * A deployment split in two, as an operator runs it: this process (API, Hook URL, validate,
 * filter, route, retry, evidence, sink) records no spans, and a deliver process configured with
 * OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_SERVICE_NAME sends its spans by OTLP/HTTP to a collector
 * (a loopback server that keeps what it is sent). The sender's trace context crosses both
 * processes through the Kafka headers: this process passes it on unchanged, so the deliver span's
 * parent is the sender's span, and the receiver's `traceparent` names the deliver span.
 */
describe('OTLP export', () => {
  const exports: { path: string; body: OtlpExport }[] = [];
  let collector: http.Server;
  let svc: TestService;
  let deliverer: ServiceProcess | undefined;
  const receivers = receiverPool();

  beforeAll(async () => {
    collector = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        exports.push({ path: req.url ?? '', body: JSON.parse(Buffer.concat(chunks).toString()) as OtlpExport });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', () => resolve()));
    svc = await startTestService({ STAGES: 'api,validate,filter,route,retry,evidence,sink', EVIDENCE_SIGNING_KEY: randomEvidenceKey() });
  });
  afterAll(async () => {
    if (deliverer) await stopService(deliverer);
    await Promise.all([svc?.stop(), receivers.closeAll()]);
    collector.closeAllConnections();
    await new Promise((resolve) => collector.close(resolve));
  });

  it('sends the deliver process\'s spans to the collector named by OTEL_EXPORTER_OTLP_ENDPOINT, in the sender\'s trace', async () => {
    const receiver = await receivers.next();
    const { hookUrl } = await destinationWithIngester(svc, 'exported', receiver.url);
    const { port } = collector.address() as AddressInfo;
    const env = joiningEnv(svc.config, 'deliverer', {
      STAGES: 'deliver',
      PORT: '0',
      SECRETS_KEK: svc.config.secrets.kek,
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_SERVICE_NAME: 'hookline-deliver',
    });
    for (const name of ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'SECRETS_KEK_FILE']) delete env[name];
    deliverer = spawnService(env, { direct: true });
    await deliverer.waitForOutput(/"msg":"service ready"/, 120_000);
    const lines = deliverer.stdout().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.find((l) => l.msg === 'exporting traces')).toMatchObject({ collector: `127.0.0.1:${port}`, service_name: 'hookline-deliver' });

    const [traceId, senderSpan] = ['0af7651916cd43dd8448eb211c80319c', 'b7ad6b7169203331'];
    const res = await fetch(hookUrl, { method: 'POST', headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${senderSpan}-01` }, body: '{}' });
    expect(res.status).toBe(202);
    const eventId = ((await res.json()) as { event_id: string }).event_id;
    const [request] = await receiver.waitForRequests(1, 30_000);
    // the deliver process sends what it still holds when it stops
    const stopping = deliverer;
    await stopService(stopping);
    deliverer = undefined;
    expect(await stopping.exited).toEqual({ code: 0, signal: null });

    expect(exports.length).toBeGreaterThan(0);
    expect(new Set(exports.map((e) => e.path))).toEqual(new Set(['/v1/traces']));
    const resources = exports.flatMap((e) => e.body.resourceSpans);
    expect(new Set(resources.map((r) => r.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue))).toEqual(new Set(['hookline-deliver']));
    const spans = resources.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
    const deliver = spans.find((s) => s.name === 'hookline.deliver' && s.attributes?.some((a) => a.key === 'hookline.event_id' && a.value.stringValue === eventId));
    expect(deliver).toBeDefined();
    // OTLP numbers kinds from 1: client is 3
    expect(deliver!.kind).toBe(3);
    // this process recorded nothing: the sender's trace context came through it unchanged
    expect([deliver!.traceId, deliver!.parentSpanId]).toEqual([traceId, senderSpan]);
    expect(request!.headers.traceparent).toBe(`00-${traceId}-${deliver!.spanId}-01`);
    expect(spans.filter((s) => s.traceId === traceId).map((s) => s.name)).toEqual(['hookline.deliver']);
  });
});
