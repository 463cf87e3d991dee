import express, { type Request, type RequestHandler, type Response, type NextFunction, type Router } from 'express';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { AppError, unprocessable } from '../../core/errors';
import { HOPS_HEADER, hopsOf } from '../../core/hops';
import { newId } from '../../core/ids';
import type { Ingester, Tenant } from '../../core/model';
import { isErasing, isSuspended, maxBodyBytesOf } from '../../core/tenants';
import { webhookKey } from '../../core/record-keys';
import type { Topics } from '../../core/topics';
import type { Logger } from '../../core/log';
import type { AvroCodec } from '../../platform/avro/codec';
import type { Header, WebhookEvent } from '../../platform/avro/records';
import type { RecordSender } from '../../platform/kafka/producer-lanes';
import { ProducerRenewingError, SendDeadlineError } from '../../platform/kafka/batching-producer';
import { CONFIG_VERSION_HEADER } from '../runtime/config-version';
import { correlationIdOf } from './correlation';
import { REDACTED_HEADERS, REDACTED_VALUE } from '../../core/secrets/redacted-headers';
import type { IngestLimiter, Refusal } from './limits';
import { recordIngestAccepted, recordIngestRefused, type IngestRefusal } from '../../platform/metrics/metrics';
import { requestTraceOf, traceIdOf } from '../../platform/tracing/trace-context';
import { beginTrace, endSpan, SPAN_ATTRIBUTES, SpanKind } from '../../platform/tracing/tracing';

export interface IngesterFinder {
  find(kind: 'ingester', id: string): Ingester | undefined;
  /** The ingester's tenant: suspended, or with limits of its own. */
  tenant?(tenantId: string): Tenant | undefined;
  /** Catches up with configuration written elsewhere (a just-created ingester). */
  sync(): Promise<void>;
  /** The configuration version this process has applied: the stages wait for it before deciding. */
  readonly version: bigint;
}

export interface IngestDeps {
  topics: Topics;
  config: IngesterFinder;
  codec: AvroCodec;
  producer: RecordSender;
  maxBodyBytes: number;
  /** Deliveries of this service a webhook may have passed through (X-Hookline-Hops). */
  maxHops: number;
  log: Logger;
  /** Rate limits per Hook URL and tenant; none: unlimited. */
  limiter?: IngestLimiter;
  /**
   * Longest a webhook waits for Kafka's acknowledgment before it is answered 503 with
   * Retry-After (INGEST_ACK_TIMEOUT_MS); unset, it waits as long as the client retries.
   */
  ackDeadlineMs?: number;
}

/** Seconds a sender is asked to wait before trying again when Kafka did not take its webhook. */
const RETRY_AFTER_SECONDS = 1;

/** The 503 of a webhook Kafka did not acknowledge: the sender should retry, not give up. */
function unstored(err: unknown): AppError | undefined {
  const retry = { retry_after_seconds: RETRY_AFTER_SECONDS };
  if (err instanceof SendDeadlineError) {
    const detail = err.written === 'no' ? `Kafka did not take the event within ${err.deadlineMs} ms and it was not stored; retry shortly` : `Kafka did not acknowledge the event within ${err.deadlineMs} ms; it may still be stored, so a retry may be received twice`;
    return new AppError('service-unavailable', detail, retry, true, { cause: err });
  }
  if (err instanceof Error && (err.name.startsWith('KafkaJS') || err instanceof ProducerRenewingError)) return new AppError('service-unavailable', 'the event could not be stored durably; retry shortly', retry, true, { cause: err });
  return undefined;
}

/**
 * The 429 of a webhook over its rate limit, with the API limiter's headers (RateLimit-Policy,
 * RateLimit, RateLimit-Limit, -Remaining, -Reset; Retry-After comes with the problem).
 */
