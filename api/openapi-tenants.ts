import { QUOTA_KINDS } from '../core/quotas';
import { NOT_FOR_PORTALS, PORTAL_DEFAULT_SCOPES, SCOPES } from '../core/scopes';
import { RETENTION_BOUNDS } from '../core/config';
import { MAX_FRAME_ANCESTORS, MAX_TENANT_METADATA, RETENTION_MEMBERS, TENANT_STATES } from '../core/tenants';
import type { TenantOperation } from './openapi';
import { MAX_PORTAL_DESTINATIONS, MAX_PORTAL_SESSIONS, PORTAL_LINK_SECONDS, PORTAL_SESSION_SECONDS } from './routes/portal-sessions';

/**
 * Tenants as a resource, portal sessions and test events: their part of the OpenAPI document
 * (api/openapi.ts spreads it in). Operators' operations carry `x-operator: true`: they take an
 * operator key only, never a tenant's.
 */

type Json = Record<string, unknown>;

export interface TenantSchemaHelpers {
  schema(name: string): Json;
  nullable(s: Json): Json;
  shownBack(names: string[]): Record<string, Json>;
  listOf(member: string, item: string, order: string): Json;
  nameInput: Json;
}

const TENANT_ID_PATTERN_TEXT = '^[a-z0-9][a-z0-9_-]{0,62}$';
const ORIGIN_PATTERN = '^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?$';
const PORTAL_SCOPES = SCOPES.filter((s) => !NOT_FOR_PORTALS.includes(s));

