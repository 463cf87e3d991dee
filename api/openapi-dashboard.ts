import { CONSUMER_NAMES } from '../core/topics';
import { SCOPES } from '../core/scopes';
import type { TenantOperation } from './openapi';
import { MAX_EVENT_BODY_SHOWN } from './routes/events';
import { MAX_BREAKERS_LISTED, MAX_BUCKETS } from './routes/stats';

/**
 * The part of the OpenAPI document (api/openapi.ts spreads it in) that the dashboard at /ui reads
 * besides the deliveries and evidence: a tenant's stats, the identity of a key and a received
 * event. Built with the document's own helpers.
 */

type Json = Record<string, unknown>;

export interface DashboardSchemaHelpers {
  schema(name: string): Json;
  nullable(s: Json): Json;
}

export function dashboardSchemas(h: DashboardSchemaHelpers): Json {
  const count = { type: 'integer', minimum: 0 };
  return {
    StatsBucket: {
      type: 'object',
      description: 'Delivery attempts made in one bucket of the window, by outcome.',
      required: ['start', 'delivered', 'retrying', 'failed'],
      properties: { start: { ...h.schema('Timestamp'), description: 'Start of the bucket.' }, delivered: count, retrying: count, failed: count },
      additionalProperties: false,
    },
    StageLag: {
      type: 'object',
      description: 'Records waiting for one consumer group of the pipeline, over all its topics and partitions (`validate` runs filter and route in the same pass).',
      required: ['stage', 'lag'],
      properties: { stage: { type: 'string', enum: [...CONSUMER_NAMES] }, lag: count },
      additionalProperties: false,
    },
    DestinationBreaker: {
      type: 'object',
      description: 'A destination of the tenant with the state of its circuit breaker in the deliver processes: `open` or `half-open` while a live deliver process holds it so, else `closed`.',
      required: ['destination_id', 'name', 'status', 'state', 'since'],
      properties: {
        destination_id: h.schema('DestinationId'),
        name: { type: 'string' },
        status: { type: 'string', enum: ['active', 'paused', 'disabled'] },
        state: { type: 'string', enum: ['closed', 'open', 'half-open'] },
        since: { ...h.nullable(h.schema('Timestamp')), description: 'When the breaker entered its state; `null` when closed.' },
      },
      additionalProperties: false,
    },
    TenantStats: {
      type: 'object',
      description: `The tenant's delivery attempts per bucket of the window (\`bucket_seconds\` wide, at most ${MAX_BUCKETS} buckets, the last one running now), their totals and error rate, the pipeline's consumer lag per stage and the breaker of each destination. A key limited to resource ids counts only attempts to its destinations and lists only those.`,
      required: ['window_seconds', 'bucket_seconds', 'from', 'to', 'buckets', 'totals', 'lag', 'destinations', 'breakers', 'measured_at'],
      properties: {
        window_seconds: { type: 'integer', minimum: 300, maximum: 86_400 },
        bucket_seconds: { type: 'integer', enum: [60, 300, 900, 3600] },
        from: { ...h.schema('Timestamp'), description: 'Start of the first bucket.' },
        to: { ...h.schema('Timestamp'), description: 'End of the last bucket (in the future while it runs).' },
        buckets: { type: 'array', maxItems: MAX_BUCKETS, items: h.schema('StatsBucket') },
        totals: {
          type: 'object',
          required: ['attempts', 'delivered', 'retrying', 'failed', 'error_rate'],
          properties: {
            attempts: count,
            delivered: count,
            retrying: count,
            failed: count,
            error_rate: { type: ['number', 'null'], minimum: 0, maximum: 1, description: 'Attempts that did not deliver (`retrying` and `failed`) over all attempts; `null` without attempts.' },
          },
          additionalProperties: false,
        },
        lag: {
          description: 'Consumer lag of every consumer group of the pipeline, one figure for all tenants (measured at most every 5 s); `null` when Kafka did not answer.',
          anyOf: [
            { type: 'object', required: ['measured_at', 'stages'], properties: { measured_at: h.schema('Timestamp'), stages: { type: 'array', items: h.schema('StageLag') } }, additionalProperties: false },
            { type: 'null' },
          ],
        },
        destinations: { ...count, description: 'Destinations of the tenant (those the key may see).' },
        breakers: {
          description: `The destinations with their breaker state, those not closed first, at most ${MAX_BREAKERS_LISTED}; \`null\` when Redis did not answer.`,
          anyOf: [{ type: 'array', maxItems: MAX_BREAKERS_LISTED, items: h.schema('DestinationBreaker') }, { type: 'null' }],
        },
        measured_at: h.schema('Timestamp'),
      },
      additionalProperties: false,
    },
    KeyIdentity: {
      type: 'object',
      description: 'The API key the request was made with: its tenant (the `{tenant_id}` of every path it may call), scopes, resource limits and expiry. Never its secret.',
      required: ['tenant_id', 'key_id', 'name', 'scopes', 'resource_ids', 'expires_at'],
      properties: {
        tenant_id: { type: 'string' },
        key_id: h.schema('ApiKeyId'),
        name: { type: ['string', 'null'] },
        scopes: { type: 'array', items: { type: 'string', enum: [...SCOPES] } },
        resource_ids: { type: ['array', 'null'], items: { type: 'string' }, description: 'The only resource ids the key may act on; `null`: every one of its tenant.' },
        expires_at: h.nullable(h.schema('Timestamp')),
      },
      additionalProperties: false,
    },
    ReceivedEvent: {
      type: 'object',
      description: `An event as its Hook URL received it: the bytes every delivery of it sends. At most ${MAX_EVENT_BODY_SHOWN} bytes of the body are shown.`,
      required: ['id', 'ingester_id', 'correlation_id', 'event_type', 'received_at', 'content_type', 'body_sha256', 'body', 'body_encoding', 'body_bytes', 'body_truncated', 'body_verified', 'body_expired'],
      properties: {
        id: h.schema('EventId'),
        ingester_id: h.schema('IngesterId'),
        correlation_id: { type: 'string' },
        event_type: { type: ['string', 'null'], description: 'The type validation found; `null` when it has none (or validation has not run yet).' },
        received_at: h.schema('Timestamp'),
        content_type: { type: ['string', 'null'] },
        body_sha256: { ...h.schema('Sha256Hex'), description: 'SHA-256 of the whole body as received; each delivery attempt\'s `body_sha256` is the same.' },
        body: { type: ['string', 'null'], description: `The body, or its first ${MAX_EVENT_BODY_SHOWN} bytes: UTF-8 text as it is (cut at a character boundary), anything else base64. \`null\` when the stored bytes do not match \`body_sha256\`.` },
        body_encoding: { enum: ['utf8', 'base64', null] },
        body_bytes: { type: ['integer', 'null'], minimum: 0, description: 'Length of the whole body.' },
        body_truncated: { type: 'boolean' },
        body_verified: { type: 'boolean', description: 'The stored bytes match the SHA-256 recorded at receipt (else `body` is `null`); `false` too once the body expired.' },
        body_expired: { type: 'boolean', description: 'The body and headers were removed by retention (the tenant\'s `limits.retention.bodies_seconds`, else `RETENTION_BODIES`): `body` is `null`, while `body_sha256`, the attempts and their evidence remain. Retrying the event answers 409.' },
      },
      additionalProperties: false,
    },
  };
}