export function refusalError(res: ServerResponse, refusal: Refusal): AppError {
  const { limit, windowSeconds } = refusal.limit;
  res.setHeader('RateLimit-Policy', `${limit};w=${windowSeconds}`);
  res.setHeader('RateLimit', `limit=${limit}, remaining=0, reset=${refusal.resetSeconds}`);
  res.setHeader('RateLimit-Limit', String(limit));
  res.setHeader('RateLimit-Remaining', '0');
  res.setHeader('RateLimit-Reset', String(refusal.resetSeconds));
  const per = refusal.scope === 'hook' ? 'this Hook URL' : "this tenant's Hook URLs";
  return new AppError('rate-limit-exceeded', `more than ${limit} webhooks in ${windowSeconds} s to ${per}; retry in ${refusal.retryAfterSeconds} s`, {
    retry_after_seconds: refusal.retryAfterSeconds,
  });
}

/** Request headers in arrival order with lower-case names; repeated headers stay repeated; credentials redacted. */
function headersOf(req: IncomingMessage): Header[] {
  const out: Header[] = [];
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    out.push({ name, value: REDACTED_HEADERS.has(name) ? REDACTED_VALUE : raw[i + 1]! });
  }
  return out;
}

export interface Accepted {
  event_id: string;
  correlation_id: string;
  status: 'received';
}

/**
 * Stores one webhook, acknowledged by Kafka (acks=all) before this resolves. The event record on
 * `webhooks.received` is itself the record of its `received` state (the sink writes the
 * transition row from it). `url` is the request target as sent (path and query). The record
 * names the configuration version it was accepted with, so that a validating process that has
 * not applied that ingester yet waits for it instead of refusing the webhook. Its log lines
 * carry `requestId` (a field, not a child logger: this is the hot path). The record carries
 * the W3C trace context on: the request's `traceparent` (and `tracestate`) when it has a valid
 * one, else a new trace; with spans recorded, that of the webhook's `hookline.ingest` span.
 */
export async function acceptWebhook(deps: IngestDeps, ingester: Ingester, req: IncomingMessage, url: string, payload: Buffer, requestId?: string): Promise<Accepted> {
  const hops = hopsOf(req.headers[HOPS_HEADER]);
  if (hops > deps.maxHops) {
    deps.log.warn('webhook refused: too many hops through this service', { request_id: requestId, tenant_id: ingester.tenant_id, ingester_id: ingester.id, trace_id: traceIdOf(requestTraceOf(req.headers)), hops, max_hops: deps.maxHops });
    throw unprocessable([{ field: HOPS_HEADER, message: `this webhook has passed through ${hops} deliveries of this service; at most ${deps.maxHops} are accepted` }]);
  }
  const q = url.indexOf('?');
  const event: WebhookEvent = {
    event_id: newId('event'),
    tenant_id: ingester.tenant_id,
    ingester_id: ingester.id,
    correlation_id: correlationIdOf(req.headers as Record<string, string>),
    received_at: Date.now(),
    method: req.method ?? 'POST',
    query: q < 0 ? '' : url.slice(q + 1),
    headers: headersOf(req),
    content_type: req.headers['content-type'] ?? null,
    body: payload,
    source_ip: req.socket.remoteAddress ?? null,
    event_type: null,
    hops,
  };
  const { trace, span } = beginTrace('hookline.ingest', SpanKind.SERVER, requestTraceOf(req.headers), () => ({
    [SPAN_ATTRIBUTES.tenantId]: event.tenant_id,
    [SPAN_ATTRIBUTES.ingesterId]: event.ingester_id,
    [SPAN_ATTRIBUTES.eventId]: event.event_id,
    'http.request.method': event.method,
    'http.route': '/v1/hooks/{ingester_id}',
  }));
  try {
    const eventValue = deps.codec.encodeNow(deps.topics.received, 'WebhookEvent', event) ?? (await deps.codec.encode(deps.topics.received, 'WebhookEvent', event));
    // read after the ingester was found, so it covers the configuration the webhook was accepted with
    const headers = { [CONFIG_VERSION_HEADER]: deps.config.version.toString(), ...trace };
    const records = [{ topic: deps.topics.received, messages: [{ key: webhookKey(event, ingester), value: eventValue, headers }] }];
    await (deps.ackDeadlineMs === undefined ? deps.producer.send(records) : deps.producer.send(records, { deadlineMs: deps.ackDeadlineMs }));
  } catch (err) {
    if (span) endSpan(span, err);
    // Kafka not acknowledging is a passing condition: the sender should retry, not give up
    throw unstored(err) ?? err;
  }
  recordIngestAccepted();
  if (span) {
    span.setAttribute(SPAN_ATTRIBUTES.outcome, 'received');
    endSpan(span);
  }
  deps.log.debug('received', { request_id: requestId, tenant_id: event.tenant_id, event_id: event.event_id, ingester_id: event.ingester_id, correlation_id: event.correlation_id, trace_id: traceIdOf(trace), bytes: payload.length });
  return { event_id: event.event_id, correlation_id: event.correlation_id, status: 'received' };
}