export function tenantSchemas(h: TenantSchemaHelpers): Json {
  const rate = (what: string): Json => ({
    ...h.nullable({
      type: 'object',
      required: ['limit', 'window_seconds'],
      additionalProperties: false,
      properties: { limit: { type: 'integer', minimum: 1, maximum: 1_000_000_000 }, window_seconds: { type: 'integer', minimum: 1, maximum: 86_400 } },
    }),
    description: `${what}, as \`limit\` webhooks per \`window_seconds\` (1 s to 1 day); \`null\`: the deployment's setting.`,
  });
  const quotas: Json = {
    type: 'object',
    additionalProperties: false,
    description: 'Most objects of each kind the tenant may hold; `null` (or absent): the deployment\'s `MAX_*_PER_TENANT` setting.',
    properties: Object.fromEntries(Object.keys(QUOTA_KINDS).map((q) => [q, h.nullable({ type: 'integer', minimum: 0, maximum: 1_000_000 })])),
  };
  const retention: Json = {
    type: 'object',
    additionalProperties: false,
    description: 'How long ClickHouse keeps the tenant\'s rows, in seconds (1 s to 10 years): `bodies_seconds` its webhooks\' bodies and headers, its attempts\' response bodies and its dead letters\' bytes (`RETENTION_BODIES`); `attempts_seconds` its events\' and attempts\' rows (`RETENTION_ATTEMPTS`); `logs_seconds` its log lines (`RETENTION_LOGS`). `null` (or absent): the deployment\'s setting. A change applies to rows written from then on; rows stored before keep the period they were written with. Evidence is never expired.',
    properties: Object.fromEntries(RETENTION_MEMBERS.map((m) => [m, h.nullable({ type: 'integer', minimum: RETENTION_BOUNDS.min, maximum: RETENTION_BOUNDS.max })])),
  };
  const limitsProperties: Json = {
    ingest_per_hook: rate('Webhooks one Hook URL of the tenant accepts (replaces `INGEST_RATE_LIMIT_PER_HOOK`)'),
    ingest_per_tenant: rate('Webhooks all the tenant\'s Hook URLs accept together (replaces `INGEST_RATE_LIMIT_PER_TENANT`)'),
    max_payload_bytes: { ...h.nullable({ type: 'integer', minimum: 1 }), description: 'Largest webhook body the tenant\'s Hook URLs accept (413 above it); at most the deployment\'s `INGEST_MAX_BODY_BYTES`, which the topics are sized for (400 above it). `null`: that setting.' },
    quotas: h.nullable(quotas),
    retention: h.nullable(retention),
  };
  const portalProperties: Json = {
    logo_url: { ...h.nullable({ type: 'string', maxLength: 2048, pattern: '^https://', 'x-pattern-message': 'must be an https URL' }), description: 'The logo the portal shows (an https URL).' },
    accent_color: { ...h.nullable({ type: 'string', pattern: '^#[0-9a-fA-F]{6}$', 'x-pattern-message': 'must be a colour as #rrggbb' }), description: 'The portal\'s accent colour, `#rrggbb`.' },
    frame_ancestors: {
      type: 'array', maxItems: MAX_FRAME_ANCESTORS,
      items: { type: 'string', maxLength: 300, pattern: ORIGIN_PATTERN, 'x-pattern-message': 'must be an origin: http(s)://host[:port], without a path' },
      description: `Origins allowed to embed the portal in a frame (its Content-Security-Policy \`frame-ancestors\`), at most ${MAX_FRAME_ANCESTORS}; empty: no page may frame it. Framed by another site, the session cookie needs \`PUBLIC_BASE_URL\` on https (it is then \`SameSite=None; Secure; Partitioned\`).`,
    },
  };
  const metadata: Json = {
    ...h.nullable({
      type: 'object', maxProperties: MAX_TENANT_METADATA,
      propertyNames: { pattern: '^[A-Za-z0-9_.:-]{1,64}$' },
      additionalProperties: { type: 'string', maxLength: 512 },
    }),
    description: `The operator's own labels, string to string (plan, account id…): at most ${MAX_TENANT_METADATA} entries, names of 1 to 64 of \`A-Z a-z 0-9 _ . : -\`, values up to 512 characters. \`null\` clears them.`,
  };
  const state: Json = { type: 'string', enum: [...TENANT_STATES], description: '`active` ingests and delivers. `suspended`: its Hook URLs answer 403 tenant-suspended and accept nothing, and its deliveries (those in flight included) are held on `deliveries.held`, none lost, until it is `active` again; its API keys and portal sessions keep working.' };
  const shownProperties: Json = {
    id: h.schema('TenantIdValue'),
    name: { type: 'string' },
    metadata: { type: 'object', additionalProperties: { type: 'string' } },
    state: { type: 'string', enum: [...TENANT_STATES, 'erasing'], description: '`erasing`: a DELETE began erasing it and has not finished (DELETE again resumes it); only a DELETE sets it.' },
    suspended_at: h.nullable(h.schema('Timestamp')),
    limits: h.schema('TenantLimits'),
    portal: h.schema('TenantPortal'),
    created_at: h.schema('Timestamp'),
    updated_at: h.schema('Timestamp'),
  };
  const sessionShown: Json = {
    id: { type: 'string', pattern: '^pss_[0-9a-hjkmnp-tv-z]{26}$' },
    tenant_id: h.schema('TenantIdValue'),
    scopes: { type: 'array', items: { type: 'string', enum: [...SCOPES] } },
    destination_ids: { type: ['array', 'null'], items: { type: 'string' } },
    created_at: h.schema('Timestamp'),
    link_expires_at: { ...h.schema('Timestamp'), description: 'Until when the link opens the portal (once).' },
    expires_at: { ...h.schema('Timestamp'), description: 'When the session ends, whether the link was used or not.' },
    opened_at: { ...h.nullable(h.schema('Timestamp')), description: 'When the link was opened; `null` while unused.' },
  };
  return {
    TenantIdValue: { type: 'string', pattern: TENANT_ID_PATTERN_TEXT, description: 'A tenant id: 1 to 63 of lower-case letters, digits, `_` and `-`, starting with a letter or digit. Fixed once created (it is in every path of the tenant).', examples: ['acme'] },
    TenantLimits: {
      type: 'object',
      description: 'Limits of the tenant\'s own, each replacing the deployment\'s setting for it alone; `null` keeps the setting.',
      required: Object.keys(limitsProperties),
      additionalProperties: false,
      properties: {
        ...limitsProperties,
        quotas: { type: 'object', additionalProperties: false, properties: (quotas.properties as Json), required: Object.keys(QUOTA_KINDS) },
        retention: { ...retention, required: [...RETENTION_MEMBERS] },
      },
    },
    TenantLimitsInput: {
      ...h.nullable({ type: 'object', additionalProperties: false, properties: limitsProperties }),
      description: 'Limits of the tenant\'s own: each member given replaces the current one, `null` puts the deployment\'s setting back; `quotas` members likewise. `null` as a whole: every setting.',
    },
    TenantPortal: {
      type: 'object',
      required: Object.keys(portalProperties),
      additionalProperties: false,
      properties: portalProperties,
    },
    TenantPortalInput: {
      ...h.nullable({ type: 'object', additionalProperties: false, properties: portalProperties }),
      description: 'The portal\'s branding and who may frame it: each member given replaces the current one. `null` as a whole: no branding, no framing.',
    },
    Tenant: { type: 'object', required: Object.keys(shownProperties), additionalProperties: false, properties: shownProperties },
    TenantCreate: {
      type: 'object',
      description: 'A new tenant. Members a GET shows that the service sets (`created_at`, `updated_at`, `suspended_at`) are accepted and left as the service sets them; any other member is refused (400).',
      required: ['id', 'name'],
      additionalProperties: false,
      properties: { ...h.shownBack(['created_at', 'updated_at', 'suspended_at']), id: h.schema('TenantIdValue'), name: h.nameInput, metadata, state, limits: h.schema('TenantLimitsInput'), portal: h.schema('TenantPortalInput') },
    },
    TenantUpdate: {
      type: 'object',
      description: 'A change: each member given replaces the tenant\'s (`limits` and `portal` member by member), absent ones stay. `id` may be sent back as it is (a different one answers 400); the members the service sets are accepted and left as they are, so a GET\'s answer can be sent back with changes.',
      required: [],
      additionalProperties: false,
      properties: { ...h.shownBack(['created_at', 'updated_at', 'suspended_at']), id: { ...h.schema('TenantIdValue'), description: 'Shown by a GET; fixed.' }, name: h.nameInput, metadata, state, limits: h.schema('TenantLimitsInput'), portal: h.schema('TenantPortalInput') },
    },
    TenantList: h.listOf('tenants', 'Tenant', 'by id'),
    PortalSessionCreate: {
      type: 'object',
      description: 'What the portal session may do and for how long. A tenant key grants at most the scopes it holds (403 insufficient-scope otherwise), only destinations within its own `resource_ids`, and no longer than it lives.',
      required: [],
      additionalProperties: false,
      properties: {
        scopes: { type: 'array', minItems: 1, items: { type: 'string', enum: PORTAL_SCOPES }, description: `Scopes of the session; default: ${PORTAL_DEFAULT_SCOPES.map((s) => `\`${s}\``).join(', ')}. Keys, portal sessions and ingesters are never the portal's (400).` },
        destination_ids: { ...h.nullable({ type: 'array', minItems: 1, maxItems: MAX_PORTAL_DESTINATIONS, items: { type: 'string', pattern: '^dst_[0-9a-hjkmnp-tv-z]{26}$', 'x-pattern-message': 'is not a destination id' } }), description: `Limits the session to these destinations of the tenant (each must exist; at most ${MAX_PORTAL_DESTINATIONS}); it then cannot create destinations. \`null\` or absent: all of them.` },
        link_seconds: { type: 'integer', minimum: PORTAL_LINK_SECONDS.min, maximum: PORTAL_LINK_SECONDS.max, default: PORTAL_LINK_SECONDS.default, description: 'How long the link opens the portal (once), in seconds; never longer than the session.' },
        session_seconds: { type: 'integer', minimum: PORTAL_SESSION_SECONDS.min, maximum: PORTAL_SESSION_SECONDS.max, default: PORTAL_SESSION_SECONDS.default, description: 'How long the session lasts from now, in seconds; the browser\'s cookie ends with it.' },
      },
    },
    PortalSession: { type: 'object', required: Object.keys(sessionShown), additionalProperties: false, properties: sessionShown },
    PortalSessionCreated: {
      type: 'object',
      description: 'The session, with its one-time link: shown in this answer only (only a hash of its code is kept).',
      required: [...Object.keys(sessionShown), 'url'],
      additionalProperties: false,
      properties: { ...sessionShown, url: { type: 'string', format: 'uri', description: 'Opens the portal signed in, once: `<PUBLIC_BASE_URL>/ui/?tenant=<id>#portal=<code>`. The code is in the fragment, so it reaches no server log; the page trades it for an HttpOnly session cookie.' } },
    },
    PortalSessionList: h.listOf('portal_sessions', 'PortalSession', `the tenant's live sessions (at most ${MAX_PORTAL_SESSIONS}), oldest first; one page`),
    PortalSessionOpen: { type: 'object', required: ['code'], additionalProperties: false, properties: { code: { type: 'string', minLength: 1, maxLength: 100, description: 'The code after `#portal=` in the link.' } } },
    PortalSessionOpened: {
      type: 'object',
      required: ['tenant_id', 'scopes', 'destination_ids', 'expires_at'],
      additionalProperties: false,
      properties: { tenant_id: h.schema('TenantIdValue'), scopes: { type: 'array', items: { type: 'string', enum: [...SCOPES] } }, destination_ids: { type: ['array', 'null'], items: { type: 'string' } }, expires_at: h.schema('Timestamp') },
    },
    TestEventSend: {
      type: 'object',
      description: 'What the test event carries: `payload`, or a saved payload (`saved_payload_id`), or else the example of `event_type` (the catalogue\'s), or else a small `hookline.test` payload. Giving both `payload` and `saved_payload_id` is 400.',
      required: [],
      additionalProperties: false,
      properties: {
        event_type: { type: 'string', minLength: 1, maxLength: 200, description: 'An event type of the tenant\'s catalogue (400 when it has none by that name).' },
        payload: { type: 'object', description: 'The JSON payload to send (at most 256 KiB).' },
        saved_payload_id: { ...h.schema('SavedPayloadId'), description: 'A saved payload of the tenant to send.' },
      },
    },
    TestEventQueued: {
      type: 'object',
      required: ['event_id', 'delivery_id', 'destination_id', 'event_type', 'status'],
      additionalProperties: false,
      properties: {
        event_id: h.schema('EventId'),
        delivery_id: h.schema('DeliveryId'),
        destination_id: h.schema('DestinationId'),
        event_type: { type: ['string', 'null'] },
        status: { type: 'string', const: 'queued' },
      },
    },
  };
}