export interface DashboardPathHelpers {
  /** `/v1/tenants/{tenant_id}` and the rate-limit form `/v1/tenants/:tenantId`. */
  P: string;
  T: string;
  tenant: Json;
  idParam(name: string): Json;
  tenantOperation(o: TenantOperation): Json;
  /** An operation outside the tenant paths that any valid key may call (api/openapi.ts). */
  keyOperation(o: { operationId: string; summary: string; description: string; tag: string; scope: null; rateLimitRoute: string; success: Record<string, Json> }): Json;
  ok(description: string, schemaName: string): Json;
}

export function dashboardPaths(h: DashboardPathHelpers): Json {
  const { P, T } = h;
  return {
    [`${P}/stats`]: {
      parameters: [h.tenant],
      get: h.tenantOperation({
        operationId: 'getTenantStats', summary: 'Throughput, errors, lag and breakers', tag: 'Stats', scope: 'read:stats', rateLimitRoute: `GET ${T}/stats`,
        description: `The tenant's delivery attempts over the last \`window\`, per bucket (1 minute up to a 2 h window, then 5 min, 15 min; at most ${MAX_BUCKETS} buckets) by outcome, with totals and error rate; the consumer lag of each stage of the pipeline (shared by all tenants, no tenant's data); and the circuit breaker state of each of the tenant's destinations. Measured when asked (lag at most 5 s old).`,
        parameters: [{ name: 'window', in: 'query', required: false, description: 'How far back: minutes or hours, `15m`, `1h`, `24h`, from 5m to 24h (default 1h). Anything else answers 400.', schema: { type: 'string', pattern: '^[1-9][0-9]{0,4}[mh]$', default: '1h' } }],
        success: { '200': h.ok('The stats.', 'TenantStats') }, forbidden: 'ForbiddenRead',
      }),
    },
    [`${P}/events/{event_id}`]: {
      parameters: [h.tenant, h.idParam('EventId')],
      get: h.tenantOperation({
        operationId: 'getEvent', summary: 'Get a received event', tag: 'Events', scope: 'read:events', rateLimitRoute: `GET ${T}/events/:id`,
        description: `The event as received: ingester, correlation id, type, content type and body (the request body its deliveries send; at most ${MAX_EVENT_BODY_SHOWN} bytes shown). Its request headers are not shown. A key limited to resource ids reads the events of its ingesters and those routed to its destinations.`,
        success: { '200': h.ok('The event.', 'ReceivedEvent') }, forbidden: 'ForbiddenReadResource', notFound: 'no such event (received events are shown once the sink has stored them, within about a second)',
      }),
    },
    '/v1/me': {
      get: h.keyOperation({
        operationId: 'getIdentity', summary: 'The calling key', tag: 'Identity', scope: null, rateLimitRoute: 'GET /v1/me',
        description: 'The API key this request is made with: its tenant, scopes, resource limits and expiry, so that a client holding only a key learns the `{tenant_id}` of its paths. Any valid key.',
        success: { '200': h.ok('The key.', 'KeyIdentity') },
      }),
    },
  };
}