/** The metrics' reason for a webhook refused with `err`, from the status it is answered with. */
export function refusalReasonOf(err: unknown): IngestRefusal {
  const e = err as { status?: unknown; statusCode?: unknown } | null;
  const status = err instanceof AppError ? err.status : typeof e?.status === 'number' ? e.status : typeof e?.statusCode === 'number' ? e.statusCode : 500;
  switch (status) {
    case 429:
      return 'rate_limited';
    case 413:
      return 'too_large';
    case 404:
      return 'unknown_hook';
    case 403:
      return 'suspended';
    case 422:
      return 'too_many_hops';
    case 400:
    case 415:
      return 'invalid';
    case 503:
      return 'unavailable';
    default:
      return 'error';
  }
}

/**
 * The Hook URLs: POST /v1/hooks/{ingester_id}. The sender gets its 2xx only after Kafka has
 * acknowledged the event (acks=all). Every case the fast path below leaves alone (compressed
 * bodies, unknown ingesters, odd paths) comes here.
 */
export function ingestRouter(deps: IngestDeps): Router {
  const router = express.Router();
  // one body parser per size limit in use: the deployment's, and those tenants have of their own
  const parsers = new Map<number, RequestHandler>();
  const parserOf = (limit: number): RequestHandler => {
    let parser = parsers.get(limit);
    if (!parser) parsers.set(limit, (parser = express.raw({ type: () => true, limit })));
    return parser;
  };

  router.post('/v1/hooks/:ingesterId', async (req: Request, res: Response, next: NextFunction) => {
    try {
      const ingesterId = String(req.params.ingesterId);
      let ingester = deps.config.find('ingester', ingesterId);
      if (!ingester) {
        await deps.config.sync();
        ingester = deps.config.find('ingester', ingesterId);
      }
      const tenant = ingester && deps.config.tenant?.(ingester.tenant_id);
      // a tenant being erased has no Hook URLs any more, as once it is erased
      if (!ingester || isErasing(tenant)) throw new AppError('not-found', `no ingester ${ingesterId}`);
      if (isSuspended(tenant)) throw new AppError('tenant-suspended', `the tenant ${ingester.tenant_id} is suspended; its Hook URLs accept nothing until it is resumed`);
      await new Promise<void>((resolve, reject) => parserOf(maxBodyBytesOf(tenant, deps.maxBodyBytes))(req, res, (err?: unknown) => (err ? reject(err as Error) : resolve())));
      const refusal = await deps.limiter?.admit(ingester.tenant_id, ingester.id, tenant);
      if (refusal) throw refusalError(res, refusal);
      const payload: Buffer = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const requestId = res.getHeader('x-request-id');
      const accepted = await acceptWebhook(deps, ingester, req, req.originalUrl, payload, typeof requestId === 'string' ? requestId : undefined);
      res.status(202).setHeader('x-correlation-id', accepted.correlation_id).json(accepted);
    } catch (err) {
      next(err);
    }
  }, (err: unknown, _req: Request, _res: Response, next: NextFunction) => {
    // every refusal of this route, the body parser's included, is counted once on its way to the answer
    recordIngestRefused(refusalReasonOf(err));
    next(err);
  });
  return router;
}