export interface TenantPathHelpers {
  P: string;
  T: string;
  tenant: Json;
  destinationId: Json;
  tenantOperation(o: TenantOperation): Json;
  operatorOperation(o: Omit<TenantOperation, 'scope' | 'forbidden'>): Json;
  ok(description: string, schemaName: string): Json;
  created(description: string, schemaName: string): Json;
  noContent(description: string): Json;
  jsonBody(name: string, description: string): Json;
  schema(name: string): Json;
  headerRefs(names: string[]): Json;
  problemResponse(description: string, slug: string): Json;
  listParams: Json[];
}

export function tenantPaths(h: TenantPathHelpers): Json {
  const sessionId: Json = { name: 'portal_session_id', in: 'path', required: true, description: 'Id of the portal session. Any other string answers 404.', schema: { type: 'string' }, examples: { id: { value: 'pss_01j9zx5w3k8f6t2q4r7m1n0bcd' } } };
  const onBehalf = 'An operator key may call it for any tenant that exists (404 otherwise).';
  return {
    '/v1/tenants': {
      get: h.operatorOperation({
        operationId: 'listTenants', summary: 'List tenants', tag: 'Tenants', rateLimitRoute: 'GET /v1/tenants',
        description: 'Every tenant of the deployment, by id, with its state, limits and portal settings (tenants made by `keys create` before tenants were managed here included). Operator key only.',
        parameters: h.listParams, success: { '200': h.ok('One page of tenants.', 'TenantList') },
      }),
      post: h.operatorOperation({
        operationId: 'createTenant', summary: 'Create a tenant', tag: 'Tenants', rateLimitRoute: 'POST /v1/tenants',
        description: 'Creates a tenant with its name, metadata, state, limits of its own and portal settings. Its API keys are then made by `keys create --tenant`, or its users reach it through portal sessions. Operator key only.',
        requestBody: h.jsonBody('TenantCreate', 'The tenant.'),
        success: { '201': h.created('The tenant.', 'Tenant') },
        conflict: { description: 'a tenant with this id exists, or had it and was erased (an erased tenant\'s id is not given again)' },
      }),
    },
    '/v1/tenants/{tenant_id}': {
      parameters: [h.tenant],
      get: h.operatorOperation({
        operationId: 'getTenant', summary: 'Get a tenant', tag: 'Tenants', rateLimitRoute: 'GET /v1/tenants/:tenantId',
        description: 'The tenant, with every limit (null where the deployment\'s setting applies). Operator key only.',
        success: { '200': h.ok('The tenant.', 'Tenant') }, notFound: 'no such tenant',
      }),
      patch: h.operatorOperation({
        operationId: 'updateTenant', summary: 'Change a tenant (suspend, resume, limits, portal)', tag: 'Tenants', rateLimitRoute: 'PATCH /v1/tenants/:tenantId',
        description: 'Changes the members given. `"state": "suspended"` suspends the tenant (its Hook URLs answer 403, its deliveries are held) and `"active"` resumes it (held deliveries go out in the order they were held). A change reaches every process with the config topic (about 100 ms). Operator key only.',
        requestBody: h.jsonBody('TenantUpdate', 'The change.'),
        success: { '200': h.ok('The tenant as changed.', 'Tenant') }, notFound: 'no such tenant', conflict: { description: 'the tenant is being erased (DELETE it again to finish)' },
      }),
      delete: h.operatorOperation({
        operationId: 'deleteTenant', summary: 'Erase a tenant', tag: 'Tenants', rateLimitRoute: 'DELETE /v1/tenants/:tenantId',
        description: 'Erases the tenant for good and answers once it is done (seconds: the ClickHouse step waits until the parts that held its rows are off the disk, at most a minute). First the tenant is marked `erasing`: its Hook URLs answer 404, its API keys and portal sessions 401, and the pipeline drops its records still in flight. Then, in this order: every config entity of the tenant (its data keys first, so that its webhook bodies sealed on Kafka can no longer be opened; then API keys, destinations and ingesters with their secrets, flows, saved payloads, event types, replay jobs), its Redis keys (rate limits, idempotency records, name claims, portal sessions, send slots, locks, marks), and its rows in every ClickHouse table but the evidence log\'s, whose leaves are hashes and stay so every proof handed out still verifies. Last, a marker with the time of the erasure (no data) keeps its id from being created again. A failure answers 500 and leaves the tenant `erasing`; DELETE again resumes the erasure. What it does not remove: docs/tenants.md and NC-21. Operator key only.',
        success: { '204': h.noContent('Erased.') }, notFound: 'no such tenant (never created, or erased already)',
        conflict: { description: 'the operator keys belong to no tenant and are not erased' },
      }),
    },
    [`${h.P}/portal-sessions`]: {
      parameters: [h.tenant],
      get: h.tenantOperation({
        operationId: 'listPortalSessions', summary: 'List portal sessions', tag: 'Portal', scope: 'read:portal-sessions', rateLimitRoute: `GET ${h.T}/portal-sessions`,
        description: `The tenant's live portal sessions (never their link or cookie). ${onBehalf}`,
        success: { '200': h.ok('The live sessions.', 'PortalSessionList') }, forbidden: 'ForbiddenRead',
      }),
      post: h.tenantOperation({
        operationId: 'createPortalSession', summary: 'Make a portal link', tag: 'Portal', scope: 'write:portal-sessions', rateLimitRoute: `POST ${h.T}/portal-sessions`,
        description: `Makes a portal session and its one-time link: opened within \`link_seconds\`, it shows the portal (/ui) signed in for the tenant with the session's scopes and destinations; the browser holds an HttpOnly session cookie, never an API key. The link works once; the session ends at \`expires_at\` or when revoked. ${onBehalf}`,
        requestBody: { ...h.jsonBody('PortalSessionCreate', 'The session\'s scopes, destinations and lifetimes (all optional).'), required: false },
        success: { '201': h.created('The session with its link.', 'PortalSessionCreated') }, forbidden: 'ForbiddenWriteResource', conflict: 'IdempotencyConflict',
      }),
    },
    [`${h.P}/portal-sessions/{portal_session_id}`]: {
      parameters: [h.tenant, sessionId],
      get: h.tenantOperation({
        operationId: 'getPortalSession', summary: 'Get a portal session', tag: 'Portal', scope: 'read:portal-sessions', rateLimitRoute: `GET ${h.T}/portal-sessions/:id`,
        description: `The session while it lives. ${onBehalf}`,
        success: { '200': h.ok('The session.', 'PortalSession') }, forbidden: 'ForbiddenRead', notFound: 'no such live session',
      }),
      delete: h.tenantOperation({
        operationId: 'revokePortalSession', summary: 'Revoke a portal session', tag: 'Portal', scope: 'write:portal-sessions', rateLimitRoute: `DELETE ${h.T}/portal-sessions/:id`,
        description: `Ends the session at once: its link no longer opens, and the next request of a browser holding its cookie answers 401. ${onBehalf}`,
        success: { '204': h.noContent('Revoked.') }, forbidden: 'ForbiddenWrite', notFound: 'no such live session', conflict: 'IdempotencyConflict',
      }),
    },
    [`${h.P}/destinations/{destination_id}/test-events`]: {
      parameters: [h.tenant, h.destinationId],
      post: h.tenantOperation({
        operationId: 'sendTestEvent', summary: 'Send a test event to a destination', tag: 'Destinations', scope: 'write:events', rateLimitRoute: `POST ${h.T}/destinations/:id/test-events`,
        description: 'Sends one event to this destination only (whatever its subscriptions): a payload given, a saved payload, or an event type\'s example. Its delivery is signed, attempted, retried, recorded and proved like any other and appears among the deliveries; the event itself is stored like any event under the ingester id `test-event` (GET …/events/{id} shows it, a failed one can be retried), and no flow routes it elsewhere. A paused destination, or a suspended tenant, holds it like any delivery.',
        requestBody: { ...h.jsonBody('TestEventSend', 'What to send (all optional).'), required: false },
        success: { '202': h.ok('Queued: Kafka has the delivery.', 'TestEventQueued') }, forbidden: 'ForbiddenWriteResource', notFound: 'no such destination, or no such saved payload', conflict: 'IdempotencyConflict',
        tooLarge: 'the payload is larger than 256 KiB of JSON.',
      }),
    },
    '/v1/portal/session': {
      post: {
        operationId: 'openPortalSession', summary: 'Open a portal link', tags: ['Portal'], security: [],
        description: 'Trades a portal link\'s one-time code for the session: the answer sets the HttpOnly cookie `hookline_portal` (for this origin, until the session ends). Requests made with it carry the header `X-Hookline-Portal: 1` (else the cookie is not taken) and act with the session\'s scopes on its tenant. The portal page calls this; the code works once.',
        requestBody: h.jsonBody('PortalSessionOpen', 'The code.'),
        responses: {
          '200': { description: 'Signed in: the cookie is set.', headers: { ...h.headerRefs(['X-Request-Id']), 'Set-Cookie': { description: '`hookline_portal=<token>; Path=/; HttpOnly; SameSite=Lax` (`SameSite=None; Secure; Partitioned` for a tenant whose portal may be framed, on https); `Max-Age` until the session ends.', schema: { type: 'string' } } }, content: { 'application/json': { schema: h.schema('PortalSessionOpened') } } },
          '400': h.problemResponse('validation-error: no `code`, or another member.', 'validation-error'),
          '401': h.problemResponse('unauthorized: the link expired, was used already, or its session was revoked.', 'unauthorized'),
          '415': h.problemResponse('unsupported-media-type: not JSON.', 'unsupported-media-type'),
          '500': h.problemResponse('internal-error.', 'internal-error'),
          '503': h.problemResponse('service-unavailable: the service is starting.', 'service-unavailable'),
        },
      },
      delete: {
        operationId: 'closePortalSession', summary: 'Sign out of the portal', tags: ['Portal'], security: [],
        description: 'Ends the session of the cookie sent (if any) and clears the cookie.',
        responses: {
          '204': { description: 'Signed out.', headers: h.headerRefs(['X-Request-Id']) },
          '500': h.problemResponse('internal-error.', 'internal-error'),
          '503': h.problemResponse('service-unavailable: the service is starting.', 'service-unavailable'),
        },
      },
    },
  };
}
