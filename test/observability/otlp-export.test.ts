import http from 'node:http';
import { gunzipSync } from 'node:zlib';
import { inspect } from 'node:util';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../../core/config';
import { parseOtlpHeaders } from '../../core/otlp-headers';
import { destinationWithIngester } from '../support/flow';
import { randomEvidenceKey, randomKek } from '../support/keyring';
import { runScript } from '../support/process';
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

const TRACES_SECRET = 'tr4ce-s3cret-9f1c';
const GENERAL_SECRET = 'g3neral-s3cret-77ad';

/**
 * A deployment split in two, as an operator runs it: this process (API, Hook URL, validate,
 * filter, route, retry, evidence, sink) records no spans, and a deliver process configured with
 * OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_SERVICE_NAME sends its spans by OTLP/HTTP to a collector
 * (a loopback server that keeps what it is sent). The sender's trace context crosses both
 * processes through the Kafka headers: this process passes it on unchanged, so the deliver span's
 * parent is the sender's span, and the receiver's `traceparent` names the deliver span.
 */
describe('OTLP export', () => {
  const exports: { path: string; headers: http.IncomingHttpHeaders; body: OtlpExport }[] = [];
  let collector: http.Server;
  let svc: TestService;
  let deliverer: ServiceProcess | undefined;
  const receivers = receiverPool();

  beforeAll(async () => {
    collector = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        exports.push({ path: req.url ?? '', headers: req.headers, body: JSON.parse((req.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body).toString()) as OtlpExport });
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

  it('sends the deliver process\'s spans to the collector named by OTEL_EXPORTER_OTLP_ENDPOINT, in the sender\'s trace, with the configured headers', async () => {
    const receiver = await receivers.next();
    const { hookUrl } = await destinationWithIngester(svc, 'exported', receiver.url);
    const { port } = collector.address() as AddressInfo;
    const env = joiningEnv(svc.config, 'deliverer', {
      STAGES: 'deliver',
      PORT: '0',
      SECRETS_KEK: svc.config.secrets.kek,
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_SERVICE_NAME: 'hookline-deliver',
      // a hosted collector's credentials: the traces variable replaces the general one whole
      OTEL_EXPORTER_OTLP_HEADERS: `x-general-only=${GENERAL_SECRET}`,
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: ` Authorization = Bearer%20${TRACES_SECRET}%2Cend , x-honeycomb-dataset=hookline`,
      OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '5000',
      OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: 'gzip',
      LOG_LEVEL: 'debug',
    });
    for (const name of ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_TIMEOUT', 'SECRETS_KEK_FILE']) delete env[name];
    deliverer = spawnService(env, { direct: true });
    await deliverer.waitForOutput(/"msg":"service ready"/, 120_000);
    const lines = deliverer.stdout().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.find((l) => l.msg === 'exporting traces')).toMatchObject({ collector: `127.0.0.1:${port}`, service_name: 'hookline-deliver', header_names: ['authorization', 'x-honeycomb-dataset'] });

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
    for (const { headers } of exports) {
      expect(headers).toMatchObject({ authorization: `Bearer ${TRACES_SECRET},end`, 'x-honeycomb-dataset': 'hookline', 'content-encoding': 'gzip' });
      expect(headers['x-general-only']).toBeUndefined();
    }
    // the credentials reach the collector and nothing else: not one line the process wrote
    const output = `${stopping.stdout()}\n${stopping.stderr()}`;
    expect(output).toContain('"msg":"stopping"');
    for (const secret of [TRACES_SECRET, GENERAL_SECRET]) expect(output).not.toContain(secret);
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

describe('OTLP export headers', () => {
  const KEK = { SECRETS_KEK: randomKek() };

  it('parses name=value pairs, trimmed, values percent-decoded, names lower-case', () => {
    expect(parseOtlpHeaders('x-honeycomb-team=abc123')).toEqual({ headers: { 'x-honeycomb-team': 'abc123' }, errors: [] });
    expect(parseOtlpHeaders(' Authorization = Basic%20dXNlcjpwYXNz== ,X-Scope-OrgID=tenant%2Ca, ')).toEqual({
      headers: { authorization: 'Basic dXNlcjpwYXNz==', 'x-scope-orgid': 'tenant,a' },
      errors: [],
    });
    // `+` is not a space in percent-encoding: a base64 key keeps it
    expect(parseOtlpHeaders('api-key=a+b/c%25d').headers).toEqual({ 'api-key': 'a+b/c%d' });
    expect(parseOtlpHeaders('constructor=x').headers.constructor).toBe('x');
  });

  it('refuses a malformed member by its position or header name, never by its text', () => {
    const secret = 'Basic dXNlcjpwYXNz';
    const cases: [string, RegExp][] = [
      [`Authorization: ${secret}`, /^member 1 of 1 is not name=value/],
      [`ok=1,Authorization: ${secret}=`, /^member 2 of 2 is not name=value/],
      [`=${secret}`, /^member 1 of 1 is not name=value/],
      [`authorization=${secret}%zz`, /^member 1 of 1 \(authorization\): its value has a malformed percent-escape/],
      ['authorization=', /^member 1 of 1 \(authorization\): the value is empty/],
      [`authorization=${secret}%0A`, /^member 1 of 1 \(authorization\): the value holds a character an HTTP header cannot carry/],
      [`a=1,A=${secret}`, /^member 2 of 2 \(a\): the header is given twice/],
    ];
    for (const [text, problem] of cases) {
      const { errors } = parseOtlpHeaders(text);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatch(problem);
      expect(errors[0]).not.toContain('dXNlcjpwYXNz');
    }
  });

  it('takes the traces variable instead of the general one, and the timeouts the same way', () => {
    const general = { ...KEK, OTEL_EXPORTER_OTLP_HEADERS: 'a=1,b=2', OTEL_EXPORTER_OTLP_TIMEOUT: '3000' };
    expect(loadConfig(general).tracing).toMatchObject({ timeoutMs: 3000 });
    expect(loadConfig(general).tracing.headers.reveal()).toEqual({ a: '1', b: '2' });
    const traces = loadConfig({ ...general, OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'b=3', OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '2500' });
    expect(traces.tracing.headers.reveal()).toEqual({ b: '3' });
    expect(traces.tracing.timeoutMs).toBe(2500);
    expect(loadConfig(KEK).tracing.headers.reveal()).toEqual({});
    expect(loadConfig(KEK).tracing.timeoutMs).toBe(10_000);
    expect(() => loadConfig({ ...KEK, OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '0' })).toThrow(/OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: must be between 1 and 600000/);
  });

  it('keeps the headers out of every serialization of the configuration', () => {
    const config = loadConfig({ ...KEK, OTEL_EXPORTER_OTLP_HEADERS: `x-honeycomb-team=${TRACES_SECRET}` });
    expect(JSON.stringify(config)).not.toContain(TRACES_SECRET);
    expect(JSON.stringify(config.tracing)).toContain('"headers":"[redacted]"');
    expect(inspect(config, { depth: null })).not.toContain(TRACES_SECRET);
    expect(String(config.tracing.headers)).toBe('[redacted]');
  });

  it('stops the start with one line naming the variable, without the value', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, ...KEK, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_HEADERS: `Authorization: Bearer ${TRACES_SECRET}` };
    delete env.OTEL_EXPORTER_OTLP_TRACES_HEADERS;
    const r = await runScript('service/main.ts', [], env, 30_000);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^ {2}- OTEL_EXPORTER_OTLP_HEADERS: member 1 of 1 is not name=value[^\n]*$/m);
    expect(`${r.stdout}${r.stderr}`).not.toContain(TRACES_SECRET);
    expect(r.stdout).toBe('');
  });
});