const HOOK_PREFIX = '/v1/hooks/';
const PLAIN_ID = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * The Hook URL's common case without the web framework: a POST of an uncompressed body, within
 * the size limit, to a known ingester. It answers exactly as the router above (same status,
 * body and headers); anything else, and anything before the pipeline is ready, goes to
 * `fallback` untouched, so there is one place that decides every other answer.
 * `fail` answers an error found after the body was read (Kafka did not acknowledge).
 */
export function hookFastPath(
  deps: () => IngestDeps | undefined,
  fallback: RequestListener,
  answerError: (err: unknown, req: IncomingMessage, res: ServerResponse, requestId: string) => void,
): RequestListener {
  const fail = (err: unknown, req: IncomingMessage, res: ServerResponse, requestId: string) => {
    recordIngestRefused(refusalReasonOf(err));
    answerError(err, req, res, requestId);
  };
  return (req, res) => {
    const url = req.url ?? '';
    const d = req.method === 'POST' && url.startsWith(HOOK_PREFIX) ? deps() : undefined;
    if (!d) return fallback(req, res);
    const encoding = req.headers['content-encoding'];
    if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') return fallback(req, res);
    const q = url.indexOf('?');
    const id = url.slice(HOOK_PREFIX.length, q < 0 ? undefined : q);
    if (!PLAIN_ID.test(id)) return fallback(req, res);
    const ingester = d.config.find('ingester', id);
    if (!ingester) return fallback(req, res);
    const tenant = d.config.tenant?.(ingester.tenant_id);
    if (isSuspended(tenant) || isErasing(tenant)) return fallback(req, res);
    const maxBodyBytes = maxBodyBytesOf(tenant, d.maxBodyBytes);
    const declared = req.headers['content-length'];
    if (declared !== undefined && !(Number(declared) <= maxBodyBytes)) return fallback(req, res);

    const requestId = newId('request');
    res.setHeader('x-request-id', requestId);
    const chunks: Buffer[] = [];
    let size = 0;
    // a sender that goes away mid-body: nothing was accepted and there is nobody to answer
    req.on('error', () => undefined);
    let refused = false;
    req.on('data', (chunk: Buffer) => {
      if (refused) return;
      size += chunk.length;
      if (size > maxBodyBytes) {
        // a chunked body that outgrows the limit is read to its end and dropped, then refused
        // (as the router does): answering mid-body would race the sender's writes
        refused = true;
        chunks.length = 0;
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (refused) return fail(new AppError('payload-too-large', 'the request body is larger than allowed'), req, res, requestId);
      const payload = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
      const accept = () =>
        acceptWebhook(d, ingester, req, url, payload, requestId).then(
          (accepted) => {
            const body = JSON.stringify(accepted);
            res.writeHead(202, {
              'content-type': 'application/json; charset=utf-8',
              'content-length': Buffer.byteLength(body),
              'x-correlation-id': accepted.correlation_id,
            });
            res.end(body);
          },
          (err: unknown) => fail(err, req, res, requestId),
        );
      // synchronous while this process holds leased tokens: no promise on the common path
      const decision = d.limiter?.admit(ingester.tenant_id, ingester.id, tenant);
      if (decision === undefined) return void accept();
      if (!(decision instanceof Promise)) return fail(refusalError(res, decision), req, res, requestId);
      decision.then(
        (refusal) => (refusal ? fail(refusalError(res, refusal), req, res, requestId) : void accept()),
        (err: unknown) => fail(err, req, res, requestId),
      );
    });
  };
}
