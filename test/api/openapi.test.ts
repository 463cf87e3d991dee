import http from 'node:http';
import { gzipSync } from 'node:zlib';
import type { AddressInfo } from 'node:net';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { Express, Request } from 'express';
import { Redis } from 'ioredis';
import { createApp, type ApiServices } from '../../api/app';
import { openApiDocument } from '../../api/openapi';
import { defaultRouteOf } from '../../api/rate-limit';
import { deliveriesRouter } from '../../api/routes/deliveries';
import { DEFAULT_QUOTAS } from '../../core/quotas';
import { destinationsRouter } from '../../api/routes/destinations';
import { destinationChangeDepsOf, destinationChangesRouter } from '../../api/routes/destination-changes';
import { destinationTransformationRouter } from '../../api/routes/destination-transformation';
import { eventsRouter } from '../../api/routes/events';
import { flowsRouter } from '../../api/routes/flows';
import { ingestersRouter } from '../../api/routes/ingesters';
import { logsRouter } from '../../api/routes/logs';
import { exportsRouter } from '../../api/routes/exports';
import { evidenceLogRouter, evidenceRouter } from '../../api/routes/evidence';
import { EvidenceStore } from '../../platform/evidence/store';
import { savedPayloadsRouter } from '../../api/routes/saved-payloads';
import { apiKeysRouter } from '../../api/routes/api-keys';
import { eventTypesRouter } from '../../api/routes/event-types';
import { deadLettersRouter } from '../../api/routes/dead-letters';
import { DeadLetterStore } from '../../platform/clickhouse/dead-letters';
import { keyIdOf } from '../../core/api-keys';
import { mcpRouter, type McpRoutesDeps } from '../../api/routes/mcp';
import { Logger } from '../../core/log';
import { SCOPES } from '../../core/scopes';
import { hookFastPath, ingestRouter, type IngestDeps } from '../../pipeline/ingest/router';
import { IngestLimiter } from '../../pipeline/ingest/limits';
import { RedisTokenLeases } from '../../platform/redis/token-leases';
import { writeProblem } from '../../api/problem';
import { AvroCodec } from '../../platform/avro/codec';
import { issueApiKey } from '../../platform/config-store/tenants';
import { BatchingProducer } from '../../platform/kafka/batching-producer';
import { RedisNameClaims } from '../../platform/redis/name-claims';
import { replaysRouter } from '../../api/routes/replays';
import { ReplayMatches } from '../../platform/replay/job-matches';
import { OPERATOR_TENANT } from '../../core/tenants';
import { statsRouter } from '../../api/routes/stats';
import { analyticsRouter } from '../../api/routes/analytics';
import { meRouter } from '../../api/routes/me';
import { tenantsRouter } from '../../api/routes/tenants';
import { portalExchangeRouter, portalSessionsRouter } from '../../api/routes/portal-sessions';
import { destinationTestEventsRouter } from '../../api/routes/destination-test-events';
import { PortalSessions } from '../../platform/redis/portal-sessions';
import { healthProbe } from '../../service/health';
import { buildInfo } from '../../service/service';
import { startReceiver, type Receiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';

/**
 * api/openapi.ts against the running service: every documented operation is driven through real
 * HTTP to each status it documents (except 500), and every answer must be documented for its
 * operation, match the documented schema of its status and content type, and carry the required
 * headers. Two extra API instances over the same service state (same createApp, store, Redis and
 * ClickHouse) give the answers one configuration cannot: one that is still starting (503), one with
 * every write group disabled and a limit of one request per route (403 write-tool-disabled, 429).
 */

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace'];
const ULID = '01j9zx5w3k8f6t2q4r7m1n0bcd';
/** The metrics token of the locked instance. */
const METRICS_TOKEN = 'metrics-token-0123456789abcdef';
/** Well-formed ids that name nothing. */
const MISSING: Record<string, string> = {
  destination_id: `dst_${ULID}`,
  ingester_id: `ing_${ULID}`,
  flow_id: `flw_${ULID}`,
  delivery_id: `dlv_${ULID}`,
  event_id: `evt_${ULID}`,
  payload_id: `pld_${ULID}`,
  key_id: `key_${ULID}`,
  replay_id: `rpl_${ULID}`,
  event_type_id: `etp_${ULID}`,
  dead_letter_id: `dlt_${ULID}`,
  portal_session_id: `pss_${ULID}`,
};

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  body: unknown;
}

/** One HTTP exchange with full control (a GET may carry a body; any content type, any bytes). */
function send(base: string, method: string, path: string, headers: Record<string, string>, body?: string | Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(body);
    const req = http.request(new URL(path, base), { method, agent: false, headers: { ...headers, ...(payload ? { 'content-length': String(payload.length) } : {}) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          parsed = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body: parsed });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');
const unescapePointer = (s: string) => s.replace(/~1/g, '/').replace(/~0/g, '~');

interface Operation {
  operationId: string;
  method: string;
  path: string;
  op: Json;
  /** JSON pointer of the operation in the document. */
  pointer: string;
}

/** Validates real answers against the document; remembers which operation answered which status. */
class Conformance {
  readonly ajv: Ajv2020;
  readonly operations = new Map<string, Operation>();
  readonly seen = new Map<string, Set<number>>();
  /** Answers checked, fabricated ones included. */
  checked = 0;
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(readonly doc: Json) {
    this.ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(this.ajv);
    // the whole document as one schema: `#/components/...` inside it resolves against `openapi`
    this.ajv.addSchema({ ...doc, $id: 'openapi' });
    for (const [path, item] of Object.entries(doc.paths as Json)) {
      for (const method of METHODS) {
        const op = (item as Json)[method];
        if (!isObject(op)) continue;
        const operationId = String(op.operationId);
        this.operations.set(operationId, { operationId, method, path, op, pointer: `/paths/${escapePointer(path)}/${method}` });
      }
    }
  }

  operation(operationId: string): Operation {
    const o = this.operations.get(operationId);
    if (!o) throw new Error(`the document has no operation ${operationId}`);
    return o;
  }

  at(pointer: string): unknown {
    let node: unknown = this.doc;
    for (const part of pointer.split('/').slice(1).map(unescapePointer)) {
      if (!isObject(node) && !Array.isArray(node)) return undefined;
      node = (node as Record<string, unknown>)[part];
    }
    return node;
  }

  /** Follows OpenAPI `$ref`s (responses, parameters, headers) to the object and its pointer. */
  deref(value: unknown, pointer: string): { value: Json; pointer: string } {
    if (isObject(value) && typeof value.$ref === 'string') {
      const target = value.$ref;
      if (!target.startsWith('#/')) throw new Error(`external $ref ${target}`);
      return this.deref(this.at(target.slice(1)), target.slice(1));
    }
    if (!isObject(value)) throw new Error(`nothing at ${pointer}`);
    return { value, pointer };
  }

  validator(pointer: string): ValidateFunction {
    let v = this.validators.get(pointer);
    if (!v) {
      v = this.ajv.compile({ $ref: `openapi#${pointer.split('/').map(encodeURIComponent).join('/')}` });
      this.validators.set(pointer, v);
    }
    return v;
  }

  /** Throws unless the answer is documented for the operation, with a matching body and headers. */
  check(operationId: string, a: Answer): void {
    const o = this.operation(operationId);
    const responses = o.op.responses as Json;
    const raw = responses[String(a.status)];
    const what = `${operationId} (${o.method.toUpperCase()} ${o.path}) answered ${a.status}`;
    if (raw === undefined) throw new Error(`${what}, which the document does not list (${Object.keys(responses).join(', ')}): ${a.text.slice(0, 500)}`);
    const { value: response, pointer } = this.deref(raw, `${o.pointer}/responses/${a.status}`);
    const contentType = String(a.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    const content = response.content;
    if (!isObject(content)) {
      if (a.text !== '') throw new Error(`${what} with a body, but the document has no content for it: ${a.text.slice(0, 200)}`);
    } else {
      const media = contentType in content ? contentType : '*/*' in content ? '*/*' : undefined;
      if (!media) throw new Error(`${what} as ${contentType || 'no content type'}, the document has ${Object.keys(content).join(', ')}`);
      const validate = this.validator(`${pointer}/content/${escapePointer(media)}/schema`);
      if (!validate(media.startsWith('text/') ? a.text : a.body)) {
        throw new Error(`${what}: the body does not match the document: ${this.ajv.errorsText(validate.errors, { separator: '\n  ' })}\nbody: ${a.text.slice(0, 1500)}`);
      }
    }
    for (const [name, h] of Object.entries(isObject(response.headers) ? response.headers : {})) {
      const { value: header, pointer: hp } = this.deref(h, `${pointer}/headers/${escapePointer(name)}`);
      const got = a.headers[name.toLowerCase()];
      if (got === undefined) {
        if (header.required === true) throw new Error(`${what} without the required header ${name}`);
        continue;
      }
      const text = Array.isArray(got) ? got.join(', ') : got;
      const headerSchema = this.deref(header.schema, `${hp}/schema`).value;
      const value = headerSchema.type === 'integer' ? Number(text) : text;
      const validate = this.validator(`${hp}/schema`);
      if (!validate(value)) throw new Error(`${what} with header ${name}: ${text}, not as documented: ${this.ajv.errorsText(validate.errors)}`);
    }
    // RFC 9457 `instance` is the request id; a replayed answer keeps the original request's
    if (contentType === 'application/problem+json' && a.headers['idempotent-replayed'] === undefined) {
      expect((a.body as Json).instance).toBe(a.headers['x-request-id']);
    }
    let statuses = this.seen.get(operationId);
    if (!statuses) this.seen.set(operationId, (statuses = new Set()));
    statuses.add(a.status);
    this.checked++;
  }

  /** Throws unless `body` matches the operation's documented JSON request body. */
  checkRequest(operationId: string, body: unknown): void {
    const o = this.operation(operationId);
    const validate = this.validator(`${o.pointer}/requestBody/content/application~1json/schema`);
    if (!validate(body)) throw new Error(`${operationId}: the service accepted a request body the document refuses: ${this.ajv.errorsText(validate.errors)}\nbody: ${JSON.stringify(body).slice(0, 500)}`);
  }

  /** Records an answer the test validated without HTTP (the document route before it is wired). */
  checkValue(operationId: string, status: number, body: unknown): void {
    const o = this.operation(operationId);
    const { pointer } = this.deref((o.op.responses as Json)[String(status)], `${o.pointer}/responses/${status}`);
    const validate = this.validator(`${pointer}/content/application~1json/schema`);
    if (!validate(body)) throw new Error(`${operationId} ${status}: ${this.ajv.errorsText(validate.errors)}`);
    let statuses = this.seen.get(operationId);
    if (!statuses) this.seen.set(operationId, (statuses = new Set()));
    statuses.add(status);
  }
}

interface Served {
  url: string;
  app: Express;
  close(): Promise<void>;
}

async function serve(app: Express): Promise<Served> {
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    app,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface RouteLike {
  path: unknown;
  methods: Record<string, unknown>;
}
interface LayerLike {
  route?: RouteLike;
  handle?: unknown;
}

/** `METHOD path` of every route an express router holds (sub-routers mounted without a path included). */
function routesOf(router: unknown, prefix: string, out: string[] = []): string[] {
  const stack = (router as { stack?: unknown } | undefined)?.stack;
  if (!Array.isArray(stack)) throw new Error('not an express router: no stack');
  for (const layer of stack as LayerLike[]) {
    if (layer.route) {
      const paths = Array.isArray(layer.route.path) ? (layer.route.path as unknown[]) : [layer.route.path];
      for (const p of paths) {
        // `all` (the 405 of /ingesters) is no operation of its own
        for (const m of Object.keys(layer.route.methods).filter((x) => x !== '_all')) out.push(`${m.toUpperCase()} ${prefix}${String(p)}`);
      }
    } else if (typeof layer.handle === 'function' && Array.isArray((layer.handle as { stack?: unknown }).stack)) {
      routesOf(layer.handle, prefix, out);
    }
  }
  return out;
}

/** `GET /v1/tenants/{}/destinations/{}` for express (`:id`) and OpenAPI (`{id}`) paths alike. */
const normalise = (route: string) => route.replace(/\/$/, '').replace(/:\w+/g, '{}').replace(/\{\w+\}/g, '{}');

describe('OpenAPI document', () => {
  let svc: TestService;
  let okReceiver: Receiver;
  let flakyReceiver: Receiver;
  let unready: Served;
  let locked: Served;
  let lockedRedis: Redis;
  let lockedUrl: string | undefined;
  /** A portal session in the locked instance's Redis namespace, for its reads. */
  let lockedSessionId = '';
  let lockedServices: ApiServices;
  let doc: Json;
  let conf: Conformance;
  let errorBase: string;
  let noScopeKey: string;
  let limitedKey: string;
  let expiredKey: string;

  // fixtures, created through the API in the tests below
  let destA = '';
  let destB = '';
  let ingGeneric = '';
  let ingNone = '';
  let flowId = '';
  let payloadId = '';
  let deadEventId = '';
  let deadDeliveryId = '';
  let replayId = '';
  let eventTypeId = '';
  let deadLetterId = '';

  const base = () => `/v1/tenants/${svc.tenantId}`;
  const log = new Logger('error');

  interface CallOptions {
    key?: string | null;
    query?: string;
    json?: unknown;
    body?: string | Buffer;
    headers?: Record<string, string>;
    target?: string;
  }

  /** Calls a documented operation by its operationId and checks the answer against the document. */
  async function call(operationId: string, params: Record<string, string> = {}, o: CallOptions = {}): Promise<Answer> {
    const entry = conf.operation(operationId);
    const path =
      entry.path.replace(/\{(\w+)\}/g, (_m, name: string) => {
        const v = name === 'tenant_id' ? params.tenant_id ?? svc.tenantId : params[name];
        if (v === undefined) throw new Error(`${operationId}: no value for {${name}}`);
        return encodeURIComponent(v);
      }) + (o.query ? `?${o.query}` : '');
    const headers: Record<string, string> = { ...(o.headers ?? {}) };
    const key = o.key === undefined ? (entry.path.startsWith('/v1/tenants/') || (entry.path.startsWith('/v1/mcp') && operationId !== 'getHealth') || entry.path === '/v1/me' ? svc.apiKey : null) : o.key;
    if (key !== null) headers.authorization = `Bearer ${key}`;
    let body = o.body;
    if (o.json !== undefined) {
      body = JSON.stringify(o.json);
      headers['content-type'] ??= 'application/json';
    }
    const answer = await send(o.target ?? svc.url, entry.method.toUpperCase(), path, headers, body);
    conf.check(operationId, answer);
    // what the service accepted, the documented request body schema accepts too
    if (answer.status < 300 && o.json !== undefined && isObject(entry.op.requestBody)) conf.checkRequest(operationId, o.json);
    return answer;
  }

  function expectProblem(a: Answer, status: number, slug: string, extra: Json = {}): void {
    expect({ status: a.status, body: a.body }).toMatchObject({ status, body: { type: `${errorBase}/errors/${slug}`, status, ...extra } });
  }
  const bodyOf = (a: Answer): Json => {
    if (!isObject(a.body)) throw new Error(`not a JSON object: ${a.text.slice(0, 200)}`);
    return a.body;
  };
  const fields = (a: Answer) => ((bodyOf(a).errors as { field: string }[]) ?? []).map((e) => e.field);
  const tenantOperations = () => [...conf.operations.values()].filter((o) => o.path.startsWith('/v1/tenants/') && o.op['x-operator'] !== true);
  const operatorOperations = () => [...conf.operations.values()].filter((o) => o.op['x-operator'] === true);
  const isWrite = (o: Operation) => o.method !== 'get';
  const missingParams = (o: Operation): Record<string, string> => {
    const params: Record<string, string> = {};
    for (const m of o.path.matchAll(/\{(\w+)\}/g)) if (m[1] !== 'tenant_id') params[m[1]!] = MISSING[m[1]!]!;
    return params;
  };

  beforeAll(async () => {
    [svc, okReceiver, flakyReceiver] = await Promise.all([
      startTestService({ LOG_LEVEL: 'warn', INGEST_MAX_BODY_BYTES: '65536', RATE_LIMITS: 'default=10000/60s', MAX_FANOUT: '1' }),
      startReceiver(),
      startReceiver(),
    ]);
    errorBase = svc.config.errorBase;
    doc = openApiDocument({ errorBase, serverUrl: svc.url });
    conf = new Conformance(doc);
    noScopeKey = await svc.newKey([]);
    limitedKey = await svc.newKey([...SCOPES], { resourceIds: [`dst_${ULID}`] });
    expiredKey = (await issueApiKey(svc.service.store, svc.tenantId, [...SCOPES], { expiresAt: '2020-01-01T00:00:00.000Z' })).api_key;

    // an instance that has not finished starting: no services, the real probe with nothing connected
    unready = await serve(createApp({ errorBase: () => errorBase, log, probe: healthProbe({}), build: buildInfo(), services: () => undefined }));

    // an instance over the same state with every write group disabled and one request per route and key
    lockedRedis = new Redis(svc.config.redisUrl!);
    const prefix = `${svc.config.topicPrefix}locked.`;
    lockedSessionId = (await new PortalSessions(lockedRedis, prefix).create({ tenantId: svc.tenantId, scopes: ['read:deliveries'], destinationIds: null, linkMs: 60_000, sessionMs: 600_000, max: 10 }))!.session.id;
    const services: ApiServices = (lockedServices = {
      ...svc.service.apiServices!,
      store: svc.service.store,
      clickhouse: svc.clickhouse,
      clickhouseDatabase: svc.config.clickhouseDatabase,
      claims: new RedisNameClaims(lockedRedis, prefix),
      replay: { producer: svc.service.kafka.producer(), codec: AvroCodec.connect(svc.config.schemaRegistryUrl!), topics: svc.service.topics, redis: lockedRedis, prefix, config: svc.service.store },
      publicBaseUrl: svc.url,
      redis: lockedRedis,
      redisPrefix: prefix,
      idempotencyTtlSeconds: 60,
      rateLimits: { default: { limit: 1, windowSeconds: 60 }, routes: {} },
      // counting: a late answer of Redis on a loaded machine must not let a request through unlimited
      rateLimitTimeoutMs: 10_000,
      quotas: DEFAULT_QUOTAS,
      disabledWriteGroups: SCOPES.filter((s) => s.startsWith('write:')),
      evidence: new EvidenceStore(svc.clickhouse, svc.config.clickhouseDatabase),
      evidenceLog: svc.service.evidenceLog!,
      destinationHttpsOnly: false,
      refusalOfDestination: svc.service.apiServices!.refusalOfDestination,
      maxFanout: 50,
      operations: svc.service.apiServices!.operations,
    });
    locked = await serve(createApp({ errorBase: () => errorBase, log, probe: healthProbe({}), build: buildInfo(), services: () => services, selfUrl: () => lockedUrl, metricsToken: METRICS_TOKEN }));
    lockedUrl = locked.url;
  });

  afterAll(async () => {
    await Promise.all([svc?.stop(), okReceiver?.close(), flakyReceiver?.close(), unready?.close(), locked?.close()]);
    lockedRedis?.disconnect();
  });

  it('is a structurally valid OpenAPI 3.1 document whose $refs all resolve', () => {
    expect(doc.openapi).toBe('3.1.0');
    const info = doc.info as Json;
    expect(typeof info.title).toBe('string');
    expect(typeof info.version).toBe('string');
    expect(doc.servers).toEqual([{ url: svc.url }]);
    const components = doc.components as Json;
    const securitySchemes = components.securitySchemes as Json;
    const tags = new Set((doc.tags as { name: string }[]).map((t) => t.name));

    // every $ref anywhere resolves inside the document
    const refs: string[] = [];
    const walk = (node: unknown, at: string) => {
      if (Array.isArray(node)) node.forEach((n, i) => walk(n, `${at}/${i}`));
      else if (isObject(node)) {
        if (typeof node.$ref === 'string') refs.push(node.$ref);
        for (const [k, v] of Object.entries(node)) walk(v, `${at}/${escapePointer(k)}`);
      }
    };
    walk(doc, '');
    expect(refs.length).toBeGreaterThan(100);
    const unresolved = refs.filter((r) => !r.startsWith('#/') || conf.at(r.slice(1)) === undefined);
    expect(unresolved).toEqual([]);

    // every component schema is a valid JSON Schema 2020-12 and compiles
    for (const name of Object.keys(components.schemas as Json)) {
      const s = (components.schemas as Json)[name];
      expect({ name, valid: conf.ajv.validateSchema(s as object), errors: conf.ajv.errors ?? null }).toEqual({ name, valid: true, errors: null });
      expect(() => conf.validator(`/components/schemas/${name}`)).not.toThrow();
    }

    const operationIds = new Set<string>();
    for (const [path, itemRaw] of Object.entries(doc.paths as Json)) {
      // the probes every process answers sit at the root, where orchestrators look for them
      if (path !== '/healthz' && path !== '/readyz' && path !== '/metrics') expect(path).toMatch(/^\/v1\//);
      const item = itemRaw as Json;
      const templated = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
      const pathParams = ((item.parameters as unknown[]) ?? []).map((p, i) => conf.deref(p, `/paths/${escapePointer(path)}/parameters/${i}`).value);
      const operations = METHODS.filter((m) => isObject(item[m]));
      expect(operations.length).toBeGreaterThan(0);
      for (const method of operations) {
        const op = item[method] as Json;
        const where = `${method.toUpperCase()} ${path}`;
        expect(typeof op.operationId).toBe('string');
        expect(operationIds.has(String(op.operationId))).toBe(false);
        operationIds.add(String(op.operationId));
        expect(typeof op.summary).toBe('string');
        expect(typeof op.description).toBe('string');
        for (const t of op.tags as string[]) expect(tags.has(t)).toBe(true);
        // parameters: every template variable declared once as a required path parameter, nothing extra
        const params = [...pathParams, ...((op.parameters as unknown[]) ?? []).map((p, i) => conf.deref(p, `/paths/${escapePointer(path)}/${method}/parameters/${i}`).value)];
        for (const p of params) {
          expect(['path', 'query', 'header', 'cookie']).toContain(p.in);
          expect(typeof p.name).toBe('string');
          expect(isObject(p.schema)).toBe(true);
        }
        const declared = params.filter((p) => p.in === 'path');
        expect({ where, path: declared.map((p) => p.name).sort() }).toEqual({ where, path: [...templated].sort() });
        for (const p of declared) expect(p.required).toBe(true);
        // responses
        const responses = op.responses as Json;
        expect(Object.keys(responses).length).toBeGreaterThan(0);
        for (const [status, r] of Object.entries(responses)) {
          expect(status).toMatch(/^[1-5]\d\d$/);
          const response = conf.deref(r, '').value;
          expect(typeof response.description).toBe('string');
          for (const [media, c] of Object.entries((response.content as Json) ?? {})) {
            expect(media).toMatch(/^(\*\/\*|[a-z]+\/[a-z0-9.+-]+)$/);
            expect(isObject((c as Json).schema)).toBe(true);
          }
          if (Number(status) >= 400) expect(Object.keys((response.content as Json) ?? {})).toEqual([expect.stringMatching(/^application\/(problem\+)?json$/)]);
        }
        // security: tenant routes need the bearer scheme with exactly the scope the route checks
        const security = op.security as Json[];
        if (op['x-operator'] === true) {
          // the operators' routes: an operator key, no scope
          expect(path === '/v1/tenants' || path === '/v1/tenants/{tenant_id}').toBe(true);
          expect(security).toEqual([{ bearerAuth: [] }]);
          expect(op['x-required-scope']).toBeUndefined();
          expect(Object.keys(responses)).toEqual(expect.arrayContaining(['400', '401', '403', '429', '503']));
          if (method !== 'get') expect(((op.parameters as Json[]) ?? []).map((p) => p.$ref)).toContain('#/components/parameters/IdempotencyKey');
        } else if (path.startsWith('/v1/tenants/')) {
          expect(SCOPES).toContain(op['x-required-scope']);
          expect(security).toEqual([{ bearerAuth: [op['x-required-scope']] }]);
          expect(Object.keys(securitySchemes)).toContain('bearerAuth');
          expect(Object.keys(responses)).toEqual(expect.arrayContaining(['400', '401', '403', '404', '429', '503']));
          if (method !== 'get') expect(((op.parameters as Json[]) ?? []).map((p) => p.$ref)).toContain('#/components/parameters/IdempotencyKey');
        } else if ((path.startsWith('/v1/mcp') && op.operationId !== 'getHealth') || path === '/v1/me') {
          // the evidence surface and the key's identity: any valid key, plus the route's own scope where it has one
          const scope = op['x-required-scope'];
          if (scope !== null) expect(SCOPES).toContain(scope);
          expect(security).toEqual([{ bearerAuth: scope === null ? [] : [scope] }]);
          expect(Object.keys(responses)).toEqual(expect.arrayContaining(['400', '401', '429', '503']));
        } else {
          expect(security).toEqual([]);
          expect(op['x-required-scope']).toBeUndefined();
        }
        if (isObject(op.requestBody)) expect(isObject(op.requestBody.content)).toBe(true);
      }
    }
    expect(operationIds.size).toBe(78);
  });

  it('documents every route the express app registers, with the scope each route checks', async () => {
    const store = svc.service.store;
    const claims = new RedisNameClaims(lockedRedis, 'unused.');
    const db = svc.config.clickhouseDatabase;
    const replay = { producer: svc.service.kafka.producer(), codec: AvroCodec.connect(svc.config.schemaRegistryUrl!), topics: svc.service.topics, redis: lockedRedis, prefix: 'unused.', config: store };
    // the app's own routes (health, and the document once it is wired) and the Hook URL router
    const registered = routesOf((unready.app as unknown as { router: unknown }).router, '');
    routesOf(ingestRouter({ topics: svc.service.topics, config: store, codec: replay.codec, producer: new BatchingProducer(replay.producer), maxBodyBytes: 1, maxHops: 3, log }), '', registered);
    // the tenant routers, at the mount paths of api/app.ts (proved below: each answers its scope's 403)
    const mounts: [string, unknown][] = [
      ['/destinations', destinationsRouter(store, claims, { refusalOf: async () => null })],
      ['/destinations', destinationChangesRouter(destinationChangeDepsOf({ ...svc.service.apiServices!, claims }))],
      ['/destinations', destinationTransformationRouter(store, undefined)],
      ['/destinations', destinationTestEventsRouter(store, replay)],
      ['/portal-sessions', portalSessionsRouter(store, new PortalSessions(lockedRedis, 'unused.'), { publicBaseUrl: () => svc.url })],
      ['/ingesters', ingestersRouter(store, svc.url, 50)],
      ['/deliveries', deliveriesRouter(svc.clickhouse, db)],
      ['/events', eventsRouter(svc.clickhouse, db, store, replay)],
      ['/dead-letters', deadLettersRouter(new DeadLetterStore(svc.clickhouse, db), replay)],
      ['/delivery-flows', flowsRouter(store, 50)],
      ['/saved-payloads', savedPayloadsRouter(store)],
      ['/api-keys', apiKeysRouter(store, undefined)],
      ['/event-types', eventTypesRouter(store, claims)],
      ['/logs', logsRouter(svc.clickhouse, db)],
      ['/exports', exportsRouter(svc.clickhouse, db)],
      ['/replays', replaysRouter(store, new ReplayMatches(svc.clickhouse, db), lockedRedis, 'unused.')],
      ['/evidence', evidenceRouter(new EvidenceStore(svc.clickhouse, db), svc.clickhouse, db)],
      ['/evidence-log', evidenceLogRouter(new EvidenceStore(svc.clickhouse, db), svc.service.evidenceLog!)],
      ['/stats', statsRouter({ clickhouse: svc.clickhouse, database: db, store, lag: { read: async () => ({ measured_at: '', stages: [] }) }, breakers: { entries: async () => [] }, log })],
      ['/analytics', analyticsRouter(svc.clickhouse, db)],
    ];
    const tenantRoutes: string[] = [];
    for (const [mount, router] of mounts) routesOf(router, `/v1/tenants/:tenantId${mount}`, tenantRoutes);
    registered.push(...tenantRoutes);
    // the evidence surface, at its mount path in api/app.ts (its routes only, never called here)
    routesOf(mcpRouter({ ...({} as McpRoutesDeps), mcp: () => undefined }), '/v1/mcp', registered);
    routesOf(meRouter(), '/v1/me', registered);
    routesOf(tenantsRouter(store, { maxBodyBytes: 1, erase: async () => undefined, before: [] }), '/v1/tenants', registered);
    routesOf(portalExchangeRouter(store, new PortalSessions(lockedRedis, 'unused.'), { secure: () => false }), '/v1/portal/session', registered);

    const documented = new Map([...conf.operations.values()].map((o) => [normalise(`${o.method.toUpperCase()} ${o.path}`), o]));
    const registeredSet = new Set(registered.map(normalise));
    expect([...registeredSet].filter((r) => !documented.has(r))).toEqual([]);
    // the document route is wired into the service separately; everything else documented is registered
    expect([...documented.keys()].filter((d) => !registeredSet.has(d) && d !== 'GET /v1/openapi.json')).toEqual([]);

    // x-rate-limit-route is the key the rate limiter computes for the operation's requests
    for (const o of tenantOperations()) {
      const [, rest] = /^\/v1\/tenants\/\{tenant_id\}(.*)$/.exec(o.path)!;
      const concrete = rest!.replace(/\{(\w+)\}/g, (_m, name: string) => MISSING[name]!);
      const req = { method: o.method.toUpperCase(), baseUrl: `/v1/tenants/${svc.tenantId}`, path: concrete, route: undefined } as unknown as Request;
      expect({ op: o.operationId, route: defaultRouteOf(req) }).toEqual({ op: o.operationId, route: o.op['x-rate-limit-route'] });
    }

    // each tenant route is mounted where the document says and checks the scope it documents
    for (const route of tenantRoutes) {
      const o = documented.get(normalise(route))!;
      const a = await call(o.operationId, missingParams(o), { key: noScopeKey });
      expectProblem(a, 403, 'insufficient-scope', { required_scope: o.op['x-required-scope'] });
    }
  });

  it('health, the Hook URL and the document itself answer as documented', async () => {
    const health = await call('getHealth');
    expect(health.status).toBe(200);
    expect(bodyOf(health).status).toBe('ok');
    const ready = await call('getReadiness');
    expect(ready.status).toBe(200);
    expect(bodyOf(ready)).toMatchObject({ status: 'ok', stages: expect.arrayContaining(['api', 'ingest']) });
    const alive = await call('getLiveness');
    expect(alive.status).toBe(200);
    expect(bodyOf(alive).status).toBe('alive');
    const metrics = await call('getMetrics');
    expect(metrics.status).toBe(200);
    expect(metrics.text).toMatch(/^# TYPE hookline_deliveries_total counter$/m);
    // the instance with METRICS_TOKEN wants it, and no API key stands in for it
    expectProblem(await call('getMetrics', {}, { target: locked.url }), 401, 'unauthorized');
    expectProblem(await call('getMetrics', {}, { target: locked.url, key: svc.apiKey }), 401, 'unauthorized');
    expect((await call('getMetrics', {}, { target: locked.url, key: METRICS_TOKEN })).status).toBe(200);

    const served = await send(svc.url, 'GET', '/v1/openapi.json', {});
    if (served.status === 200) {
      conf.check('getOpenApiDocument', served);
      expect(bodyOf(served).paths).toEqual(openApiDocument({ errorBase }).paths);
      expect(bodyOf(served).components).toEqual(openApiDocument({ errorBase }).components);
    } else {
      // not wired yet: the function's output must still match what the route will document
      conf.checkValue('getOpenApiDocument', 200, openApiDocument({ errorBase }));
    }

    // the Hook URL; the ingester comes later, so first what answers without one
    const unknown = await call('receiveWebhook', { ingester_id: MISSING.ingester_id! }, { body: '{}', headers: { 'content-type': 'application/json' } });
    expectProblem(unknown, 404, 'not-found');
  });

  it('destinations', async () => {
    const a = await call('createDestination', {}, { json: { name: 'oas-a', url: okReceiver.url } });
    expect(a.status).toBe(201);
    destA = String(bodyOf(a).id);
    expect(a.headers.location).toBe(`${base()}/destinations/${destA}`);
    const b = await call('createDestination', {}, { json: { name: 'oas-b', url: flakyReceiver.url, retry_schedule_ms: [0] } });
    expect(b.status).toBe(201);
    destB = String(bodyOf(b).id);
    expect(bodyOf(b).retry_schedule_ms).toEqual([0]);

    expectProblem(await call('createDestination', {}, { json: { name: ' OAS-A ', url: okReceiver.url } }), 409, 'conflict');
    expectProblem(await call('createDestination', {}, { json: { name: 'oas-loop', url: `${svc.url}/v1/hooks/ing_x` } }), 422, 'unprocessable-entity');
    const bad = await call('createDestination', {}, { json: { name: '', url: 'ftp://x', retry_schedule_ms: [-1] } });
    expectProblem(bad, 400, 'validation-error');
    // the schema's problems first, then the url's, which depend on the destination's type
    expect(fields(bad)).toEqual(['name', 'retry_schedule_ms', 'url']);
    expectProblem(await call('createDestination', {}, { json: [1] }), 400, 'validation-error');

    const page1 = await call('listDestinations', {}, { query: 'limit=1' });
    expect(page1.status).toBe(200);
    expect(typeof bodyOf(page1).next_cursor).toBe('string');
    const page2 = await call('listDestinations', {}, { query: `limit=1&cursor=${String(bodyOf(page1).next_cursor)}` });
    expect(bodyOf(page2).next_cursor).toBeNull();
    expect(fields(await call('listDestinations', {}, { query: 'limit=0' }))).toEqual(['limit']);
    expect(fields(await call('listDestinations', {}, { query: 'cursor=nonsense' }))).toEqual(['cursor']);
    expect(bodyOf(await call('listDestinations', {}, { key: limitedKey })).destinations).toEqual([]);

    const got = await call('getDestination', { destination_id: destA });
    expect(bodyOf(got)).toMatchObject({ id: destA, name: 'oas-a', status: 'active', retry_schedule_ms: null });
    expectProblem(await call('getDestination', { destination_id: MISSING.destination_id! }), 404, 'not-found');
    expectProblem(await call('getDestination', { destination_id: destA }, { key: limitedKey }), 403, 'permission-denied', { resource_id: destA });

    // the types and their schemas, without a key; a dry run of a transformation
    conf.check('listDestinationTypes', await send(svc.url, 'GET', '/v1/destination-types', {}));
    const dry = await call('testDestinationTransformation', { destination_id: destA }, { json: { body: { a: 1 }, transformation: 'function transform(e) { return { body: [e.body.a] }; }' } });
    expect([dry.status, bodyOf(dry).outcome, bodyOf(dry).body]).toEqual([200, 'send', '[1]']);
    expectProblem(await call('testDestinationTransformation', { destination_id: MISSING.destination_id! }, { json: { body: {} } }), 404, 'not-found');

    const temp = await call('createDestination', {}, { json: { name: 'oas-temp', url: okReceiver.url } });
    expectProblem(await call('deleteDestination', { destination_id: String(bodyOf(temp).id) }, { key: limitedKey }), 403, 'permission-denied');
    expect((await call('deleteDestination', { destination_id: String(bodyOf(temp).id) })).status).toBe(204);
    expectProblem(await call('deleteDestination', { destination_id: String(bodyOf(temp).id) }), 404, 'not-found');
  });

  it('destination changes', async () => {
    const c = await call('createDestination', {}, { json: { name: 'oas-changes', url: okReceiver.url, rate_limit_per_s: 5, event_types: ['a.*'], filter: null, enabled: true } });
    expect(c.status).toBe(201);
    const id = String(bodyOf(c).id);
    const etag = String(c.headers.etag);
    expect(bodyOf(await call('getDestination', { destination_id: id })).rate_limit_per_s).toBe(5);

    const merge = { 'content-type': 'application/merge-patch+json' };
    const patched = await call('patchDestination', { destination_id: id }, { json: { enabled: false, name: 'oas-changes-2' }, headers: { ...merge, 'if-match': etag } });
    expect(patched.status).toBe(200);
    expect(bodyOf(patched)).toMatchObject({ status: 'paused', enabled: false, name: 'oas-changes-2' });
    expectProblem(await call('patchDestination', { destination_id: id }, { json: { enabled: true }, headers: { ...merge, 'if-match': etag } }), 412, 'precondition-failed');
    expect(fields(await call('patchDestination', { destination_id: id }, { json: { rate_limit_per_s: 'x' } }))).toEqual(['rate_limit_per_s']);
    expect(fields(await call('patchDestination', { destination_id: id }, { json: { colour: 'red' } }))).toEqual(['colour']);
    expectProblem(await call('patchDestination', { destination_id: id }, { json: { name: 'oas-a' } }), 409, 'conflict');
    expectProblem(await call('patchDestination', { destination_id: MISSING.destination_id! }, { json: {} }), 404, 'not-found');
    expectProblem(await call('patchDestination', { destination_id: id }, { json: {}, key: limitedKey }), 403, 'permission-denied');

    const replaced = await call('replaceDestination', { destination_id: id }, { json: { name: 'oas-changes-3', url: okReceiver.url }, headers: { 'if-match': String(patched.headers.etag) } });
    expect(replaced.status).toBe(200);
    expect(bodyOf(replaced)).toMatchObject({ status: 'active', rate_limit_per_s: null, event_types: null });
    expectProblem(await call('replaceDestination', { destination_id: id }, { json: { name: 'x', url: okReceiver.url }, headers: { 'if-match': etag } }), 412, 'precondition-failed');
    expect(fields(await call('replaceDestination', { destination_id: id }, { json: { name: 'x' } }))).toEqual(['url']);
    expectProblem(await call('replaceDestination', { destination_id: id }, { json: { name: 'x', url: okReceiver.url, status: 'disabled' } }), 422, 'unprocessable-entity');
    expectProblem(await call('replaceDestination', { destination_id: id }, { json: { name: 'OAS-B', url: okReceiver.url } }), 409, 'conflict');
    expectProblem(await call('replaceDestination', { destination_id: MISSING.destination_id! }, { json: { name: 'x', url: okReceiver.url } }), 404, 'not-found');
    expectProblem(await call('replaceDestination', { destination_id: id }, { json: { name: 'x', url: okReceiver.url }, key: limitedKey }), 403, 'permission-denied');

    const rotated = await call('rotateDestinationSecret', { destination_id: id }, { json: { overlap_seconds: 60 } });
    expect(rotated.status).toBe(200);
    expect(typeof bodyOf(rotated).previous_secret_expires_at).toBe('string');
    expect((await call('rotateDestinationSecret', { destination_id: id }, { headers: { 'if-match': '*' } })).status).toBe(200);
    expectProblem(await call('rotateDestinationSecret', { destination_id: id }, { json: {}, headers: { 'if-match': etag } }), 412, 'precondition-failed');
    expect(fields(await call('rotateDestinationSecret', { destination_id: id }, { json: { overlap_seconds: -1 } }))).toEqual(['overlap_seconds']);
    expectProblem(await call('rotateDestinationSecret', { destination_id: MISSING.destination_id! }), 404, 'not-found');
    expectProblem(await call('rotateDestinationSecret', { destination_id: id }, { key: limitedKey }), 403, 'permission-denied');

    const history = await call('listDestinationChanges', { destination_id: id }, { query: 'limit=2' });
    expect(history.status).toBe(200);
    expect((bodyOf(history).changes as Json[]).map((x) => x.action)).toEqual(['secret_rotated', 'secret_rotated']);
    const rest = await call('listDestinationChanges', { destination_id: id }, { query: `cursor=${String(bodyOf(history).next_cursor)}` });
    expect((bodyOf(rest).changes as Json[]).map((x) => x.action)).toEqual(['resumed', 'paused', 'created']);
    expect(fields(await call('listDestinationChanges', { destination_id: id }, { query: 'limit=0' }))).toEqual(['limit']);
    expectProblem(await call('listDestinationChanges', { destination_id: MISSING.destination_id! }), 404, 'not-found');
    expectProblem(await call('listDestinationChanges', { destination_id: id }, { key: limitedKey }), 403, 'permission-denied');
  });

  it('ingesters', async () => {
    const generic = await call('createIngester', {}, {
      json: {
        name: 'oas-generic',
        provider: 'generic',
        config: { signing_secret: 's3cret-value', signing_secrets: ['another-secret'], header: 'x-signature', prefix: 'sha256=', algorithm: 'sha256' },
        filters: [
          { type: 'header', name: 'x-env', op: 'exists' },
          { type: 'any', rules: [{ type: 'event_type', op: 'in', values: ['a'] }, { type: 'body', path: 'a.b', op: 'equals', value: 1 }, { type: 'header', name: 'x-k', op: 'matches', pattern: '^v[0-9]$' }] },
        ],
        destination_ids: [destA],
      },
    });
    expect(generic.status).toBe(201);
    ingGeneric = String(bodyOf(generic).id);
    expect(bodyOf(generic)).toMatchObject({ config: { signing_secret: '****lue', signing_secrets: ['****ret'], header: 'x-signature' }, hook_url: `${svc.url}/v1/hooks/${ingGeneric}` });
    expect(generic.headers.location).toBe(`${base()}/ingesters/${ingGeneric}`);
    const none = await call('createIngester', {}, { json: { name: 'oas-none', provider: 'none', destination_ids: [destB] } });
    expect(none.status).toBe(201);
    ingNone = String(bodyOf(none).id);
    // MAX_FANOUT is 1 in this service
    expectProblem(await call('createIngester', {}, { json: { name: 'oas-wide', provider: 'none', destination_ids: [destA, destB] } }), 422, 'unprocessable-entity');
    expectProblem(await call('updateIngester', { ingester_id: ingNone }, { json: { name: 'oas-none', destination_ids: [destA, destB] } }), 422, 'unprocessable-entity');

    const bad = await call('createIngester', {}, { json: { name: 'x', provider: 'nope', filters: [{ type: 'header' }], destination_ids: ['dst_nope'] } });
    expectProblem(bad, 400, 'validation-error');
    expect(fields(bad)).toEqual(expect.arrayContaining(['provider', 'destination_ids[0]', 'filters[0].name']));
    expect(fields(await call('createIngester', {}, { json: { name: 'x', provider: 'stripe', config: {} } }))).toEqual(['config.signing_secret']);
    expectProblem(await call('createIngester', {}, { key: limitedKey, json: { name: 'pd', provider: 'none', destination_ids: [destA] } }), 403, 'permission-denied', { resource_id: destA });
    const lookahead = { type: 'header', name: 'x-k', op: 'matches', pattern: 'v(?=1)' };
    const refused = await call('createIngester', {}, { json: { name: 'oas-refused', provider: 'none', filters: [lookahead] } });
    expectProblem(refused, 422, 'unprocessable-entity');
    expect(fields(refused)).toEqual(['filters[0].pattern']);

    const page = await call('listIngesters', {}, { query: 'limit=1' });
    expect(typeof bodyOf(page).next_cursor).toBe('string');
    await call('listIngesters', {}, { query: `cursor=${String(bodyOf(page).next_cursor)}` });
    expect(fields(await call('listIngesters', {}, { query: 'limit=201' }))).toEqual(['limit']);

    const got = await call('getIngester', { ingester_id: ingGeneric });
    expect((bodyOf(got).delivery_flows as unknown[]).length).toBe(1);
    expectProblem(await call('getIngester', { ingester_id: MISSING.ingester_id! }), 404, 'not-found');
    expectProblem(await call('getIngester', { ingester_id: ingGeneric }, { key: limitedKey }), 403, 'permission-denied', { resource_id: ingGeneric });

    const put = await call('updateIngester', { ingester_id: ingGeneric }, { json: { name: 'oas-generic renamed', config: bodyOf(got).config } });
    expect(put.status).toBe(200);
    expect(bodyOf(put)).toMatchObject({ name: 'oas-generic renamed', config: { signing_secret: '****lue' } });
    expect(fields(await call('updateIngester', { ingester_id: ingGeneric }, { json: { filters: [] } }))).toEqual(['name']);
    const refusedUpdate = await call('updateIngester', { ingester_id: ingGeneric }, { json: { name: 'x', filters: [{ type: 'any', rules: [lookahead] }] } });
    expectProblem(refusedUpdate, 422, 'unprocessable-entity');
    expect(fields(refusedUpdate)).toEqual(['filters[0].rules[0].pattern']);
    expectProblem(await call('updateIngester', { ingester_id: MISSING.ingester_id! }, { json: { name: 'x' } }), 404, 'not-found');
    expectProblem(await call('updateIngester', { ingester_id: ingGeneric }, { key: limitedKey, json: { name: 'x' } }), 403, 'permission-denied');

    const temp = await call('createIngester', {}, { json: { name: 'oas-temp', provider: 'none' } });
    const tempId = String(bodyOf(temp).id);
    expectProblem(await call('deleteIngester', { ingester_id: tempId }, { key: limitedKey }), 403, 'permission-denied');
    expect((await call('deleteIngester', { ingester_id: tempId })).status).toBe(204);
    expectProblem(await call('deleteIngester', { ingester_id: tempId }), 404, 'not-found');
  });

  it('delivery flows', async () => {
    const created = await call('createDeliveryFlow', {}, { json: { name: 'oas-flow', ingester_id: ingGeneric, destination_ids: [destA] } });
    expect(created.status).toBe(201);
    flowId = String(bodyOf(created).id);
    const bad = await call('createDeliveryFlow', {}, { json: { name: 'x', ingester_id: 'ing_nope', destination_ids: ['dst_nope'] } });
    expect(fields(bad)).toEqual(['ingester_id', 'destination_ids[0]']);
    expectProblem(await call('createDeliveryFlow', {}, { json: { name: 'oas-wide', ingester_id: ingGeneric, destination_ids: [destB] } }), 422, 'unprocessable-entity');
    expectProblem(await call('updateDeliveryFlow', { flow_id: flowId }, { json: { name: 'oas-wide', destination_ids: [destA, destB] } }), 422, 'unprocessable-entity');
    expectProblem(await call('createDeliveryFlow', {}, { key: limitedKey, json: { name: 'pd', ingester_id: ingGeneric, destination_ids: [] } }), 403, 'permission-denied', { resource_id: ingGeneric });

    const page = await call('listDeliveryFlows', {}, { query: 'limit=1' });
    expect(typeof bodyOf(page).next_cursor).toBe('string');
    expect(fields(await call('listDeliveryFlows', {}, { query: 'limit=x' }))).toEqual(['limit']);

    expect(bodyOf(await call('getDeliveryFlow', { flow_id: flowId }))).toMatchObject({ ingester_id: ingGeneric, destination_ids: [destA] });
    expectProblem(await call('getDeliveryFlow', { flow_id: MISSING.flow_id! }), 404, 'not-found');
    expectProblem(await call('getDeliveryFlow', { flow_id: flowId }, { key: limitedKey }), 403, 'permission-denied');

    const put = await call('updateDeliveryFlow', { flow_id: flowId }, { json: { name: 'oas-flow 2', destination_ids: [destA, destA] } });
    expect(bodyOf(put)).toMatchObject({ name: 'oas-flow 2', destination_ids: [destA] });
    expect(fields(await call('updateDeliveryFlow', { flow_id: flowId }, { json: {} }))).toEqual(['name']);
    expectProblem(await call('updateDeliveryFlow', { flow_id: MISSING.flow_id! }, { json: { name: 'x' } }), 404, 'not-found');
    expectProblem(await call('updateDeliveryFlow', { flow_id: flowId }, { key: limitedKey, json: { name: 'x' } }), 403, 'permission-denied');

    const temp = await call('createDeliveryFlow', {}, { json: { name: 'oas-temp', ingester_id: ingGeneric, destination_ids: [] } });
    const tempId = String(bodyOf(temp).id);
    expectProblem(await call('deleteDeliveryFlow', { flow_id: tempId }, { key: limitedKey }), 403, 'permission-denied');
    expect((await call('deleteDeliveryFlow', { flow_id: tempId })).status).toBe(204);
    expectProblem(await call('deleteDeliveryFlow', { flow_id: tempId }), 404, 'not-found');
  });

  it('event types', async () => {
    const schema = { type: 'object', properties: { amount: { type: 'integer' } } };
    const created = await call('createEventType', {}, { json: { name: 'invoice.paid', description: 'Paid.', schema } });
    expect(created.status).toBe(201);
    eventTypeId = String(bodyOf(created).id);
    expect(created.headers.location).toBe(`${base()}/event-types/${eventTypeId}`);
    expect((await call('createEventType', {}, { json: { name: 'invoice.created' } })).status).toBe(201);
    expectProblem(await call('createEventType', {}, { json: { name: 'Invoice.Paid' } }), 409, 'conflict');
    expect(fields(await call('createEventType', {}, { json: { name: 'bad name', extra: 1 } })).sort()).toEqual(['extra', 'name']);
    const refused = await call('createEventType', {}, { json: { name: 'refused', schema: { $ref: 'https://example.com/s.json' } } });
    expectProblem(refused, 422, 'unprocessable-entity');
    expect(fields(refused)).toEqual(['schema.$ref']);

    const page = await call('listEventTypes', {}, { query: 'limit=1' });
    expect(typeof bodyOf(page).next_cursor).toBe('string');
    expect(bodyOf(await call('listEventTypes', {}, { query: `cursor=${String(bodyOf(page).next_cursor)}` })).next_cursor).toBeNull();
    expect(fields(await call('listEventTypes', {}, { query: 'limit=0' }))).toEqual(['limit']);

    expect(bodyOf(await call('getEventType', { event_type_id: eventTypeId }))).toMatchObject({ name: 'invoice.paid', schema });
    expectProblem(await call('getEventType', { event_type_id: MISSING.event_type_id! }), 404, 'not-found');
    expectProblem(await call('getEventType', { event_type_id: eventTypeId }, { key: limitedKey }), 403, 'permission-denied', { resource_id: eventTypeId });

    const put = await call('replaceEventType', { event_type_id: eventTypeId }, { json: { ...bodyOf(created), description: 'Paid in full.' } });
    expect(bodyOf(put)).toMatchObject({ name: 'invoice.paid', description: 'Paid in full.', schema });
    expect(fields(await call('replaceEventType', { event_type_id: eventTypeId }, { json: { description: 7 } }))).toEqual(['description']);
    expect(fields(await call('replaceEventType', { event_type_id: eventTypeId }, { json: { name: 'invoice.renamed' } }))).toEqual(['name']);
    expectProblem(await call('replaceEventType', { event_type_id: MISSING.event_type_id! }, { json: {} }), 404, 'not-found');
    expectProblem(await call('replaceEventType', { event_type_id: eventTypeId }, { key: limitedKey, json: {} }), 403, 'permission-denied');

    const temp = await call('createEventType', {}, { json: { name: 'oas.temp' } });
    const tempId = String(bodyOf(temp).id);
    expectProblem(await call('deleteEventType', { event_type_id: tempId }, { key: limitedKey }), 403, 'permission-denied');
    expect((await call('deleteEventType', { event_type_id: tempId })).status).toBe(204);
    expectProblem(await call('deleteEventType', { event_type_id: tempId }), 404, 'not-found');
  });

  it('saved payloads', async () => {
    const created = await call('createSavedPayload', {}, { json: { name: 'order', payload: { order: 1, items: [1, 2] } } });
    expect(created.status).toBe(201);
    payloadId = String(bodyOf(created).id);
    await call('createSavedPayload', {}, { json: { name: 'second', payload: {} } });
    expect(fields(await call('createSavedPayload', {}, { json: { name: 'x', payload: [1] } }))).toEqual(['payload']);
    expectProblem(await call('createSavedPayload', {}, { json: { name: 'big', payload: { s: 'x'.repeat(300 * 1024) } } }), 413, 'payload-too-large');

    const page = await call('listSavedPayloads', {}, { query: 'limit=1' });
    expect(typeof bodyOf(page).next_cursor).toBe('string');
    expect(fields(await call('listSavedPayloads', {}, { query: 'limit=-1' }))).toEqual(['limit']);
    expect(bodyOf(await call('getSavedPayload', { payload_id: payloadId })).payload).toEqual({ order: 1, items: [1, 2] });
    expectProblem(await call('getSavedPayload', { payload_id: MISSING.payload_id! }), 404, 'not-found');
    expectProblem(await call('getSavedPayload', { payload_id: payloadId }, { key: limitedKey }), 403, 'permission-denied', { resource_id: payloadId });
  });

  it('API keys', async () => {
    const created = await call('createApiKey', {}, { json: { name: 'oas key', scopes: ['read:keys', 'write:keys'], expires_at: new Date(Date.now() + 86_400_000).toISOString(), resource_ids: null } });
    expect(created.status).toBe(201);
    const keyId = String(bodyOf(created).id);
    const plain = String(bodyOf(created).api_key);
    expect(fields(await call('createApiKey', {}, { json: { name: 'x', scopes: ['read:keys'], other: 1 } }))).toEqual(['other']);
    expect(fields(await call('createApiKey', {}, { json: { name: 'x', scopes: ['nope'] } }))).toEqual(['scopes[0]']);
    expectProblem(await call('createApiKey', {}, { key: plain, json: { name: 'wider', scopes: ['read:events'] } }), 403, 'insufficient-scope', { required_scope: 'read:events' });
    expectProblem(await call('createApiKey', {}, { key: limitedKey, json: { name: 'elsewhere', scopes: ['read:keys'], resource_ids: [`dst_${ULID.slice(0, -1)}e`] } }), 403, 'permission-denied');

    const page = await call('listApiKeys', {}, { query: 'limit=1' });
    expect(typeof bodyOf(page).next_cursor).toBe('string');
    expect(page.text).not.toContain(plain);
    expect(fields(await call('listApiKeys', {}, { query: 'limit=x' }))).toEqual(['limit']);

    expect(bodyOf(await call('getApiKey', { key_id: keyId }))).toMatchObject({ id: keyId, status: 'active' });
    expectProblem(await call('getApiKey', { key_id: MISSING.key_id! }), 404, 'not-found');
    expectProblem(await call('getApiKey', { key_id: keyId }, { key: limitedKey }), 403, 'permission-denied', { resource_id: keyId });

    expectProblem(await call('revokeApiKey', { key_id: keyId }, { key: limitedKey }), 403, 'permission-denied');
    expect(bodyOf(await call('revokeApiKey', { key_id: keyId }, { key: plain }))).toMatchObject({ id: keyId, status: 'revoked' });
    expectProblem(await call('getApiKey', { key_id: keyId }, { key: plain }), 401, 'unauthorized');
    expectProblem(await call('revokeApiKey', { key_id: MISSING.key_id! }), 404, 'not-found');
  });

  it('replays', async () => {
    // a range long past: nothing matches, the job completes as soon as a runner looks at it
    const range = { from: '2020-01-01T00:00:00Z', to: '2020-01-02T00:00:00Z' };
    const started = await call('createReplay', {}, { json: range });
    expect(started.status).toBe(202);
    replayId = String(bodyOf(started).id);
    expect(started.headers.location).toBe(`${base()}/replays/${replayId}`);
    expect(bodyOf(started)).toMatchObject({ status: 'running', matched: 0, filter: { from: '2020-01-01T00:00:00.000Z', to: '2020-01-02T00:00:00.000Z', destination_id: null, status: null, event_type: null } });
    expect(fields(await call('createReplay', {}, { json: { ...range, other: 1 } }))).toEqual(['other']);
    expect(fields(await call('createReplay', {}, { json: { from: 'soon', to: range.to } }))).toEqual(['from']);
    expect(fields(await call('createReplay', {}, { json: { from: range.to, to: range.from } }))).toEqual(['to']);
    expect((await call('createReplay', {}, { json: { ...range, destination_id: MISSING.destination_id } })).status).toBe(422);
    expectProblem(await call('createReplay', {}, { key: limitedKey, json: { ...range, destination_id: destA } }), 403, 'permission-denied', { resource_id: destA });

    // cancelled while running (a runner picks a new job up within a second: a lost race is tried again)
    let cancelled: Answer | undefined;
    for (let i = 0; i < 3 && cancelled?.status !== 200; i++) {
      const job = i === 0 ? replayId : String(bodyOf(await call('createReplay', {}, { json: range })).id);
      cancelled = await call('cancelReplay', { replay_id: job });
      if (cancelled.status === 200) replayId = job;
    }
    expect(bodyOf(cancelled!)).toMatchObject({ id: replayId, status: 'cancelled', finished_at: expect.any(String) });
    expectProblem(await call('cancelReplay', { replay_id: replayId }), 409, 'conflict');
    expectProblem(await call('cancelReplay', { replay_id: MISSING.replay_id! }), 404, 'not-found');
    expectProblem(await call('cancelReplay', { replay_id: replayId }, { key: limitedKey }), 403, 'permission-denied');

    expect(bodyOf(await call('getReplay', { replay_id: replayId }))).toMatchObject({ id: replayId, status: 'cancelled' });
    expectProblem(await call('getReplay', { replay_id: MISSING.replay_id! }), 404, 'not-found');
    expectProblem(await call('getReplay', { replay_id: replayId }, { key: limitedKey }), 403, 'permission-denied');
    const page = await call('listReplays', {}, { query: 'limit=1' });
    expect((bodyOf(page).replays as Json[]).map((j) => j.id)).toHaveLength(1);
    expect(fields(await call('listReplays', {}, { query: 'limit=0' }))).toEqual(['limit']);
    expect(bodyOf(await call('listReplays', {}, { key: limitedKey })).replays).toEqual([]);
  });

  let checkpointSize = 0;
  it('hooks, deliveries, retries and logs', async () => {
    // the first attempt to B fails, which is final with a one-attempt schedule; later ones succeed
    flakyReceiver.respondBy((_req, i) => ({ status: i === 0 ? 500 : 200 }));
    const accepted = await call('receiveWebhook', { ingester_id: ingNone }, { body: JSON.stringify({ n: 1 }), headers: { 'content-type': 'application/json', 'x-correlation-id': 'oas-corr-1' } });
    expect(accepted.status).toBe(202);
    expect(bodyOf(accepted)).toMatchObject({ correlation_id: 'oas-corr-1', status: 'received' });
    expect(accepted.headers['x-correlation-id']).toBe('oas-corr-1');
    deadEventId = String(bodyOf(accepted).event_id);
    const failed = await eventually('the failed attempt in the deliveries list', async () => {
      const page = await call('listDeliveries', {}, { query: 'status=failed' });
      const items = bodyOf(page).deliveries as Json[];
      return items.find((d) => d.event_id === deadEventId);
    });
    deadDeliveryId = String(failed.id);
    expect(failed).toMatchObject({ destination_id: destB, status: 'failed', response_code: 500, attempt_number: 1, error_message: expect.any(String) });

    const second = await call('receiveWebhook', { ingester_id: ingNone }, { body: 'plain text', headers: { 'content-type': 'text/plain' } });
    const deliveredEvent = String(bodyOf(second).event_id);
    await eventually('the delivered attempt', async () => {
      const items = bodyOf(await call('listDeliveries', {}, { query: 'status=delivered' })).deliveries as Json[];
      return items.find((d) => d.event_id === deliveredEvent);
    });
    const page1 = await call('listDeliveries', {}, { query: 'limit=1' });
    expect(typeof bodyOf(page1).next_cursor).toBe('string');
    const page2 = await call('listDeliveries', {}, { query: `limit=1&cursor=${String(bodyOf(page1).next_cursor)}` });
    expect((bodyOf(page2).deliveries as unknown[]).length).toBe(1);
    expectProblem(await call('listDeliveries', {}, { query: 'status=lost' }), 422, 'unprocessable-entity');
    expect(fields(await call('listDeliveries', {}, { query: `status=failed&cursor=${String(bodyOf(page1).next_cursor)}` }))).toEqual(['cursor']);
    expect(fields(await call('listDeliveries', {}, { query: 'limit=abc' }))).toEqual(['limit']);
    expect(bodyOf(await call('listDeliveries', {}, { key: limitedKey })).deliveries).toEqual([]);

    const one = await call('getDelivery', { delivery_id: deadDeliveryId });
    expect(bodyOf(one)).toMatchObject({ id: deadDeliveryId, event_id: deadEventId, status: 'failed', attempts: [{ attempt_number: 1, status: 'failed' }] });
    expectProblem(await call('getDelivery', { delivery_id: MISSING.delivery_id! }), 404, 'not-found');
    expectProblem(await call('getDelivery', { delivery_id: deadDeliveryId }, { key: limitedKey }), 403, 'permission-denied', { resource_id: destB });

    // retry
    expectProblem(await call('retryEvent', { event_id: deadEventId }, { key: limitedKey }), 403, 'permission-denied', { resource_id: destB });
    const retried = await call('retryEvent', { event_id: deadEventId });
    expect(retried.status).toBe(202);
    expect(bodyOf(retried)).toMatchObject({ status: 'queued', delivery_ids: [bodyOf(retried).delivery_id] });
    expectProblem(await call('retryEvent', { event_id: deadEventId }), 409, 'conflict');
    expectProblem(await call('retryEvent', { event_id: MISSING.event_id! }), 404, 'not-found');
    await flakyReceiver.waitForRequests(3);

    // the Hook URL's own errors
    await call('receiveWebhook', { ingester_id: ingGeneric }, { body: '{"unsigned":1}', headers: { 'content-type': 'application/json' } });
    await call('receiveWebhook', { ingester_id: ingGeneric }, { body: '{"unsigned":2}', headers: { 'content-type': 'application/json' } });
    expectProblem(await call('receiveWebhook', { ingester_id: ingNone }, { body: Buffer.alloc(70_000, 'a') }), 413, 'payload-too-large');
    expectProblem(await call('receiveWebhook', { ingester_id: ingNone }, { body: 'x', headers: { 'content-encoding': 'x-unknown' } }), 415, 'unsupported-media-type');
    expectProblem(await call('receiveWebhook', { ingester_id: ingNone }, { body: '{}', headers: { 'content-type': 'application/json', 'x-hookline-hops': '99' } }), 422, 'unprocessable-entity');
    expectProblem(await call('receiveWebhook', { ingester_id: ingNone }, { body: 'not gzip at all', headers: { 'content-encoding': 'gzip' } }), 400, 'validation-error');

    // logs: the two unsigned webhooks fail verification, a warning each
    const warnings = await eventually('verification warnings in the log', async () => {
      const logs = bodyOf(await call('listLogs', {}, { query: 'level=warn' })).logs as Json[];
      const mine = logs.filter((l) => l.ingester_id === ingGeneric);
      return mine.length >= 2 ? logs : undefined;
    });
    expect(warnings.every((l) => l.level === 'warn' || l.level === 'error')).toBe(true);
    const first = await call('listLogs', {}, { query: 'limit=1' });
    expect(typeof bodyOf(first).next_cursor).toBe('string');
    await call('listLogs', {}, { query: `limit=1&cursor=${String(bodyOf(first).next_cursor)}` });
    expect(fields(await call('listLogs', {}, { query: `level=error&cursor=${String(bodyOf(first).next_cursor)}` }))).toEqual(['cursor']);
    expectProblem(await call('listLogs', {}, { query: 'level=loud' }), 422, 'unprocessable-entity');
    expect(fields(await call('listLogs', {}, { query: 'limit=1000' }))).toEqual(['limit']);

    // evidence: the dead delivery's attempt is sealed into the log
    const evidence = await eventually('confirmed evidence', async () => {
      const e = await call('getDeliveryEvidence', { delivery_id: deadDeliveryId }, { query: 'attempt=1' });
      return bodyOf(e).status === 'confirmed' ? e : undefined;
    });
    expect(bodyOf(evidence)).toMatchObject({ delivery_id: deadDeliveryId, attempt_number: 1 });
    expectProblem(await call('getDeliveryEvidence', { delivery_id: MISSING.delivery_id! }), 404, 'not-found');
    expectProblem(await call('getDeliveryEvidence', { delivery_id: deadDeliveryId }, { key: limitedKey }), 403, 'permission-denied', { resource_id: destB });
    expect(fields(await call('getDeliveryEvidence', { delivery_id: deadDeliveryId }, { query: 'attempt=first' }))).toEqual(['attempt']);
    const logInfo = await call('getEvidenceLog');
    const latest = bodyOf(logInfo).latest_checkpoint as Json;
    checkpointSize = Number(latest.tree_size);
    const checkpoints = await call('listCheckpoints', {}, { query: 'limit=1' });
    expect((bodyOf(checkpoints).checkpoints as Json[])[0]).toEqual(latest);
    const consistent = await call('getConsistencyProof', {}, { query: `from=${String(latest.tree_size)}` });
    expect(bodyOf(consistent).consistency_proof).toEqual([]);
    expectProblem(await call('getConsistencyProof', {}, { query: `from=${Number(latest.tree_size) + 1_000_000}` }), 404, 'not-found');
    expect(fields(await call('getConsistencyProof', {}, { query: 'from=1&to=x' }))).toEqual(['to']);
  }, 120_000);

  it('search', async () => {
    // the dead attempt of the test above: B answered 500 with the receiver's body `ok`
    const all = `destination_id=${destB}&status=failed&response_code=5xx&from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00%2B01:00&q=OK`;
    const found = bodyOf(await call('listDeliveries', {}, { query: all })).deliveries as Json[];
    expect(found.map((d) => d.id)).toContain(deadDeliveryId);
    expect(found.every((d) => d.destination_id === destB && d.status === 'failed' && d.event_type === null)).toBe(true);
    expect(bodyOf(await call('listDeliveries', {}, { query: 'event_type=no.such.type' })).deliveries).toEqual([]);
    const page1 = await call('listDeliveries', {}, { query: 'response_code=2xx&q=ok&limit=1' });
    const cursor = String(bodyOf(page1).next_cursor);
    expect((bodyOf(await call('listDeliveries', {}, { query: `response_code=2xx&q=ok&limit=1&cursor=${cursor}` })).deliveries as Json[]).length).toBe(1);
    expect(fields(await call('listDeliveries', {}, { query: `response_code=200&q=ok&limit=1&cursor=${cursor}` }))).toEqual(['cursor']);
    expect(fields(await call('listDeliveries', {}, { query: 'response_code=9xx&from=soon' }))).toEqual(['from', 'response_code']);
    expect(fields(await call('listDeliveries', {}, { query: `q=${'x'.repeat(201)}` }))).toEqual(['q']);
    const one = bodyOf(await call('getDelivery', { delivery_id: deadDeliveryId }));
    expect((one.attempts as Json[])[0]).toMatchObject({ response_code: 500, response_body: 'ok' });

    // what the dashboard reads besides: the event as received, the stats, the key's identity
    expect(bodyOf(await call('getEvent', { event_id: deadEventId }))).toMatchObject({ id: deadEventId, body: JSON.stringify({ n: 1 }), body_verified: true });
    expectProblem(await call('getEvent', { event_id: MISSING.event_id! }), 404, 'not-found');
    expect(bodyOf(await call('getTenantStats', {}, { query: 'window=15m' })).totals).toMatchObject({ failed: expect.any(Number) });
    expect(fields(await call('getTenantStats', {}, { query: 'window=2d' }))).toEqual(['window']);
    expect(bodyOf(await call('getDeliveryAnalytics', {}, { query: 'group_by=destination&bucket=minute' })).totals).toMatchObject({ failed: expect.any(Number) });
    expect(fields(await call('getDeliveryAnalytics', {}, { query: 'bucket=week&group_by=status' }))).toEqual(['bucket', 'group_by']);
    expect(bodyOf(await call('getIdentity'))).toMatchObject({ tenant_id: svc.tenantId });
  });

  it('exports', async () => {
    for (const [operationId, query] of [['exportDeliveries', `destination_id=${destB}&status=failed`], ['exportEvents', 'event_type=no.such.type'], ['exportLogs', 'level=info']] as const) {
      for (const format of ['ndjson', 'csv', 'parquet']) {
        const a = await call(operationId, {}, { query: `${query}&format=${format}&limit=1` });
        expect({ operationId, format, status: a.status }).toEqual({ operationId, format, status: 200 });
      }
      expect((await call(operationId, {}, { headers: { accept: 'text/csv' } })).headers['content-type']).toMatch(/^text\/csv/);
      expect(fields(await call(operationId, {}, { query: 'format=xml&limit=0' }))).toEqual(['format']);
    }
    const page = await call('exportDeliveries', {}, { query: 'limit=1' });
    expect(page.headers['hookline-next-cursor']).toBeDefined();
    expect(fields(await call('exportDeliveries', {}, { query: `status=failed&cursor=${String(page.headers['hookline-next-cursor'])}` }))).toEqual(['cursor']);
    expectProblem(await call('exportDeliveries', {}, { query: 'status=lost' }), 422, 'unprocessable-entity');
    expectProblem(await call('exportLogs', {}, { query: 'level=loud' }), 422, 'unprocessable-entity');
  });

  it('dead letters', async () => {
    // an ingester whose stored filters no longer compile, as an older version could store them: the filter stage sets its events aside
    const ingester = bodyOf(await call('createIngester', {}, { json: { name: 'oas dead letters', provider: 'none', config: {}, filters: [{ type: 'header', name: 'x-tag', op: 'matches', pattern: '^t' }] } }));
    const ingesterId = String(ingester.id);
    const stored = svc.service.store.get('ingester', svc.tenantId, ingesterId)!;
    await svc.service.store.put({ ...stored, filters: [{ type: 'header', name: 'x-tag', op: 'matches', pattern: '^t(?=a)' }] });
    const events: string[] = [];
    for (const n of [1, 2]) events.push(String(bodyOf(await call('receiveWebhook', { ingester_id: ingesterId }, { body: JSON.stringify({ dead: n }), headers: { 'content-type': 'application/json', 'x-tag': 'ta' } })).event_id));
    const letters = await eventually('both dead letters listed', async () => {
      const listed = (bodyOf(await call('listDeadLetters', {}, { query: 'stage=filter' })).dead_letters as Json[]).filter((l) => events.includes(String(l.event_id)));
      return listed.length === 2 ? listed : undefined;
    });
    expect(letters.map((l) => l.event_id)).toEqual([...events].reverse());
    deadLetterId = String(letters[0]!.id);
    const page = await call('listDeadLetters', {}, { query: 'limit=1&stage=filter' });
    expect((bodyOf(page).dead_letters as Json[]).map((l) => l.id)).toEqual([deadLetterId]);
    const cursor = encodeURIComponent(String(bodyOf(page).next_cursor));
    expect((bodyOf(await call('listDeadLetters', {}, { query: `limit=1&stage=filter&cursor=${cursor}` })).dead_letters as Json[]).map((l) => l.id)).toEqual([letters[1]!.id]);
    expect(fields(await call('listDeadLetters', {}, { query: `limit=1&stage=route&cursor=${cursor}` }))).toEqual(['cursor']);
    expect(fields(await call('listDeadLetters', {}, { query: 'from=soon&to=2000-01-01T00:00:00Z' }))).toEqual(['from']);
    expectProblem(await call('listDeadLetters', {}, { query: 'stage=sink' }), 422, 'unprocessable-entity');
    expect(bodyOf(await call('listDeadLetters', {}, { query: 'from=2100-01-01T00:00:00Z' })).dead_letters).toEqual([]);
    expect(bodyOf(await call('listDeadLetters', {}, { key: limitedKey })).dead_letters).toEqual([]);

    expect(bodyOf(await call('getDeadLetter', { dead_letter_id: deadLetterId }))).toMatchObject({ id: deadLetterId, stage: 'filter', resource_id: ingesterId, replayed_at: null });
    expectProblem(await call('getDeadLetter', { dead_letter_id: MISSING.dead_letter_id! }), 404, 'not-found');
    expectProblem(await call('getDeadLetter', { dead_letter_id: deadLetterId }, { key: limitedKey }), 403, 'permission-denied', { resource_id: ingesterId });

    expectProblem(await call('replayDeadLetter', { dead_letter_id: deadLetterId }, { key: limitedKey }), 403, 'permission-denied', { resource_id: ingesterId });
    expectProblem(await call('replayDeadLetter', { dead_letter_id: MISSING.dead_letter_id! }), 404, 'not-found');
    await call('updateIngester', { ingester_id: ingesterId }, { json: { name: 'oas dead letters', filters: [{ type: 'header', name: 'x-tag', op: 'matches', pattern: '^t' }] } });
    const replayed = await call('replayDeadLetter', { dead_letter_id: deadLetterId });
    expect(replayed.status).toBe(202);
    expect(bodyOf(replayed)).toMatchObject({ status: 'replayed', dead_letter_id: deadLetterId, event_id: events[1] });
    expectProblem(await call('replayDeadLetter', { dead_letter_id: deadLetterId }), 409, 'conflict');
  });

  it('the evidence surface under /v1/mcp answers as documented', async () => {
    const mcpOps = [...conf.operations.values()].filter((o) => (o.path.startsWith('/v1/mcp') && o.operationId !== 'getHealth') || o.path === '/v1/me');
    const ids: Record<string, Record<string, string>> = {
      getIdentity: {},
      mcp: {},
      getMcpEndpoints: {},
      getMcpEvidence: { id: deadDeliveryId },
      getMcpDeliveryStatus: { delivery_id: deadDeliveryId },
      getMcpPlanes: {},
      getMcpLogs: { id: ingGeneric },
    };
    expect(mcpOps.map((o) => o.operationId).sort()).toEqual(Object.keys(ids).sort());
    const rpc = (id: number, method: string) => ({ json: { jsonrpc: '2.0', id, method, params: {} }, headers: { accept: 'application/json, text/event-stream' } });
    const big = JSON.stringify({ s: 'x'.repeat(1_100_000) });
    for (const o of mcpOps) {
      const id = o.operationId;
      const params = ids[id]!;
      const post = o.method === 'post' ? rpc(1, 'tools/list') : {};
      expectProblem(await call(id, params, { key: null, ...post }), 401, 'unauthorized');
      expect((await call(id, params, { key: null, ...post })).headers['www-authenticate']).toBe('Bearer');
      expectProblem(await call(id, params, { key: expiredKey, ...post }), 401, 'unauthorized');
      if (o.op['x-required-scope']) expectProblem(await call(id, params, { key: noScopeKey }), 403, 'insufficient-scope', { required_scope: o.op['x-required-scope'] });
      expect(fields(await call(id, params, { body: '{"broken', headers: { 'content-type': 'application/json' } }))).toEqual(['body']);
      expectProblem(await call(id, params, { body: big, headers: { 'content-type': 'application/json' } }), 413, 'payload-too-large');
      expectProblem(await call(id, params, { body: 'hello', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported-media-type');
      expectProblem(await call(id, params, { target: unready.url, ...post }), 503, 'service-unavailable');
      const first = await call(id, params, { target: locked.url, ...post });
      expect(first.status).toBe(200);
      expectProblem(await call(id, params, { target: locked.url, ...post }), 429, 'rate-limit-exceeded');
    }

    // the MCP endpoint: JSON-RPC answers, a notification accepted, tool groups and scopes refused before the transport
    const init = await call('mcp', {}, { json: { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'oas', version: '1' } } }, headers: { accept: 'application/json, text/event-stream' } });
    expect(bodyOf(init).result).toMatchObject({ serverInfo: { name: 'hookline' } });
    expect((await call('mcp', {}, { json: { jsonrpc: '2.0', method: 'notifications/initialized' }, headers: { accept: 'application/json, text/event-stream' } })).status).toBe(202);
    const callTool = (name: string) => ({ json: { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name, arguments: {} } }, headers: { accept: 'application/json, text/event-stream' } });
    expectProblem(await call('mcp', {}, { target: locked.url, key: await svc.newKey([...SCOPES]), ...callTool('create_destination') }), 403, 'write-tool-disabled', { tool_group: 'write:destinations' });
    expectProblem(await call('mcp', {}, { key: noScopeKey, ...callTool('get_planes') }), 403, 'insufficient-scope', { required_scope: 'read:operations' });
    // what the transport refuses is a problem too: an Accept without both media types, a body that is not JSON-RPC
    expectProblem(await call('mcp', {}, { json: { jsonrpc: '2.0', id: 3, method: 'tools/list' }, headers: { accept: 'application/json' } }), 406, 'not-acceptable');
    expectProblem(await call('mcp', {}, { json: { id: 3, method: 'tools/list' }, headers: { accept: 'application/json, text/event-stream' } }), 400, 'validation-error');

    expect(bodyOf(await call('getMcpEndpoints')).mcp).toMatchObject({ path: '/v1/mcp', transport: 'streamable-http' });
    expect(bodyOf(await call('getMcpPlanes')).planes).toHaveLength(6);
    expect(bodyOf(await call('getMcpEvidence', { id: deadDeliveryId })).kind).toBe('delivery');
    expect(bodyOf(await call('getMcpEvidence', { id: destB })).kind).toBe('destination');
    expect(bodyOf(await call('getMcpEvidence', { id: ingNone })).kind).toBe('ingester');
    expect(bodyOf(await call('getMcpEvidence', { id: deadEventId })).kind).toBe('event');
    expect(fields(await call('getMcpEvidence', { id: flowId }))).toEqual(['id']);
    expect(fields(await call('getMcpEvidence', { id: deadDeliveryId }, { query: 'attempt=x' }))).toEqual(['attempt']);
    expectProblem(await call('getMcpEvidence', { id: MISSING.delivery_id! }), 404, 'not-found');
    expectProblem(await call('getMcpEvidence', { id: MISSING.destination_id! }), 404, 'not-found');
    expectProblem(await call('getMcpEvidence', { id: destB }, { key: limitedKey }), 403, 'permission-denied', { resource_id: destB });
    expect(bodyOf(await call('getMcpDeliveryStatus', { delivery_id: deadDeliveryId }))).toMatchObject({ delivery_id: deadDeliveryId, outcome: 'failed', final: true });
    expectProblem(await call('getMcpDeliveryStatus', { delivery_id: MISSING.delivery_id! }), 404, 'not-found');
    expectProblem(await call('getMcpDeliveryStatus', { delivery_id: deadDeliveryId }, { key: limitedKey }), 403, 'permission-denied', { resource_id: destB });
    const logs = await call('getMcpLogs', { id: ingGeneric }, { query: 'level=warn&limit=1' });
    expect((bodyOf(logs).logs as Json[])[0]).toMatchObject({ ingester_id: ingGeneric });
    expectProblem(await call('getMcpLogs', { id: ingGeneric }, { query: 'level=loud' }), 422, 'unprocessable-entity');
    expect(fields(await call('getMcpLogs', { id: ingGeneric }, { query: 'limit=0' }))).toEqual(['limit']);
  }, 120_000);

  it('answers the errors every tenant operation shares as documented', async () => {
    const big = JSON.stringify({ s: 'x'.repeat(1_100_000) });
    for (const o of tenantOperations()) {
      const id = o.operationId;
      const params = missingParams(o);
      expectProblem(await call(id, params, { key: null }), 401, 'unauthorized');
      expectProblem(await call(id, params, { key: 'hlk_not-a-key' }), 401, 'unauthorized');
      expectProblem(await call(id, params, { key: expiredKey }), 401, 'unauthorized');
      expectProblem(await call(id, { ...params, tenant_id: 'someone-else' }), 404, 'not-found');
      expectProblem(await call(id, params, { key: noScopeKey }), 403, 'insufficient-scope', { required_scope: o.op['x-required-scope'] });
      expect(fields(await call(id, params, { body: '{"broken', headers: { 'content-type': 'application/json' } }))).toEqual(['body']);
      expectProblem(await call(id, params, { body: big, headers: { 'content-type': 'application/json' } }), 413, 'payload-too-large');
      expectProblem(await call(id, params, { body: 'hello', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported-media-type');
      if (isWrite(o)) {
        expect(fields(await call(id, params, { json: {}, headers: { 'idempotency-key': 'k'.repeat(256) } }))).toEqual(['Idempotency-Key']);
        const key = `oas-${id}-${svc.tenantId}`;
        const firstAnswer = await call(id, params, { json: {}, headers: { 'idempotency-key': key } });
        // every body member of a portal session is optional: {} makes one
        if (id !== 'createPortalSession') expect(firstAnswer.status).toBeGreaterThanOrEqual(400);
        const replayed = await call(id, params, { json: {}, headers: { 'idempotency-key': key } });
        expect({ status: replayed.status, replayed: replayed.headers['idempotent-replayed'], text: replayed.text }).toEqual({ status: firstAnswer.status, replayed: 'true', text: firstAnswer.text });
        expectProblem(await call(id, params, { json: { other: true }, headers: { 'idempotency-key': key } }), 409, 'idempotency-conflict', { idempotency_key: key });
      }
    }
    // a replayed success creates nothing new
    const once = await call('createSavedPayload', {}, { json: { name: 'idem', payload: { a: 1 } }, headers: { 'idempotency-key': 'oas-replay' } });
    const twice = await call('createSavedPayload', {}, { json: { payload: { a: 1 }, name: 'idem' }, headers: { 'idempotency-key': 'oas-replay' } });
    expect(twice.status).toBe(201);
    expect(twice.headers['idempotent-replayed']).toBe('true');
    expect(bodyOf(twice).id).toBe(bodyOf(once).id);
    expect(twice.headers.location).toBe(once.headers.location);
    expect(once.headers['ratelimit-limit']).toBe('10000');
  }, 120_000);

  it('tenants, portal sessions and test events', async () => {
    const operator = await svc.operatorKey();
    const id = `oas-${svc.tenantId}`.slice(0, 63);
    // what every operators' route shares
    for (const o of operatorOperations()) {
      // a DELETE that passed every check would erase the tenant: these name one that does not exist
      const params: Record<string, string> = o.path.includes('{tenant_id}') ? { tenant_id: o.operationId === 'deleteTenant' ? 'nobody-here' : svc.tenantId } : {};
      expectProblem(await call(o.operationId, params, { key: null }), 401, 'unauthorized');
      expectProblem(await call(o.operationId, params, { key: svc.apiKey }), 403, 'permission-denied');
      expect(fields(await call(o.operationId, params, { key: operator, body: '{"broken', headers: { 'content-type': 'application/json' } }))).toEqual(['body']);
      expectProblem(await call(o.operationId, params, { key: operator, body: JSON.stringify({ s: 'x'.repeat(1_100_000) }), headers: { 'content-type': 'application/json' } }), 413, 'payload-too-large');
      expectProblem(await call(o.operationId, params, { key: operator, body: 'hello', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported-media-type');
      expectProblem(await call(o.operationId, params, { target: unready.url, key: operator }), 503, 'service-unavailable');
      // one request per route and key on the locked instance
      await call(o.operationId, params, { target: locked.url, key: operator, ...(isWrite(o) ? { json: {} } : {}) });
      expectProblem(await call(o.operationId, params, { target: locked.url, key: operator, ...(isWrite(o) ? { json: {} } : {}) }), 429, 'rate-limit-exceeded');
    }
    const made = await call('createTenant', {}, { key: operator, json: { id, name: 'OAS tenant', metadata: { plan: 'test' }, limits: { ingest_per_hook: { limit: 10, window_seconds: 1 } }, portal: { accent_color: '#123456' } } });
    expect(made.status).toBe(201);
    expectProblem(await call('createTenant', {}, { key: operator, json: { id, name: 'again' } }), 409, 'conflict');
    expect(fields(await call('createTenant', {}, { key: operator, json: { id: 'Bad Id', name: 'x' } }))).toEqual(['id']);
    expect((bodyOf(await call('listTenants', {}, { key: operator, query: 'limit=200' })).tenants as Json[]).map((t) => t.id)).toContain(id);
    expect(fields(await call('listTenants', {}, { key: operator, query: 'limit=x' }))).toEqual(['limit']);
    expect(bodyOf(await call('getTenant', { tenant_id: id }, { key: operator }))).toEqual(bodyOf(made));
    expectProblem(await call('getTenant', { tenant_id: 'nobody-here' }, { key: operator }), 404, 'not-found');
    const tenantKey = await svc.newKey(['write:ingesters'], { tenantId: id });
    const ingester = bodyOf(await call('createIngester', { tenant_id: id }, { key: tenantKey, json: { name: 'suspended hook', provider: 'none', config: {} } }));
    expect(bodyOf(await call('updateTenant', { tenant_id: id }, { key: operator, json: { ...bodyOf(made), state: 'suspended' } }))).toMatchObject({ state: 'suspended' });
    expectProblem(await call('receiveWebhook', { ingester_id: String(ingester.id) }, { body: '{}', headers: { 'content-type': 'application/json' } }), 403, 'tenant-suspended');
    expectProblem(await call('updateTenant', { tenant_id: 'nobody-here' }, { key: operator, json: {} }), 404, 'not-found');
    const idem = { key: operator, json: { name: 'renamed' }, headers: { 'idempotency-key': `oas-tenant-${id}` } };
    expect((await call('updateTenant', { tenant_id: id }, idem)).status).toBe(200);
    expectProblem(await call('updateTenant', { tenant_id: id }, { ...idem, json: { name: 'other' } }), 409, 'idempotency-conflict');
    expectProblem(await call('deleteTenant', { tenant_id: 'nobody-here' }, { key: operator }), 404, 'not-found');
    expectProblem(await call('deleteTenant', { tenant_id: OPERATOR_TENANT }, { key: operator }), 409, 'conflict');
    // erased: gone, and its id is not given again
    const goneId = `gone-${svc.tenantId}`.slice(0, 63);
    expect((await call('createTenant', {}, { key: operator, json: { id: goneId, name: 'to erase' } })).status).toBe(201);
    const erased = await call('deleteTenant', { tenant_id: goneId }, { key: operator });
    expect(erased.status).toBe(204);
    expectProblem(await call('getTenant', { tenant_id: goneId }, { key: operator }), 404, 'not-found');
    expectProblem(await call('deleteTenant', { tenant_id: goneId }, { key: operator }), 404, 'not-found');
    expectProblem(await call('createTenant', {}, { key: operator, json: { id: goneId, name: 'again' } }), 409, 'conflict');

    // portal sessions: the tenant's key, or an operator's on its behalf
    const session = await call('createPortalSession', {}, { json: { scopes: ['read:deliveries'] } });
    expect(session.status).toBe(201);
    const sessionId = String(bodyOf(session).id);
    const onBehalf = await call('createPortalSession', { tenant_id: id }, { key: operator });
    expect(onBehalf.status).toBe(201);
    expect(fields(await call('createPortalSession', {}, { json: { session_seconds: 1 } }))).toEqual(['session_seconds']);
    expect((bodyOf(await call('listPortalSessions')).portal_sessions as Json[]).map((p) => p.id)).toContain(sessionId);
    expect(bodyOf(await call('getPortalSession', { portal_session_id: sessionId }))).toMatchObject({ id: sessionId, opened_at: null });
    expectProblem(await call('getPortalSession', { portal_session_id: MISSING.portal_session_id! }), 404, 'not-found');
    const code = String(bodyOf(session).url).split('#portal=')[1]!;
    const opened = await call('openPortalSession', {}, { json: { code } });
    expect(opened.status).toBe(200);
    expectProblem(await call('openPortalSession', {}, { json: { code } }), 401, 'unauthorized');
    expect(fields(await call('openPortalSession', {}, { json: {} }))).toEqual(['code']);
    expectProblem(await call('openPortalSession', {}, { body: 'x', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported-media-type');
    expectProblem(await call('openPortalSession', {}, { target: unready.url, json: { code } }), 503, 'service-unavailable');
    const cookie = /hookline_portal=([^;]+)/.exec(String(opened.headers['set-cookie']))![1]!;
    expect((await call('closePortalSession', {}, { headers: { cookie: `hookline_portal=${cookie}` } })).status).toBe(204);
    expectProblem(await call('closePortalSession', {}, { target: unready.url }), 503, 'service-unavailable');
    // signing out ended that session; the operator revokes the other
    expectProblem(await call('revokePortalSession', { portal_session_id: sessionId }), 404, 'not-found');
    expect((await call('revokePortalSession', { tenant_id: id, portal_session_id: String(bodyOf(onBehalf).id) }, { key: operator })).status).toBe(204);

    // a test event to one destination
    const sent = await call('sendTestEvent', { destination_id: destA }, { json: { payload: { test: true } } });
    expect(sent.status).toBe(202);
    expect(bodyOf(sent)).toMatchObject({ destination_id: destA, status: 'queued', event_type: null });
    expect(fields(await call('sendTestEvent', { destination_id: destA }, { json: { payload: {}, saved_payload_id: payloadId } }))).toEqual(['saved_payload_id']);
    expectProblem(await call('sendTestEvent', { destination_id: MISSING.destination_id! }, { json: {} }), 404, 'not-found');
    expectProblem(await call('sendTestEvent', { destination_id: destA }, { json: { payload: { pad: 'x'.repeat(300_000) } } }), 413, 'payload-too-large');
  });

  it('answers 503 while the service is starting', async () => {
    for (const o of tenantOperations()) {
      expectProblem(await call(o.operationId, missingParams(o), { target: unready.url, ...(isWrite(o) ? { json: {} } : {}) }), 503, 'service-unavailable');
    }
    const health = await call('getHealth', {}, { target: unready.url });
    expect(health.status).toBe(503);
    expect(bodyOf(health)).toMatchObject({ status: 'unavailable', failing: expect.arrayContaining(['kafka', 'pipeline']) });
    const ready = await call('getReadiness', {}, { target: unready.url });
    expect(ready.status).toBe(503);
    expect(bodyOf(ready)).toMatchObject({ status: 'unavailable', failing: expect.arrayContaining(['kafka', 'pipeline']) });
    // alive while starting: liveness asks no dependency
    expect((await call('getLiveness', {}, { target: unready.url })).status).toBe(200);
    // the Hook URL is not mounted yet: 503, so that senders retry instead of taking it for a missing ingester
    expectProblem(await call('receiveWebhook', { ingester_id: ingNone }, { target: unready.url, body: '{}' }), 503, 'service-unavailable');
  });

  it('answers 403 write-tool-disabled for disabled write groups and 429 over the rate limit', async () => {
    for (const o of tenantOperations()) {
      const params = isWrite(o) ? missingParams(o) : { ...missingParams(o), portal_session_id: lockedSessionId, destination_id: destA, ingester_id: ingGeneric, flow_id: flowId, delivery_id: deadDeliveryId, payload_id: payloadId, key_id: keyIdOf(svc.apiKey)!, replay_id: replayId, event_type_id: eventTypeId, event_id: deadEventId, dead_letter_id: deadLetterId };
      // the consistency route needs the size of a checkpoint that exists
      const query = o.operationId === 'getConsistencyProof' ? { query: `from=${checkpointSize}` } : {};
      const options = { target: locked.url, ...query, ...(isWrite(o) ? { json: {} } : {}) };
      const first = await call(o.operationId, params, options);
      if (isWrite(o)) expectProblem(first, 403, 'write-tool-disabled', { tool_group: o.op['x-required-scope'] });
      else expect(first.status).toBe(200);
      const second = await call(o.operationId, params, options);
      expectProblem(second, 429, 'rate-limit-exceeded');
      expect(second.headers['retry-after']).toBe(String(bodyOf(second).retry_after_seconds));
      expect(second.headers['ratelimit-remaining']).toBe('0');
    }
  });

  it('answers 429 at a Hook URL over its rate limit, on the fast path and the router', async () => {
    // the Hook URLs over the same state, limited to one webhook per hour each
    const { producer, codec } = svc.service.apiServices!.replay;
    const limiter = new IngestLimiter({ source: new RedisTokenLeases(lockedRedis), prefix: `${svc.config.topicPrefix}hooks-limited.`, perHook: { limit: 1, windowSeconds: 3600 }, perTenant: null, timeoutMs: 10_000, log });
    const deps: IngestDeps = { topics: svc.service.topics, config: svc.service.store, codec, producer: new BatchingProducer(producer), maxBodyBytes: 65536, maxHops: 3, log, limiter };
    const router = ingestRouter(deps);
    const app = createApp({ errorBase: () => errorBase, log, probe: healthProbe({}), build: buildInfo(), services: () => lockedServices, extraRouters: () => router });
    const server = http.createServer(hookFastPath(() => deps, app, (err, _req, res, requestId) => writeProblem(res, errorBase, err, requestId, log)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const target = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const json = { body: '{}', headers: { 'content-type': 'application/json' } };
      expect((await call('receiveWebhook', { ingester_id: ingNone }, { target, ...json })).status).toBe(202);
      const fast = await call('receiveWebhook', { ingester_id: ingNone }, { target, ...json });
      // gzip is the router's
      const routed = await call('receiveWebhook', { ingester_id: ingNone }, { target, body: gzipSync('{}'), headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
      for (const answer of [fast, routed]) {
        expectProblem(answer, 429, 'rate-limit-exceeded');
        expect(answer.headers['retry-after']).toBe(String(bodyOf(answer).retry_after_seconds));
        expect(answer.headers['ratelimit-policy']).toBe('1;w=3600');
        expect(answer.headers['ratelimit-remaining']).toBe('0');
      }
    } finally {
      limiter.stop();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('answers request headers over the server\'s limit with 431 on every operation, before any route', async () => {
    const oversized = { 'x-padding': 'x'.repeat(http.maxHeaderSize) };
    for (const o of conf.operations.values()) {
      // the parser refuses before routing: the ids need not exist
      const params = Object.fromEntries([...o.path.matchAll(/\{(\w+)\}/g)].map((m) => [m[1]!, MISSING[m[1]!] ?? 'x']));
      expectProblem(await call(o.operationId, params, { headers: oversized }), 431, 'request-header-fields-too-large');
    }
  });

  it('refuses answers that drift from the document', () => {
    const destination = { id: `dst_${ULID}`, name: 'n', type: 'webhook', url: 'http://127.0.0.1:9/x', config: null, transformation: null, status: 'active', enabled: true, created_at: '2026-01-02T03:04:05.678Z', updated_at: '2026-01-02T03:04:05.678Z', disabled_reason: null, retry_schedule_ms: null, auth: null, rate_limit_per_s: null, ordered: false, event_types: null, filter: null, previous_secret_expires_at: null };
    const headers = { 'content-type': 'application/json; charset=utf-8', 'x-request-id': `req_${ULID}`, etag: '"7"' };
    const answer = (status: number, body: unknown, h: Record<string, string> = headers): Answer => ({ status, headers: h, text: JSON.stringify(body), body });
    const seenBefore = new Map([...conf.seen].map(([k, v]) => [k, new Set(v)]));
    expect(() => conf.check('getDestination', answer(200, destination))).not.toThrow();
    expect(() => conf.check('getDestination', answer(418, destination))).toThrow(/does not list/);
    expect(() => conf.check('getDestination', answer(200, { ...destination, signing_secret: 'whsec_AAAA' }))).toThrow(/additional properties/);
    expect(() => conf.check('getDestination', answer(200, { ...destination, status: 'sleeping' }))).toThrow(/allowed values/);
    expect(() => conf.check('getDestination', answer(200, destination, { ...headers, etag: 'W/"7"' }))).toThrow(/ETag/);
    // credentials are only ever shown masked
    expect(() => conf.check('getDestination', answer(200, { ...destination, auth: { type: 'bearer', token: '****abcd' } }))).not.toThrow();
    expect(() => conf.check('getDestination', answer(200, { ...destination, auth: { type: 'bearer', token: 'tok-in-clear-1234' } }))).toThrow();
    expect(() => conf.check('getDestination', answer(200, destination, { 'content-type': 'application/json', etag: '"7"' }))).toThrow(/X-Request-Id/);
    expect(() => conf.check('getDestination', answer(200, destination, { ...headers, 'content-type': 'text/html' }))).toThrow(/text\/html/);
    const tooMany = { type: `${errorBase}/errors/rate-limit-exceeded`, title: 'Rate limit exceeded', status: 429, detail: 'd', instance: `req_${ULID}`, retry_after_seconds: 3 };
    const problemHeaders = { ...headers, 'content-type': 'application/problem+json' };
    expect(() => conf.check('listLogs', answer(429, tooMany, { ...problemHeaders, 'retry-after': '3' }))).not.toThrow();
    expect(() => conf.check('listLogs', answer(429, tooMany, problemHeaders))).toThrow(/Retry-After/);
    expect(() => conf.check('listLogs', answer(429, { ...tooMany, retry_after_seconds: undefined }, { ...problemHeaders, 'retry-after': '3' }))).toThrow(/retry_after_seconds/);
    expect(() => conf.check('listLogs', answer(429, { ...tooMany, type: 'about:blank' }, { ...problemHeaders, 'retry-after': '3' }))).toThrow(/constant/);
    expect(() => conf.check('deleteDestination', { status: 204, headers: { 'x-request-id': `req_${ULID}` }, text: '{}', body: {} })).toThrow(/with a body/);
    // request bodies the service refuses whatever the state, the document refuses too
    expect(() => conf.checkRequest('createDestination', { name: '', url: 'ftp://x' })).toThrow();
    expect(() => conf.checkRequest('createDestination', { name: 'n', url: 'http://x', retry_schedule_ms: [-1] })).toThrow();
    expect(() => conf.checkRequest('createDestination', { name: 'n', url: 'http://x', auth: { type: 'basic', username: 'a:b', password: 'long-enough' } })).toThrow();
    expect(() => conf.checkRequest('createDestination', { name: 'n', url: 'http://x', auth: { type: 'bearer', token: 'short' } })).toThrow();
    expect(() => conf.checkRequest('createDestination', { name: 'n', url: 'http://x', auth: { type: 'header', name: 'bad name', value: 'long-enough' } })).toThrow();
    expect(() => conf.checkRequest('createDestination', { name: 'n', url: 'http://x', auth: { type: 'header', name: 'x-key', value: 'long-enough' } })).not.toThrow();
    expect(() => conf.checkRequest('createDestination', { name: 'n', url: 'http://x', ordered: 'yes' })).toThrow();
    expect(() => conf.checkRequest('createIngester', { name: 'x', provider: 'none', config: {}, ordered: 1 })).toThrow();
    expect(() => conf.checkRequest('createIngester', { name: 'x', provider: 'nope' })).toThrow();
    expect(() => conf.checkRequest('createIngester', { name: 'x', provider: 'stripe', config: {} })).toThrow();
    expect(() => conf.checkRequest('createIngester', { name: 'x', provider: 'standard-webhooks', config: { signing_secret: 'whsec_not base64' } })).toThrow();
    expect(() => conf.checkRequest('createIngester', { name: 'x', provider: 'none', filters: [{ type: 'header', name: 'x', op: 'exists', value: 'v' }] })).toThrow();
    expect(() => conf.checkRequest('createIngester', { name: 'x', provider: 'none', filters: [{ type: 'body', path: 'a..b', op: 'exists' }] })).toThrow();
    expect(() => conf.checkRequest('updateIngester', { filters: [] })).toThrow();
    expect(() => conf.checkRequest('createSavedPayload', { name: 'x', payload: [1] })).toThrow();
    expect(() => conf.checkRequest('createIngester', { name: 'x', provider: 'none', filters: [{ type: 'any', rules: [{ type: 'event_type', op: 'glob', value: 'a.*' }] }] })).not.toThrow();
    // the fabricated answers above do not count as exercised
    conf.seen.clear();
    for (const [k, v] of seenBefore) conf.seen.set(k, v);
  });

  it('drove every documented operation to every status it documents (but 500)', () => {
    const documented = [...conf.operations.keys()].sort();
    expect([...conf.seen.keys()].sort()).toEqual(documented);
    const missing: string[] = [];
    for (const o of conf.operations.values()) {
      for (const status of Object.keys(o.op.responses as Json)) {
        if (status !== '500' && !conf.seen.get(o.operationId)?.has(Number(status))) missing.push(`${o.operationId} ${status}`);
      }
    }
    expect(missing).toEqual([]);
    if (process.env.OPENAPI_TEST_STATS) process.stderr.write(`\n${conf.checked} answers checked; ${[...conf.seen.values()].reduce((n, v) => n + v.size, 0)} (operation, status) pairs\n`);
  });
});
