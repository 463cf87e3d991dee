import { maxHeaderSize } from 'node:http';
import { QUOTA_KINDS } from '../core/quotas';
import packageJson from '../package.json';
import { LOG_LEVELS } from '../core/config';
import { STATUS_OF, TITLE_OF, type ErrorSlug } from '../core/errors';
import { HEADER_VALUE_OPS, MAX_DEPTH, MAX_NAME_LENGTH, MAX_PATH_SEGMENTS, MAX_PATTERN_LENGTH, MAX_RULES, MAX_STRING_LENGTH, MAX_TOTAL_PROGRAM_SIZE, MAX_VALUES, PRESENCE_OPS } from '../core/filters';
import { MAX_PROGRAM_SIZE } from '../core/regex';
import { AUTH_LIMITS } from '../core/destination-auth';
import { CHANGE_ACTIONS, DELIVERY_STAGE_ACTOR } from '../core/destination-changes';
import { ID_PREFIX } from '../core/ids';
import { PROVIDERS } from '../core/model';
import { DEFAULT_TOLERANCE_SECONDS, GENERIC_ALGORITHMS, GENERIC_ENCODINGS, MAX_TOLERANCE_SECONDS } from '../core/providers';
import { SCOPES, type Scope } from '../core/scopes';
import { CAPABILITIES, PLANES, RUNTIME_PROOFS, TRUST_PROOFS } from '../core/proof-catalogue';
import { EVENT_STATES } from '../platform/avro/records';
import { DEFAULT_LIMIT, MAX_LIMIT } from './paging';
import { DELIVERY_STATUSES } from './routes/deliveries';
import { MAX_PAYLOAD_BYTES } from './routes/saved-payloads';
import { MAX_KEY_LIFETIME_DAYS, MAX_KEY_RESOURCES } from './routes/api-keys';
import { MAX_REPLAY_MATCHES, MAX_REPLAY_RANGE_DAYS, MAX_RUNNING_REPLAYS } from './routes/replays';
import { eventTypePaths, eventTypeSchemas } from './openapi-event-types';
import { dashboardPaths, dashboardSchemas } from './openapi-dashboard';
import { deadLetterPaths, deadLetterSchemas } from './openapi-dead-letters';
import { exportPaths, exportSchemas } from './openapi-exports';
import { analyticsPaths, analyticsSchemas } from './openapi-analytics';
import { destinationTypePaths, destinationTypeSchemas } from './openapi-destination-types';
import { tenantPaths as tenantResourcePaths, tenantSchemas } from './openapi-tenants';

/**
 * The OpenAPI 3.1 description of the HTTP API as the code implements it today. Enumerations and
 * limits come from the modules that enforce them; the shapes of the answers are written out here
 * and test/api/openapi.test.ts checks every one of them against real answers of the service.
 */

type Json = Record<string, unknown>;

const ULID = '[0-9a-hjkmnp-tv-z]{26}';
const EXAMPLE_ULID = '01j9zx5w3k8f6t2q4r7m1n0bcd';
/** Largest JSON request body of the tenant routes (api/app.ts). */
const MAX_JSON_BODY = '1 MiB';
/** Longest name of a destination, ingester, flow or saved payload (before trimming). */
const MAX_ENTITY_NAME = 200;
const MAX_URL_LENGTH = 2048;
const MAX_SCHEDULE_ATTEMPTS = 50;
const MAX_SCHEDULE_WAIT_MS = 7 * 86_400_000;
const DEPENDENCIES = ['kafka', 'schema_registry', 'redis', 'clickhouse', 'pipeline'] as const;

const ref = (kind: 'schemas' | 'responses' | 'parameters' | 'headers', name: string): Json => ({ $ref: `#/components/${kind}/${name}` });
const schema = (name: string): Json => ref('schemas', name);
const nullable = (s: Json): Json => ({ anyOf: [s, { type: 'null' }] });
/** Members a GET shows that the service sets: a body may carry them back, and they are left as stored. */
const shownBack = (names: string[]): Record<string, Json> =>
  Object.fromEntries(names.map((n) => [n, { readOnly: true, description: 'Shown by a GET and set by the service: accepted in a body and left as the service keeps it.' }]));

function typedId(kind: keyof typeof ID_PREFIX, what: string): Json {
  const id = `${ID_PREFIX[kind]}_${EXAMPLE_ULID}`;
  return { type: 'string', pattern: `^${ID_PREFIX[kind]}_${ULID}$`, description: `Identifier of ${what}: \`${ID_PREFIX[kind]}_\` and a lower-case ULID, so ids sort by creation time.`, examples: [id] };
}

/** Matches the names `maskConfig` (api/routes/ingesters.ts) masks: /secret|token|password|key/i. */
const SECRET_KEY_PATTERN = ['secret', 'token', 'password', 'key'].map((w) => [...w].map((c) => `[${c}${c.toUpperCase()}]`).join('')).join('|');
const BASE64_PATTERN = '(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?';
const HEADER_TOKEN_PATTERN = "^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$";

// ---------------------------------------------------------------------------------------------
// schemas

function problem(errorBase: string, slug: ErrorSlug, description: string, extra: { properties?: Json; required?: string[] } = {}): Json {
  return {
    type: 'object',
    description: `RFC 9457 problem document of type \`${slug}\`. ${description}`,
    required: ['type', 'title', 'status', 'detail', 'instance', ...(extra.required ?? [])],
    properties: {
      type: { type: 'string', format: 'uri', const: `${errorBase}/errors/${slug}` },
      title: { type: 'string', const: TITLE_OF[slug] },
      status: { type: 'integer', const: STATUS_OF[slug] },
      detail: { type: 'string', description: 'What went wrong, for a human.' },
      instance: schema('RequestId'),
      ...(extra.properties ?? {}),
    },
    additionalProperties: false,
  };
}

const QUOTA_NAMES = Object.keys(QUOTA_KINDS);

const PROBLEM_SCHEMA_OF: Record<Exclude<ErrorSlug, 'method-not-allowed'>, string> = {
  'validation-error': 'ValidationProblem',
  unauthorized: 'UnauthorizedProblem',
  'insufficient-scope': 'InsufficientScopeProblem',
  'permission-denied': 'PermissionDeniedProblem',
  'write-tool-disabled': 'WriteToolDisabledProblem',
  'quota-exceeded': 'QuotaExceededProblem',
  'tenant-suspended': 'TenantSuspendedProblem',
  'not-found': 'NotFoundProblem',
  'not-acceptable': 'NotAcceptableProblem',
  conflict: 'ConflictProblem',
  'idempotency-conflict': 'IdempotencyConflictProblem',
  'precondition-failed': 'PreconditionFailedProblem',
  'payload-too-large': 'PayloadTooLargeProblem',
  'unsupported-media-type': 'UnsupportedMediaTypeProblem',
  'unprocessable-entity': 'UnprocessableEntityProblem',
  'request-header-fields-too-large': 'RequestHeaderFieldsTooLargeProblem',
  'rate-limit-exceeded': 'RateLimitProblem',
  'internal-error': 'InternalErrorProblem',
  'service-unavailable': 'ServiceUnavailableProblem',
};

function problemSchemas(errorBase: string): Json {
  const p = (slug: ErrorSlug, description: string, extra?: { properties?: Json; required?: string[] }) => problem(errorBase, slug, description, extra);
  return {
    Problem: {
      type: 'object',
      description: 'RFC 9457 problem document as every error of this API is sent (`application/problem+json`). `type` is `<ERROR_BASE>/errors/<slug>`, `instance` the request id (also the `X-Request-Id` header). Each slug has its own schema below, with the extra members it carries.',
      required: ['type', 'title', 'status', 'detail', 'instance'],
      properties: {
        type: { type: 'string', format: 'uri' },
        title: { type: 'string' },
        status: { type: 'integer', minimum: 400, maximum: 599 },
        detail: { type: 'string' },
        instance: schema('RequestId'),
      },
    },
    FieldError: {
      type: 'object',
      required: ['field', 'message'],
      properties: {
        field: { type: 'string', description: 'The member at fault: a body member (`name`, `config.signing_secret`, `filters[0].op`, `destination_ids[1]`), `body` for the body as a whole, a query parameter (`limit`, `cursor`) or the `Idempotency-Key` header.' },
        message: { type: 'string' },
      },
      additionalProperties: false,
    },
    ValidationProblem: p('validation-error', 'A malformed request: body not valid JSON or not an object, a required member missing, a wrong type, an out-of-range `limit`, a cursor not issued by this API or issued for other filters, an `Idempotency-Key` that is not 1 to 255 printable ASCII characters. Every problem of the request is listed in `errors`.', {
      properties: { errors: { type: 'array', minItems: 1, items: schema('FieldError') } },
      required: ['errors'],
    }),
    UnauthorizedProblem: p('unauthorized', 'The `Authorization` header is missing, not `Bearer <API key>`, or the key is unknown or expired.'),
    InsufficientScopeProblem: p('insufficient-scope', 'The API key lacks the scope the operation needs.', {
      properties: { required_scope: { type: 'string', enum: [...SCOPES] } },
      required: ['required_scope'],
    }),
    PermissionDeniedProblem: p('permission-denied', 'The key holds the scope but is limited to some resource ids, and this object is not one of them.', {
      properties: { resource_id: { type: 'string' } },
      required: ['resource_id'],
    }),
    WriteToolDisabledProblem: p('write-tool-disabled', 'The write group (the write scope) of this operation is switched off on this deployment (`DISABLED_WRITE_GROUPS`).', {
      properties: { tool_group: { type: 'string', enum: SCOPES.filter((s) => s.startsWith('write:')) } },
      required: ['tool_group'],
    }),
    QuotaExceededProblem: p('quota-exceeded', 'The tenant already holds as many objects of this kind as it may (`MAX_DESTINATIONS_PER_TENANT` and the like); delete some before creating more.', {
      properties: { quota: { type: 'string', enum: [...QUOTA_NAMES, 'portal_sessions'] }, limit: { type: 'integer', minimum: 1 } },
      required: ['quota', 'limit'],
    }),
    TenantSuspendedProblem: p('tenant-suspended', 'The tenant is suspended by its operator: its Hook URLs accept nothing and its deliveries are held (none lost) until it is resumed.'),
    NotFoundProblem: p('not-found', 'The resource does not exist, or the path names another tenant than the key\'s own (which looks exactly the same), or no route matches.'),
    NotAcceptableProblem: p('not-acceptable', 'The MCP endpoint was asked for answers it does not give: its `Accept` header must list both `application/json` and `text/event-stream`.'),
    ConflictProblem: p('conflict', 'The request conflicts with the current state (a destination name already in use; an event with nothing left to retry).'),
    IdempotencyConflictProblem: p('idempotency-conflict', 'The `Idempotency-Key` was already used by this API key with a different request (method, path or body), or a request with the same key is still running after 10 s.', {
      properties: { idempotency_key: { type: 'string' } },
      required: ['idempotency_key'],
    }),
    PreconditionFailedProblem: p('precondition-failed', 'The `If-Match` header names another version than the current one (its `ETag`): the object changed since it was read. Read it again and retry.'),
    PayloadTooLargeProblem: p('payload-too-large', 'The request body is larger than allowed.'),
    UnsupportedMediaTypeProblem: p('unsupported-media-type', 'The request body is not `application/json` (or `+json`), or its content encoding or charset is not supported.'),
    UnprocessableEntityProblem: p('unprocessable-entity', 'A well-formed request with a value the API cannot use: an unknown `status` or `level` filter, or a body member that is well-formed but refused (each such member is named in `errors`).', {
      properties: { errors: { type: 'array', minItems: 1, items: schema('FieldError') } },
    }),
    RequestHeaderFieldsTooLargeProblem: p('request-header-fields-too-large', `The request line and headers together are larger than the server accepts (Node's limit, ${maxHeaderSize} bytes by default); refused before any route runs, so on every path.`),
    RateLimitProblem: p('rate-limit-exceeded', 'The API key sent more requests to this route than its limit allows (`RATE_LIMITS`). The `Retry-After` header carries the same number of seconds.', {
      properties: { retry_after_seconds: { type: 'integer', minimum: 1 } },
      required: ['retry_after_seconds'],
    }),
    InternalErrorProblem: p('internal-error', 'An unexpected error (including an unreachable Kafka or ClickHouse during the request); quote `instance` when reporting it.'),
    ServiceUnavailableProblem: p('service-unavailable', 'The service is still starting (its dependencies are not up yet), the idempotency store (Redis) is unreachable, or (at a Hook URL) Kafka did not acknowledge the event in time. `retry_after_seconds`, when present, is the `Retry-After` header\'s number of seconds.', {
      properties: { retry_after_seconds: { type: 'integer', minimum: 1 } },
    }),
  };
}

const retrySchedule: Json = {
  type: 'array',
  minItems: 1,
  maxItems: MAX_SCHEDULE_ATTEMPTS,
  // a bad wait is a problem of the schedule as a whole, reported on `retry_schedule_ms`
  items: { type: 'integer', minimum: 0, maximum: MAX_SCHEDULE_WAIT_MS, 'x-problem-of-array': true },
  description: 'Waits in milliseconds before each attempt (entry i is the wait before attempt i + 1; the first is usually 0). ±10% jitter is added. `null` uses the service\'s `RETRY_SCHEDULE`.',
  examples: [[0, 5000, 300000]],
};

const nameInput: Json = { type: 'string', minLength: 1, maxLength: MAX_ENTITY_NAME, pattern: '\\S', 'x-pattern-message': 'must not be empty', description: `Not blank, at most ${MAX_ENTITY_NAME} characters; stored trimmed.` };

const destinationUrlInput: Json = { type: 'string', minLength: 1, maxLength: MAX_URL_LENGTH, description: 'Where deliveries go, without credentials (they go in `auth`): for a `webhook`, the absolute http or https URL that receives them; for a broker type, the broker\'s address in that type\'s scheme (`kafka://host:port,host:port`, `amqp[s]://host[:port][/vhost]`, `nats://host[:port]`, `mqtt[s]://host[:port]`; GET /v1/destination-types). Addresses outside the public internet are refused (422 here, and again on every connection, so a name whose DNS changes later is refused at delivery) unless `DESTINATION_ALLOWED_NETWORKS` allows them; a name must resolve; this service\'s own listener and `PUBLIC_BASE_URL` are always refused.' };
const destinationNameInput: Json = { ...nameInput, description: `Unique in the tenant, compared case-insensitively after trimming (409 conflict otherwise, also under concurrent creates). At most ${MAX_ENTITY_NAME} characters.` };

const destinationProperties: Json = {
  id: schema('DestinationId'),
  name: { type: 'string' },
  type: schema('DestinationType'),
  url: { type: 'string', description: 'The receiver\'s address: the HTTP endpoint, or the broker\'s.' },
  config: schema('DestinationConfig'),
  transformation: schema('Transformation'),
  status: { type: 'string', enum: ['active', 'paused', 'disabled'], description: '`active` after creation; `paused` while an operator has it switched off (`enabled: false`); `disabled` once the receiver answered 410 Gone (see `disabled_reason`). Only `active` delivers.' },
  enabled: { type: 'boolean', description: 'Whether the destination delivers: `true` exactly when `status` is `active`.' },
  created_at: schema('Timestamp'),
  updated_at: schema('Timestamp'),
  disabled_reason: { type: ['string', 'null'] },
  retry_schedule_ms: nullable(schema('RetrySchedule')),
  auth: nullable(schema('DestinationAuthShown')),
  rate_limit_per_s: nullable(schema('RateLimitPerSecond')),
  ordered: { type: 'boolean', description: 'Whether deliveries go one at a time, in the order they were routed (see `DestinationOrdered`).' },
  event_types: nullable(schema('EventTypeSubscription')),
  filter: nullable(schema('Filters')),
  previous_secret_expires_at: { anyOf: [schema('Timestamp'), { type: 'null' }], description: 'Until when the signing secret replaced by the last rotation still signs beside the new one; `null` when no rotation kept one.' },
};
const destinationRequired = ['id', 'name', 'type', 'url', 'config', 'transformation', 'status', 'enabled', 'created_at', 'updated_at', 'disabled_reason', 'retry_schedule_ms', 'auth', 'rate_limit_per_s', 'ordered', 'event_types', 'filter', 'previous_secret_expires_at'];

/** Members a destination body may carry beside name, url, schedule and credentials (create, patch, replace). */
function destinationSettings(): Json {
  return {
    enabled: { type: 'boolean', description: '`false` pauses the destination (`status` `paused`); `true` makes it `active` again, also after the service disabled it on 410 Gone (clearing `disabled_reason`). Sent as the destination shows it, it changes nothing. Default `true`.' },
    rate_limit_per_s: nullable(schema('RateLimitPerSecond')),
    ordered: schema('DestinationOrdered'),
    event_types: nullable(schema('EventTypeSubscription')),
    filter: { ...nullable(schema('Filters')), description: 'Conditions on the event an event must meet to be delivered here, in the exact form of ingester filters (all rules must pass); `null`: none. Patterns the RE2 engine refuses answer 422.' },
  };
}

/** The members a GET shows that the service sets, as a change of the destination may carry them. */
const shownAsIs = (names: string[]): Record<string, Json> =>
  Object.fromEntries(names.map((n) => [n, { readOnly: true, description: 'Shown by a GET and set by the service: accepted when equal to the current value; any other value answers 422 naming it.' }]));
const DESTINATION_READ_ONLY = ['id', 'status', 'created_at', 'updated_at', 'disabled_reason', 'previous_secret_expires_at'];

function destinationChangeSchemas(): Json {
  const members = (): Json => ({
    ...shownAsIs(DESTINATION_READ_ONLY),
    name: destinationNameInput,
    type: schema('DestinationType'),
    url: destinationUrlInput,
    config: schema('DestinationConfig'),
    transformation: schema('Transformation'),
    retry_schedule_ms: nullable(schema('RetrySchedule')),
    auth: { ...nullable(schema('DestinationAuth')), description: 'Credentials; a secret sent as a GET shows it (masked) keeps the stored secret.' },
    ...destinationSettings(),
  });
  const memberChange: Json = { type: 'object', required: ['from', 'to'], properties: { from: {}, to: {} }, additionalProperties: false };
  return {
    RateLimitPerSecond: { type: 'integer', minimum: 1, maximum: 10_000, description: 'Most delivery attempts per second to this destination, across all processes; `null`: no limit.' },
    DestinationOrdered: {
      type: 'boolean', default: false,
      description: '`true`: deliveries to this destination are keyed by it (one partition of `deliveries.requested`, read by one deliver process) and go one at a time, in the order they were routed (the order accepted when the ingesters feeding it are `ordered` too). A failing delivery is retried in line, the next ones waiting, for up to `DELIVERY_ORDERED_WAIT_MS` (60 s) from its first attempt; past that it leaves the line and arrives after later ones. Throughput: one request at a time to the destination, one partition, one process. Applies to deliveries routed after the change. `false` (default): deliveries keyed by event, spread over every partition and process, up to `DELIVERY_PER_DESTINATION` at once. See docs/ordering.md.',
    },
    EventTypeSubscription: {
      type: 'array', maxItems: 100, uniqueItems: true,
      items: { type: 'string', minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9._:*-]+$', 'x-pattern-message': 'must be letters, digits and . _ : * -' },
      description: 'The event types this destination receives; a trailing `*` is a prefix wildcard (`invoice.*`). `null`: every type of its delivery flows. The service\'s own operational events (`destination.disabled`, `destination.breaker_opened`, `delivery.exhausted`, `replay.completed`) go only to destinations that name them explicitly (`destination.*` counts; `null` and `*` do not), with or without a flow.',
    },
    DestinationPatch: {
      type: 'object',
      description: 'A JSON merge patch (RFC 7396, sent as `application/merge-patch+json` or `application/json`): the members given replace the stored ones, `null` resets a nullable member to its default, members left out stay. A rename claims the new name (409 when taken). Members the service sets may be sent as a GET shows them; a different value answers 422. A member this body does not have answers 422 naming it; a wrong type 400.',
      required: [],
      additionalProperties: false,
      properties: members(),
    },
    DestinationReplace: {
      type: 'object',
      description: 'The whole destination: `name` and `url` are required; optional members left out take their defaults (`enabled` true, the others `null`). Members the service sets may be sent as a GET shows them; a different value answers 422. A member this body does not have answers 422 naming it; a wrong type 400.',
      required: ['name', 'url'],
      additionalProperties: false,
      properties: members(),
    },
    SecretRotation: {
      type: 'object',
      description: 'How long the old signing secret keeps signing beside the new one. The body may be left out.',
      required: [],
      additionalProperties: false,
      properties: { overlap_seconds: { type: 'integer', minimum: 0, maximum: 604_800, default: 86_400, description: 'Seconds during which every delivery carries both signatures (`v1,<new> v1,<old>`); 0 drops the old secret at once. Default one day.' } },
    },
    SecretRotated: {
      type: 'object',
      description: 'The new signing secret, shown in this answer only.',
      required: ['id', 'signing_secret', 'previous_secret_expires_at'],
      properties: {
        id: schema('DestinationId'),
        signing_secret: { type: 'string', pattern: `^whsec_${BASE64_PATTERN}$`, description: 'The new Standard Webhooks secret (`whsec_` + base64).' },
        previous_secret_expires_at: { anyOf: [schema('Timestamp'), { type: 'null' }], description: 'Until when the old secret still signs; `null` with an overlap of 0.' },
      },
      additionalProperties: false,
    },
    ChangeId: typedId('change', 'a change of a destination'),
    DestinationChange: {
      type: 'object',
      description: 'One change of a destination: who made it, when, why when the service made it itself, and each member that moved. Credentials are shown masked; signing secrets never appear (a rotation shows `previous_secret_expires_at`).',
      required: ['id', 'at', 'actor', 'action', 'changes', 'cause'],
      properties: {
        id: schema('ChangeId'),
        at: schema('Timestamp'),
        actor: {
          description: `The API key that made the change, or \`${DELIVERY_STAGE_ACTOR}\`: the delivery stage, which disables a destination whose receiver answered 410 Gone (action \`disabled\`, with \`cause\`).`,
          anyOf: [schema('ApiKeyId'), { type: 'string', const: DELIVERY_STAGE_ACTOR }],
        },
        action: { type: 'string', enum: [...CHANGE_ACTIONS] },
        changes: { type: 'object', additionalProperties: memberChange, description: 'By member: its value before (`from`) and after (`to`), as a GET shows values.' },
        cause: {
          description: 'Why the service made the change itself: the delivery attempt whose answer (`response_code`, 410) disabled the destination. `null` for a change made through the API.',
          anyOf: [
            {
              type: 'object',
              required: ['delivery_id', 'event_id', 'attempt_number', 'response_code'],
              properties: { delivery_id: schema('DeliveryId'), event_id: schema('EventId'), attempt_number: { type: 'integer', minimum: 1 }, response_code: { type: ['integer', 'null'] } },
              additionalProperties: false,
            },
            { type: 'null' },
          ],
        },
      },
      additionalProperties: false,
    },
    DestinationChangeList: listOf('changes', 'DestinationChange', 'newest first'),
  };
}

const authSecret = (what: string, spaces = true, min: number = AUTH_LIMITS.secretMin): Json => ({
  type: 'string', minLength: min, maxLength: AUTH_LIMITS.secret,
  ...(spaces
    ? { pattern: '^[\\x21-\\x7e]([\\x20-\\x7e]*[\\x21-\\x7e])?$', 'x-pattern-message': 'must be printable ASCII without leading or trailing spaces' }
    : { pattern: '^[\\x21-\\x7e]+$', 'x-pattern-message': 'must be printable ASCII without spaces' }),
  description: `${what}: printable ASCII, ${min} to ${AUTH_LIMITS.secret} characters. Stored encrypted; shown masked (\`****\` and its last 4 characters at most, never more than a quarter of it).` });
const masked: Json = { type: 'string', pattern: '^\\*{4}[\\s\\S]{0,4}$', description: '`****` and the last characters of the secret: never more than a quarter of it, at most 4 (`****` alone under 4 characters).' };
const authVariants = (secretOf: (what: string, spaces?: boolean, min?: number) => Json): Record<string, Json> => ({
  basic: { type: 'object', title: 'basic', required: ['type', 'username', 'password'], additionalProperties: false, properties: { type: { const: 'basic' }, username: { type: 'string', minLength: 1, maxLength: AUTH_LIMITS.username, pattern: '^[\\x20-\\x39\\x3b-\\x7e]+$', 'x-pattern-message': 'must be printable ASCII without ":"', description: 'Printable ASCII without ":".' }, password: secretOf('The password (a broker\'s may be short)', true, 1) }, description: '`Authorization: Basic base64(username:password)` on every delivery to a webhook; a broker type\'s user and password (Kafka SASL, AMQP, NATS, MQTT).' },
  bearer: { type: 'object', title: 'bearer', required: ['type', 'token'], additionalProperties: false, properties: { type: { const: 'bearer' }, token: secretOf('The token (no spaces)', false) }, description: '`Authorization: Bearer <token>` on every delivery to a webhook; a NATS destination\'s token.' },
  header: { type: 'object', title: 'header', required: ['type', 'name', 'value'], additionalProperties: false, properties: { type: { const: 'header' }, name: { type: 'string', minLength: 1, maxLength: AUTH_LIMITS.headerName, pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$", 'x-pattern-message': 'must be a header name (an HTTP token)', description: 'A header name (stored lower-case), not one the service sets itself (content-type, user-agent, webhook-*, x-correlation-id, hop-by-hop headers).' }, value: secretOf('The header value') }, description: '`<name>: <value>` on every delivery.' },
});

/**
 * `auth` as sent, or as shown: each type a component of its own, which the discriminator maps its
 * `type` to. An inline form is one the discriminator cannot select (Redoc would show none of them).
 */
function authSchemas(name: string, variants: Record<string, Json>, description: string): Json {
  const componentOf = (type: string) => `${name}${type[0]!.toUpperCase()}${type.slice(1)}`;
  const types = Object.keys(variants);
  return {
    [name]: {
      description,
      type: 'object',
      oneOf: types.map((t) => schema(componentOf(t))),
      discriminator: { propertyName: 'type', mapping: Object.fromEntries(types.map((t) => [t, `#/components/schemas/${componentOf(t)}`])) },
    },
    ...Object.fromEntries(types.map((t) => [componentOf(t), variants[t]])),
  };
}

const attemptProperties: Json = {
  attempt_number: { type: 'integer', minimum: 1, description: 'Number of the attempt within its delivery, from 1.' },
  status: schema('DeliveryStatus'),
  response_code: { type: ['integer', 'null'], minimum: 100, maximum: 599, description: 'HTTP status the destination answered; `null` when no answer came (timeout, connection error, refused by the SSRF guard).' },
  attempted_at: schema('Timestamp'),
  body_sha256: { ...schema('Sha256Hex'), description: 'SHA-256 of the body that was sent; with the other fields it rebuilds the attempt\'s evidence leaf.' },
  error_message: { type: 'string', description: 'Why the attempt failed; absent on success.' },
  trace_id: { type: ['string', 'null'], pattern: '^[0-9a-f]{32}$', description: 'The W3C trace id of the attempt: the trace its event\'s spans and log lines share, begun at the Hook URL (from the webhook\'s `traceparent` when it sent one) and sent to the destination in the `traceparent` header. `null` for an attempt recorded without one.' },
};
const attemptRequired = ['attempt_number', 'status', 'response_code', 'attempted_at', 'body_sha256', 'trace_id'];
const deliveryProperties: Json = {
  id: { ...schema('DeliveryId'), description: 'The delivery (the `webhook-id` the destination received). Every attempt of one delivery carries the same id.' },
  event_id: schema('EventId'),
  destination_id: schema('DestinationId'),
  ...attemptProperties,
};
const deliveryRequired = ['id', 'event_id', 'destination_id', ...attemptRequired];

function filterSchemas(): Json {
  const str = (min: 0 | 1): Json => ({ type: 'string', minLength: min, maxLength: MAX_STRING_LENGTH });
  const list = (items: Json): Json => ({ type: 'array', minItems: 1, maxItems: MAX_VALUES, items });
  const rule = (type: string, ops: readonly string[], members: Json): Json => ({
    type: 'object',
    required: ['type', 'op', ...Object.keys(members)],
    properties: { type: { const: type }, op: ops.length === 1 ? { const: ops[0] } : { enum: [...ops] }, ...members },
    additionalProperties: false,
  });
  const headerName: Json = { type: 'string', maxLength: MAX_NAME_LENGTH, pattern: HEADER_TOKEN_PATTERN, description: 'Header name, compared case-insensitively.' };
  const bodyPath: Json = { type: 'string', minLength: 1, maxLength: MAX_NAME_LENGTH, pattern: `^[^.]+(?:\\.[^.]+){0,${MAX_PATH_SEGMENTS - 1}}$`, description: `Dotted path into the JSON body, at most ${MAX_PATH_SEGMENTS} segments, like \`data.object.currency\`.` };
  return {
    FilterRule: {
      description: `One condition of an ingester's filters (or of a destination's subscription \`filter\`); all rules of the list must pass. Unknown members are refused (400). At most ${MAX_RULES} rules per ingester, nested ones included; \`any\` nests at most ${MAX_DEPTH} levels. The rule language is described in docs/filters.md.`,
      oneOf: [schema('EventTypeRule'), schema('HeaderRule'), schema('BodyRule'), schema('AnyRule')],
    },
    EventTypeRule: {
      description: 'A condition on the event type the provider reports (see the providers table).',
      oneOf: [rule('event_type', ['in', 'not_in'], { values: list(str(1)) }), rule('event_type', ['prefix', 'glob'], { value: str(1) })],
    },
    HeaderRule: {
      description: 'A condition on a request header of the webhook.',
      oneOf: [
        rule('header', ['equals', 'not_equals'], { name: headerName, value: str(0) }),
        rule('header', HEADER_VALUE_OPS.filter((o) => o !== 'equals' && o !== 'not_equals'), { name: headerName, value: str(1) }),
        rule('header', PRESENCE_OPS, { name: headerName }),
        rule('header', ['in'], { name: headerName, values: list(str(0)) }),
        rule('header', ['matches'], { name: headerName, pattern: { type: 'string', minLength: 1, maxLength: MAX_PATTERN_LENGTH, description: `An RE2 regular expression, matched in time linear in the header's length. Backreferences, lookaround and possessive quantifiers do not exist in RE2; a pattern RE2 cannot compile, or that compiles to more than ${MAX_PROGRAM_SIZE} instructions (${MAX_TOTAL_PROGRAM_SIZE} for all patterns of the ingester), answers 422 naming it.` } }),
      ],
    },
    BodyRule: {
      description: 'A condition on a member of the JSON body.',
      oneOf: [
        rule('body', ['equals', 'not_equals'], { path: bodyPath, value: schema('JsonScalar') }),
        rule('body', ['in'], { path: bodyPath, values: list(schema('JsonScalar')) }),
        rule('body', PRESENCE_OPS, { path: bodyPath }),
        rule('body', ['matches'], { path: bodyPath, pattern: { type: 'string', minLength: 1, maxLength: MAX_PATTERN_LENGTH, description: `An RE2 regular expression matched against the string at \`path\` (any other value fails), in time linear in its length. Same bounds as header patterns: more than ${MAX_PROGRAM_SIZE} instructions, or ${MAX_TOTAL_PROGRAM_SIZE} for all patterns of the list, answers 422 naming it.` } }),
      ],
    },
    AnyRule: {
      type: 'object',
      description: 'Passes when any of its rules passes.',
      required: ['type', 'rules'],
      properties: { type: { const: 'any' }, rules: { type: 'array', minItems: 1, maxItems: MAX_RULES, items: schema('FilterRule') } },
      additionalProperties: false,
    },
    JsonScalar: { type: ['string', 'number', 'boolean', 'null'], maxLength: MAX_STRING_LENGTH },
    Filters: { type: 'array', maxItems: MAX_RULES, items: schema('FilterRule') },
  };
}

function ingesterSchemas(): Json {
  const providerTable = [
    '| provider | config |',
    '|---|---|',
    `| generic | \`signing_secret\` or \`signing_secrets\`; \`header\` (default x-webhook-signature), \`algorithm\` (${GENERIC_ALGORITHMS.join(', ')}), \`encoding\` (${GENERIC_ENCODINGS.join(', ')}), \`prefix\`; \`event_type_header\` or \`event_type_field\` |`,
    `| stripe | \`signing_secret\` or \`signing_secrets\`; \`tolerance_seconds\` (default ${DEFAULT_TOLERANCE_SECONDS}) |`,
    '| github | `signing_secret` or `signing_secrets`; `allow_sha1` |',
    '| shopify | `signing_secret` or `signing_secrets` |',
    `| slack | \`signing_secret\` or \`signing_secrets\`; \`tolerance_seconds\` (default ${DEFAULT_TOLERANCE_SECONDS}) |`,
    `| standard-webhooks | \`signing_secret\` or \`signing_secrets\`, each \`whsec_\` + base64; \`tolerance_seconds\` (default ${DEFAULT_TOLERANCE_SECONDS}) |`,
    '| none | `event_type_header` or `event_type_field` (nothing is verified) |',
  ].join('\n');
  const whsec: Json = { type: 'string', minLength: 1, pattern: `^(?:whsec_)?${BASE64_PATTERN}$`, not: { const: 'whsec_' } };
  const maskedValue: Json = { type: 'string', pattern: '^\\*{4}[\\s\\S]{0,4}$' };
  const flowOfIngester: Json = {
    type: 'object',
    required: ['id', 'name', 'destination_ids'],
    properties: { id: schema('FlowId'), name: { type: 'string' }, destination_ids: { type: 'array', items: schema('DestinationId') } },
    additionalProperties: false,
  };
  const flowEntry: Json = {
    type: 'object',
    required: ['destination_ids'],
    additionalProperties: false,
    properties: {
      id: { type: 'string', description: 'On an update: the id of one of this ingester\'s flows, which the entry rewrites (400 for any other id). On a create it is ignored (a new flow is made).' },
      name: { ...nameInput, description: 'Unset: the flow keeps its name, or a new one is named "<ingester name> default" (the first) or "<ingester name> <n>".' },
      destination_ids: { type: 'array', items: { type: 'string' }, description: 'Destinations of the tenant (each must exist, else 400); duplicates are dropped.' },
    },
  };
  const createOrUpdate = (create: boolean): Json => ({
    type: 'object',
    description: create
      ? 'A new ingester. `config` must satisfy the provider (every provider but `none` needs a signing secret). `destination_ids`, when not empty, creates a delivery flow named "<name> default" to those destinations; `delivery_flows` (as a GET shows them) creates one flow per entry. Members a GET shows that the service sets (`id`, `hook_url`, `created_at`, `updated_at`) are accepted and left as the service sets them; any other member is refused (400).'
      : 'An update: `name` is required; `provider`, `config`, `filters` and `ordered` replace the stored ones when given and are kept otherwise. A config sent back as it was shown keeps its secrets (a masked value equal to the mask of the stored one stands for the stored one). `destination_ids` replaces the destinations of the ingester\'s first delivery flow (creating one when it has none); `delivery_flows` replaces its flows: an entry with the id of one of them rewrites it, one without makes a new flow, and the flows left out are deleted. Members a GET shows that the service sets (`id`, `hook_url`, `created_at`, `updated_at`) are accepted and left as they are; any other member is refused (400).',
    required: create ? ['name', 'provider'] : ['name'],
    additionalProperties: false,
    properties: {
      name: nameInput,
      provider: schema('Provider'),
      config: schema('ProviderConfig'),
      filters: schema('Filters'),
      ordered: schema('IngesterOrdered'),
      destination_ids: { type: 'array', items: { type: 'string' }, description: 'Destinations of the tenant (each must exist, else 400); duplicates are dropped. With the other flows of the ingester at most `MAX_FANOUT` (default 50) distinct destinations, else 422. Not together with `delivery_flows` (400).' },
      delivery_flows: { type: 'array', items: flowEntry, description: 'The ingester\'s delivery flows, in the shape a GET shows them. At most `MAX_FANOUT` distinct destinations across them, else 422.' },
      ...shownBack(['id', 'hook_url', 'created_at', 'updated_at']),
    },
    ...(create
      ? {
          allOf: [
            {
              if: { required: ['provider'], properties: { provider: { const: 'none' } } },
              else: { required: ['config'], properties: { config: { anyOf: [{ required: ['signing_secret'] }, { required: ['signing_secrets'], properties: { signing_secrets: { minItems: 1 } } }] } } },
            },
            {
              if: { required: ['provider'], properties: { provider: { const: 'standard-webhooks' } } },
              then: { properties: { config: { properties: { signing_secret: whsec, signing_secrets: { items: whsec } } } } },
            },
          ],
        }
      : {}),
  });
  return {
    Provider: { type: 'string', enum: [...PROVIDERS], description: 'How webhooks of the ingester are verified and where their event type comes from.' },
    ProviderConfig: {
      type: 'object',
      description: `Provider settings, checked when written (400 with \`config.<member>\` fields). Unknown members are kept.\n\n${providerTable}`,
      properties: {
        signing_secret: { type: 'string', minLength: 1 },
        signing_secrets: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'Several secrets valid at once (rotation); any one matching verifies.' },
        header: { type: 'string', minLength: 1, description: 'generic: the header carrying the signature.' },
        algorithm: { type: 'string', enum: [...GENERIC_ALGORITHMS] },
        encoding: { type: 'string', enum: [...GENERIC_ENCODINGS] },
        prefix: { type: 'string', description: 'generic: text before the signature in the header, e.g. `sha256=`.' },
        tolerance_seconds: { type: 'integer', minimum: 1, maximum: MAX_TOLERANCE_SECONDS },
        event_type_header: { type: 'string', minLength: 1 },
        event_type_field: { type: 'string', minLength: 1 },
        allow_sha1: { type: 'boolean' },
      },
    },
    MaskedProviderConfig: {
      type: 'object',
      description: 'The provider settings as the API shows them: the value of every member whose name contains secret, token, password or key (any case) is masked as `****` and its last characters, never more than a quarter of the value and at most four (arrays item by item); other members are shown as stored.',
      patternProperties: { [SECRET_KEY_PATTERN]: { anyOf: [maskedValue, { type: 'array', items: maskedValue }] } },
    },
    IngesterOrdered: {
      type: 'boolean', default: false,
      description: '`true`: the ingester\'s events are keyed by it on `webhooks.received`, `.validated` and `.filtered` (one partition), so validate, filter and route keep the order they were accepted in (the order Kafka acknowledged them: the order of the 2xx answers for webhooks sent one after another), and their deliveries are routed in that order. Throughput: one partition, one validating process. Applies to webhooks accepted after the change. `false` (default): keyed by event, spread over every partition. Delivery in that order also needs the destination `ordered`. See docs/ordering.md.',
    },
    IngesterCreate: createOrUpdate(true),
    IngesterUpdate: createOrUpdate(false),
    Ingester: {
      type: 'object',
      required: ['id', 'name', 'provider', 'config', 'hook_url', 'filters', 'ordered', 'delivery_flows', 'created_at', 'updated_at'],
      properties: {
        id: schema('IngesterId'),
        name: { type: 'string' },
        provider: schema('Provider'),
        config: schema('MaskedProviderConfig'),
        hook_url: { type: 'string', format: 'uri', pattern: `/v1/hooks/${ID_PREFIX.ingester}_${ULID}$`, description: 'The Hook URL senders POST webhooks to: `<PUBLIC_BASE_URL>/v1/hooks/{ingester_id}`.' },
        filters: schema('Filters'),
        ordered: { type: 'boolean', description: 'Whether its events keep the order they were accepted in (see `IngesterOrdered`).' },
        delivery_flows: { type: 'array', items: flowOfIngester, description: 'The delivery flows of this ingester.' },
        created_at: schema('Timestamp'),
        updated_at: schema('Timestamp'),
      },
      additionalProperties: false,
    },
    IngesterList: listOf('ingesters', 'Ingester', 'by id (creation time), oldest first'),
  };
}

function apiKeySchemas(): Json {
  const shown: Json = {
    id: schema('ApiKeyId'),
    name: { type: ['string', 'null'], description: 'What the key is for; `null` for keys issued without a name.' },
    scopes: { type: 'array', items: { type: 'string', enum: [...SCOPES] }, description: 'What the key may do.' },
    resource_ids: { type: ['array', 'null'], items: { type: 'string' }, description: 'When set, the key may act only on these resource ids.' },
    created_at: schema('Timestamp'),
    expires_at: nullable(schema('Timestamp')),
    revoked_at: { ...nullable(schema('Timestamp')), description: 'When the key was revoked; a revoked key stays listed and is refused (401) by every process of the deployment.' },
    last_used_at: { ...nullable(schema('Timestamp')), description: 'When the key last authenticated a request, accurate to about `API_KEY_LAST_USED_INTERVAL_SECONDS` (default 60 s); `null` when never used.' },
    status: { type: 'string', enum: ['active', 'expired', 'revoked'], description: '`revoked` once revoked (whatever its expiry), else `expired` past `expires_at`, else `active`.' },
  };
  const required = Object.keys(shown);
  return {
    ApiKeyCreate: {
      type: 'object',
      description: 'A new API key. A key grants at most what the key making the request holds: a scope it lacks is 403 insufficient-scope (`required_scope`); a resource id outside its own `resource_ids` is 403 permission-denied (and a limited key\'s new key is limited to its ids when none are given); it cannot outlive the calling key (400; an expiring key\'s new key expires with it when no `expires_at` is given). Other members are refused (400).',
      required: ['name', 'scopes'],
      properties: {
        name: nameInput,
        scopes: { type: 'array', minItems: 1, items: { type: 'string', enum: [...SCOPES] }, description: 'Scopes of the new key; duplicates are dropped.' },
        expires_at: { ...nullable({ type: 'string', format: 'date-time' }), description: `When the key stops working: in the future, at most ${MAX_KEY_LIFETIME_DAYS} days away. \`null\` or absent: it does not expire (unless the calling key does).` },
        resource_ids: { ...nullable({ type: 'array', maxItems: MAX_KEY_RESOURCES, items: { type: 'string', pattern: `^[a-z]{3}_${ULID}$`, 'x-pattern-message': 'is not a resource id (a typed id such as dst_<ulid>)' } }), description: `Limits the key to these resource ids (typed ids such as \`dst_<ulid>\`, at most ${MAX_KEY_RESOURCES}); \`null\` or absent: every resource of the tenant.` },
      },
      additionalProperties: false,
    },
    ApiKey: { type: 'object', description: 'An API key as shown: never its secret or the hash of it.', required, properties: shown, additionalProperties: false },
    ApiKeyCreated: {
      type: 'object',
      description: 'The key just created, with the plain API key: shown in this answer only (only its SHA-256 is stored).',
      required: [...required, 'api_key'],
      properties: { ...shown, api_key: { type: 'string', pattern: `^hlk_${ULID}_[A-Za-z0-9_-]{43}$`, description: 'The API key, `hlk_<ulid>_<secret>`: send it as `Authorization: Bearer <api_key>`.' } },
      additionalProperties: false,
    },
    ApiKeyList: listOf('api_keys', 'ApiKey', 'by id (creation time), oldest first; revoked and expired keys included'),
  };
}

function replaySchemas(): Json {
  const filterShown: Json = {
    from: schema('Timestamp'),
    to: schema('Timestamp'),
    destination_id: nullable(schema('DestinationId')),
    status: { type: ['string', 'null'], enum: ['delivered', 'failed', null] },
    event_type: { type: ['string', 'null'] },
  };
  const shown: Json = {
    id: schema('ReplayJobId'),
    filter: { type: 'object', description: 'What the job replays, as given (times in UTC).', required: Object.keys(filterShown), properties: filterShown, additionalProperties: false },
    status: { type: 'string', enum: ['running', 'completed', 'cancelled', 'failed'], description: '`running` until every match is queued and every queued delivery ended (`completed`), until cancelled (`cancelled`), or until `REPLAY_MAX_TRIES` (default 10) tries in a row failed (`failed`, the reason in `error`). A job ends once: of a cancel and the completion that meet, the one recorded first stands in every process, and the other is refused or dropped.' },
    matched: { type: 'integer', minimum: 0, description: 'Deliveries that matched when the job started.' },
    replayed: { type: 'integer', minimum: 0, description: 'Matches queued again as new deliveries so far; of a cancelled job, those queued before the cancel (a batch being sent at that moment included), and nothing is queued after it.' },
    delivered: { type: 'integer', minimum: 0, description: 'Deliveries of this job delivered; of a cancelled job, as it stood at the cancel (its deliveries still run, uncounted).' },
    failed: { type: 'integer', minimum: 0, description: 'Deliveries of this job that failed for good (no attempt left); of a cancelled job, as it stood at the cancel.' },
    skipped: { type: 'integer', minimum: 0, description: 'Matches not queued: their event is no longer stored, its body was removed by retention, or its stored body does not match the SHA-256 recorded at receipt.' },
    created_at: schema('Timestamp'),
    updated_at: schema('Timestamp'),
    finished_at: nullable(schema('Timestamp')),
    error: { type: ['string', 'null'], description: 'Why a `failed` job failed: how many tries failed in a row, and the last one\'s error (ClickHouse or Kafka unreachable, a query refused). `null` for every other status.' },
  };
  return {
    ReplayCreate: {
      type: 'object',
      description: `What to replay: every delivery whose latest attempt was made in [\`from\`, \`to\`) and ended (delivered, or failed with no attempt left; a delivery still retrying never matches), optionally only to one destination, with one final status, or of one event type. \`to\` must be later than \`from\`, at most ${MAX_REPLAY_RANGE_DAYS} days after it, and not later than now (422). Other members are refused (400).`,
      required: ['from', 'to'],
      properties: {
        from: { type: 'string', format: 'date-time', description: 'Start of the range (RFC 3339), included.' },
        to: { type: 'string', format: 'date-time', description: 'End of the range (RFC 3339), excluded. Not later than now (422, not clamped): a job replays what has happened, and counts its matches when it starts; deliveries made while it runs would match or not depending on when it reads them.' },
        destination_id: { ...nullable(schema('DestinationId')), description: 'Only deliveries to this destination (422 when the tenant has no such destination). Required with a key limited to resource ids.' },
        status: { type: ['string', 'null'], enum: ['delivered', 'failed', null], description: 'Only deliveries that ended so: `delivered`, or `failed` (dead).' },
        event_type: { type: ['string', 'null'], minLength: 1, maxLength: 200, description: 'Only deliveries of events of this type.' },
      },
      additionalProperties: false,
    },
    ReplayJob: { type: 'object', description: 'A replay job with its progress (written about once a second while it runs).', required: Object.keys(shown), properties: shown, additionalProperties: false },
    ReplayJobList: listOf('replays', 'ReplayJob', 'by id (creation time), oldest first; finished jobs included'),
  };
}

function listOf(member: string, item: string, order: string): Json {
  return {
    type: 'object',
    description: `One page, ${order}. Paged list envelope: the items under \`${member}\` and \`next_cursor\`.`,
    required: [member, 'next_cursor'],
    properties: { [member]: { type: 'array', items: schema(item) }, next_cursor: schema('NextCursor') },
    additionalProperties: false,
  };
}

function schemas(errorBase: string): Json {
  return {
    RequestId: { ...typedId('request', 'the request'), description: 'The request id, `req_` and a ULID: the `X-Request-Id` header of every answer and the `instance` of every problem document.' },
    Timestamp: { type: 'string', format: 'date-time', pattern: 'Z$', description: 'ISO 8601 UTC timestamp with milliseconds.', examples: ['2026-01-02T03:04:05.678Z'] },
    NextCursor: { type: ['string', 'null'], minLength: 1, description: 'Opaque keyset cursor of the next page (send it as `cursor` with the same filters); `null` on the last page.' },
    DestinationId: typedId('destination', 'a destination'),
    IngesterId: typedId('ingester', 'an ingester'),
    FlowId: typedId('flow', 'a delivery flow'),
    DeliveryId: typedId('delivery', 'a delivery'),
    EventId: typedId('event', 'an event'),
    SavedPayloadId: typedId('savedPayload', 'a saved payload'),
    ApiKeyId: typedId('apiKey', 'an API key'),
    ReplayJobId: typedId('replayJob', 'a replay job'),
    LogId: typedId('log', 'a log line'),
    ...problemSchemas(errorBase),

    RetrySchedule: retrySchedule,
    DestinationCreate: {
      type: 'object',
      description: 'A new destination. Members a GET shows that the service sets (`id`, `status`, `created_at`, `updated_at`, `disabled_reason`, `previous_secret_expires_at`) are accepted and left as the service sets them; any other member is refused (400).',
      required: ['name', 'url'],
      additionalProperties: false,
      properties: {
        ...shownBack(['id', 'status', 'created_at', 'updated_at', 'disabled_reason', 'previous_secret_expires_at']),
        ...destinationSettings(),
        name: destinationNameInput,
        type: schema('DestinationType'),
        url: destinationUrlInput,
        config: schema('DestinationConfig'),
        transformation: schema('Transformation'),
        retry_schedule_ms: nullable(schema('RetrySchedule')),
        auth: nullable(schema('DestinationAuth')),
      },
    },
    ...authSchemas('DestinationAuth', authVariants(authSecret), 'Credentials the receiver expects, sent on every delivery. Encrypted at rest; every later read shows the secret part masked. Problems are reported by field (`auth.password`), never echoing a value.'),
    ...authSchemas('DestinationAuthShown', authVariants(() => masked), 'The destination\'s credentials as shown: the secret part masked.'),
    Destination: {
      type: 'object',
      description: 'A destination (target). Its signing secret is never shown after creation.',
      required: destinationRequired,
      properties: destinationProperties,
      additionalProperties: false,
    },
    DestinationCreated: {
      type: 'object',
      description: 'The destination just created, with its Standard Webhooks signing secret: shown in this answer only.',
      required: [...destinationRequired, 'signing_secret'],
      properties: { ...destinationProperties, signing_secret: { type: 'string', pattern: `^whsec_${BASE64_PATTERN}$`, description: 'Secret of the `webhook-signature` header of every delivery (`whsec_` + base64).' } },
      additionalProperties: false,
    },
    DestinationList: listOf('destinations', 'Destination', 'by id (creation time), oldest first'),
    ...destinationChangeSchemas(),

    ...filterSchemas(),
    ...ingesterSchemas(),

    DeliveryFlowCreate: {
      type: 'object',
      description: 'A delivery flow: events of the ingester fan out to each of the destinations. Every id must exist in the tenant (400 otherwise). Members a GET shows that the service sets (`id`, `created_at`, `updated_at`) are accepted and left as the service sets them; any other member is refused (400).',
      required: ['name', 'ingester_id', 'destination_ids'],
      additionalProperties: false,
      properties: {
        ...shownBack(['id', 'created_at', 'updated_at']),
        name: nameInput,
        ingester_id: { type: 'string' },
        destination_ids: { type: 'array', items: { type: 'string' }, description: 'May be empty; duplicates are dropped. At most `MAX_FANOUT` (default 50) distinct destinations across the ingester\'s delivery flows, else 422.' },
      },
    },
    DeliveryFlowUpdate: {
      type: 'object',
      description: 'An update: `name` is required; `destination_ids` replaces the destinations when given. The ingester of a flow cannot change: an `ingester_id` other than its own is 400. Members a GET shows that the service sets (`id`, `created_at`, `updated_at`) are accepted and left as they are; any other member is refused (400).',
      required: ['name'],
      additionalProperties: false,
      properties: { name: nameInput, ingester_id: { type: 'string', description: 'Accepted when it is the flow\'s own ingester.' }, destination_ids: { type: 'array', items: { type: 'string' } }, ...shownBack(['id', 'created_at', 'updated_at']) },
    },
    DeliveryFlow: {
      type: 'object',
      required: ['id', 'name', 'ingester_id', 'destination_ids', 'created_at', 'updated_at'],
      properties: {
        id: schema('FlowId'),
        name: { type: 'string' },
        ingester_id: schema('IngesterId'),
        destination_ids: { type: 'array', items: schema('DestinationId') },
        created_at: schema('Timestamp'),
        updated_at: schema('Timestamp'),
      },
      additionalProperties: false,
    },
    DeliveryFlowList: listOf('delivery_flows', 'DeliveryFlow', 'by id (creation time), oldest first'),

    DeliveryStatus: { type: 'string', enum: [...DELIVERY_STATUSES], description: 'Status of an attempt: `delivered` (a 2xx, or the broker\'s acknowledgement), `retrying` (another attempt is scheduled), `failed` (final: retries exhausted, 410 Gone, refused target, or the destination is gone), `dropped` (final: the destination\'s transformation returned null; nothing was sent).' },
    DeliveryAttemptItem: {
      type: 'object',
      description: 'One delivery attempt. The deliveries list has one item per attempt: `id` is the delivery and repeats for each attempt of one delivery.',
      required: [...deliveryRequired, 'event_type'],
      properties: { ...deliveryProperties, event_type: { type: ['string', 'null'], description: 'Type of the attempt\'s event; `null` when it has none or the event is not recorded.' } },
      additionalProperties: false,
    },
    DeliveryAttempt: {
      type: 'object',
      required: [...attemptRequired, 'response_body'],
      properties: { ...attemptProperties, response_body: { type: ['string', 'null'], description: 'The first 4 KiB of the response body as UTF-8 text (invalid sequences replaced, so a body cut inside a character ends in U+FFFD); `null` when no answer came. Attempts recorded before bodies were kept show an empty string.' } },
      additionalProperties: false,
    },
    Delivery: {
      type: 'object',
      description: 'One delivery: the top-level status, response code, attempt number, time and error are those of its latest attempt; `attempts` lists every attempt, oldest first.',
      required: [...deliveryRequired, 'attempts'],
      properties: { ...deliveryProperties, attempts: { type: 'array', minItems: 1, items: schema('DeliveryAttempt') } },
      additionalProperties: false,
    },
    DeliveryList: listOf('deliveries', 'DeliveryAttemptItem', 'newest attempt first (by attempt time, then delivery id and attempt number)'),
    Sha256Hex: { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'A SHA-256 hash, 64 lowercase hexadecimal characters.' },
    EvidenceCheckpoint: {
      type: 'object',
      description: 'A signed checkpoint of the evidence log: `signed_note` is the C2SP tlog-checkpoint (origin, tree size, base64 root) signed with Ed25519 as a C2SP signed note; `tree_size` and `root_hash` repeat what it says.',
      required: ['tree_size', 'root_hash', 'signed_note', 'sealed_at'],
      properties: {
        tree_size: { type: 'integer', minimum: 1 },
        root_hash: schema('Sha256Hex'),
        signed_note: { type: 'string', pattern: '^[^\\n]+\\n[1-9][0-9]*\\n[A-Za-z0-9+/]{43}=\\n(?:[^\\n]+\\n)*\\n(?:\u2014 [^\\n]+\\n)+$' },
        sealed_at: schema('Timestamp'),
      },
      additionalProperties: false,
    },
    DeliveryEvidence: {
      description: 'Evidence of one delivery attempt (the latest sealed one unless `attempt` is given; `pending` when none is sealed yet). `confirmed`: the attempt is leaf `leaf_index` of the evidence log and `inclusion_proof` (RFC 9162 audit path, leaf to root) leads from `leaf_hash` to `integrity_root`, the root of the signed `checkpoint` of `tree_size` leaves (the newest, unless `tree_size` is given). `pending`: the outcome is recorded but not sealed yet; `leaf_hash` is the hash its leaf will have. The leaf bytes are the canonical JSON of the attempt described in docs/evidence.md.',
      oneOf: [
        {
          type: 'object',
          required: ['delivery_id', 'status', 'integrity_root', 'inclusion_proof', 'leaf_hash', 'timestamp', 'attempt_number', 'leaf_index', 'replay_of', 'tree_size', 'checkpoint'],
          properties: {
            delivery_id: schema('DeliveryId'),
            status: { const: 'confirmed' },
            integrity_root: schema('Sha256Hex'),
            inclusion_proof: { type: 'array', items: schema('Sha256Hex'), maxItems: 64 },
            leaf_hash: schema('Sha256Hex'),
            timestamp: { ...schema('Timestamp'), description: 'When the leaf was sealed.' },
            attempt_number: { type: 'integer', minimum: 1 },
            leaf_index: { type: 'integer', minimum: 0 },
            replay_of: { ...nullable(schema('DeliveryId')), description: 'The delivery this attempt\'s delivery replays (a replay job, a retry, `dlq replay`): then the leaf is the v 2 form with this `replay_of` member; `null` for a v 1 leaf.' },
            tree_size: { type: 'integer', minimum: 1 },
            checkpoint: schema('EvidenceCheckpoint'),
          },
          additionalProperties: false,
        },
        {
          type: 'object',
          required: ['delivery_id', 'status', 'integrity_root', 'inclusion_proof', 'leaf_hash', 'timestamp', 'attempt_number', 'leaf_index', 'replay_of', 'tree_size', 'checkpoint'],
          properties: {
            delivery_id: schema('DeliveryId'),
            status: { const: 'pending' },
            integrity_root: { type: 'null' },
            inclusion_proof: { type: 'array', maxItems: 0 },
            leaf_hash: schema('Sha256Hex'),
            timestamp: { ...schema('Timestamp'), description: 'When the attempt was made.' },
            attempt_number: { type: 'integer', minimum: 1 },
            leaf_index: { type: ['integer', 'null'], minimum: 0, description: 'Known once the leaf is sequenced, before its checkpoint is stored.' },
            replay_of: { ...nullable(schema('DeliveryId')), description: 'The delivery this attempt\'s delivery replays; its leaf will be the v 2 form. `null`: a v 1 leaf.' },
            tree_size: { type: 'null' },
            checkpoint: { type: 'null' },
          },
          additionalProperties: false,
        },
      ],
    },
    EvidenceLog: {
      type: 'object',
      description: 'The evidence log: one append-only RFC 6962 Merkle tree shared by all tenants. Check checkpoints with `verifier_key` (C2SP signed-note verifier key: `<origin>+<key id>+<base64(0x01 || Ed25519 public key)>`).',
      required: ['origin', 'verifier_key', 'key_id', 'public_key', 'signature_algorithm', 'hash_algorithm', 'latest_checkpoint'],
      properties: {
        origin: { type: 'string', minLength: 1 },
        verifier_key: { type: 'string', pattern: '^[^+\\s]+\\+[0-9a-f]{8}\\+[A-Za-z0-9+/]{44}$' },
        key_id: { type: 'string', pattern: '^[0-9a-f]{8}$' },
        public_key: { type: 'string', pattern: '^[A-Za-z0-9+/]{43}=$', description: 'The raw 32-byte Ed25519 public key, base64.' },
        signature_algorithm: { const: 'ed25519' },
        hash_algorithm: { const: 'sha256' },
        latest_checkpoint: nullable(schema('EvidenceCheckpoint')),
      },
      additionalProperties: false,
    },
    CheckpointList: listOf('checkpoints', 'EvidenceCheckpoint', 'newest (largest) first'),
    ConsistencyProof: {
      type: 'object',
      description: 'RFC 9162 section 2.1.4 consistency proof that the tree of `to` extends the tree of `from`.',
      required: ['from', 'to', 'consistency_proof'],
      properties: {
        from: schema('EvidenceCheckpoint'),
        to: schema('EvidenceCheckpoint'),
        consistency_proof: { type: 'array', items: schema('Sha256Hex'), maxItems: 128 },
      },
      additionalProperties: false,
    },
    RetryResult: {
      type: 'object',
      description: 'Every failed (dead) delivery of the event was queued again as a new delivery (new id, attempt 1) to the same destination.',
      required: ['status', 'delivery_id', 'delivery_ids', 'message'],
      properties: {
        status: { const: 'queued' },
        delivery_id: { ...schema('DeliveryId'), description: 'The first new delivery (the only one when the event went to one destination).' },
        delivery_ids: { type: 'array', minItems: 1, items: schema('DeliveryId'), description: 'Every new delivery (an addition to the contract\'s retry result, for events routed to several destinations).' },
        message: { type: 'string' },
      },
      additionalProperties: false,
    },

    SavedPayloadCreate: {
      type: 'object',
      description: 'A named JSON payload to keep. Members a GET shows that the service sets (`id`, `created_at`) are accepted and left as the service sets them; any other member is refused (400).',
      required: ['name', 'payload'],
      additionalProperties: false,
      properties: {
        ...shownBack(['id', 'created_at']), name: nameInput, payload: { type: 'object', description: `A JSON object of at most ${MAX_PAYLOAD_BYTES} bytes as JSON text (413 beyond).` } },
    },
    SavedPayload: {
      type: 'object',
      required: ['id', 'name', 'payload', 'created_at'],
      properties: { id: schema('SavedPayloadId'), name: { type: 'string' }, payload: { type: 'object' }, created_at: schema('Timestamp') },
      additionalProperties: false,
    },
    SavedPayloadList: listOf('saved_payloads', 'SavedPayload', 'by id (creation time), oldest first'),
    ...eventTypeSchemas({ schema, typedId, nullable, shownBack, listOf }),
    ...dashboardSchemas({ schema, nullable }),
    ...deadLetterSchemas({ schema, typedId, nullable, listOf }),
    ...exportSchemas({ schema, nullable }),
    ...analyticsSchemas({ schema }),
    ...destinationTypeSchemas({ schema, nullable }),
    ...tenantSchemas({ schema, nullable, shownBack, listOf, nameInput }),
    ...apiKeySchemas(),
    ...replaySchemas(),

    LogLevel: { type: 'string', enum: [...LOG_LEVELS] },
    LogEntry: {
      type: 'object',
      description: 'One line of the tenant\'s pipeline log.',
      required: ['id', 'timestamp', 'level', 'message', 'stage', 'event_id', 'delivery_id', 'destination_id', 'ingester_id', 'correlation_id', 'fields'],
      properties: {
        id: schema('LogId'),
        timestamp: schema('Timestamp'),
        level: schema('LogLevel'),
        message: { type: 'string' },
        stage: { type: ['string', 'null'], description: 'The pipeline stage that wrote the line.' },
        event_id: { type: ['string', 'null'] },
        delivery_id: { type: ['string', 'null'] },
        destination_id: { type: ['string', 'null'] },
        ingester_id: { type: ['string', 'null'] },
        correlation_id: { type: ['string', 'null'] },
        fields: { type: 'object', description: 'Every other field of the line (reason, rule, response code...).' },
      },
      additionalProperties: false,
    },
    LogList: listOf('logs', 'LogEntry', 'newest first (by time, then id)'),

    HookAccepted: {
      type: 'object',
      description: 'Kafka acknowledged the event (acks=all) together with its `received` transition.',
      required: ['event_id', 'correlation_id', 'status'],
      properties: {
        event_id: schema('EventId'),
        correlation_id: { type: 'string', minLength: 1, maxLength: 128, description: 'From the request\'s `X-Correlation-Id`, else the trace id of its `traceparent`, else assigned (`cor_...`). Carried by every record, log line and delivery of the event.' },
        status: { const: 'received' },
      },
      additionalProperties: false,
    },

    DependencyStatus: {
      type: 'object',
      required: ['status'],
      properties: {
        status: { type: 'string', enum: ['up', 'down', 'starting', 'unused'], description: '`unused`: this process runs no stage that needs the dependency.' },
        detail: { type: 'string' },
        latency_ms: { type: 'integer', minimum: 0 },
      },
      additionalProperties: false,
    },
    BuildInfo: {
      type: 'object',
      required: ['name', 'version', 'commit', 'node', 'started_at'],
      properties: { name: { type: 'string' }, version: { type: 'string' }, commit: { type: ['string', 'null'], description: '`BUILD_COMMIT` when set.' }, node: { type: 'string' }, started_at: schema('Timestamp') },
      additionalProperties: false,
    },
    Liveness: {
      type: 'object',
      required: ['status', 'build', 'stages', 'uptime_seconds'],
      properties: {
        status: { const: 'alive' },
        build: schema('BuildInfo'),
        stages: { type: 'array', items: { type: 'string' }, description: 'The stages this process runs.' },
        uptime_seconds: { type: 'integer', minimum: 0 },
      },
      additionalProperties: false,
    },
    Health: {
      type: 'object',
      required: ['status', 'build', 'uptime_seconds', 'dependencies'],
      properties: {
        status: { type: 'string', enum: ['ok', 'unavailable'] },
        failing: { type: 'array', minItems: 1, items: { type: 'string', enum: [...DEPENDENCIES] }, description: 'The dependencies that are down or starting; present only when there are some.' },
        build: schema('BuildInfo'),
        stages: { type: 'array', items: { type: 'string' }, description: 'The stages this process runs (STAGES, `--stage`, `--role`).' },
        uptime_seconds: { type: 'integer', minimum: 0 },
        dependencies: {
          type: 'object',
          required: [...DEPENDENCIES],
          properties: Object.fromEntries(DEPENDENCIES.map((d) => [d, schema('DependencyStatus')])),
          additionalProperties: false,
          description: '`pipeline` is this process\'s own stages and API, up once start-up has finished.',
        },
      },
      additionalProperties: false,
    },
    ...mcpSchemas(),
    OpenApiDocument: {
      type: 'object',
      description: 'This document.',
      required: ['openapi', 'info', 'paths', 'components'],
      properties: {
        openapi: { const: '3.1.0' },
        info: { type: 'object', required: ['title', 'version'], properties: { title: { type: 'string' }, version: { type: 'string' } } },
        paths: { type: 'object' },
        components: { type: 'object' },
      },
    },
  };
}

function mcpSchemas(): Json {
  const statusCount: Json = { type: 'object', required: ['pass', 'fail', 'unknown'], properties: { pass: { type: 'integer', minimum: 0 }, fail: { type: 'integer', minimum: 0 }, unknown: { type: 'integer', minimum: 0 } }, additionalProperties: false };
  const attemptEvidence: Json = {
    type: 'object',
    required: ['delivery_id', 'attempt_number', 'event_id', 'destination_id', 'status', 'response_code', 'attempted_at', 'evidence_status', 'leaf_index', 'leaf_hash'],
    properties: {
      delivery_id: schema('DeliveryId'),
      attempt_number: { type: 'integer', minimum: 1 },
      event_id: schema('EventId'),
      destination_id: schema('DestinationId'),
      status: schema('DeliveryStatus'),
      response_code: { type: ['integer', 'null'] },
      attempted_at: schema('Timestamp'),
      evidence_status: { enum: ['confirmed', 'pending'], description: '`confirmed` once a signed checkpoint includes the attempt\'s leaf.' },
      leaf_index: { type: ['integer', 'null'], minimum: 0 },
      leaf_hash: nullable(schema('Sha256Hex')),
    },
    additionalProperties: false,
  };
  const jsonRpc: Json = { type: 'object', required: ['jsonrpc'], properties: { jsonrpc: { const: '2.0' }, id: { type: ['string', 'integer', 'null'] }, result: { type: 'object' }, error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'integer' }, message: { type: 'string' } } } } };
  return {
    JsonRpcMessages: { description: 'One JSON-RPC 2.0 message or a batch (read by the MCP server, which answers malformed ones itself).', anyOf: [jsonRpc, { type: 'array', items: jsonRpc }] },
    ProofStatus: { enum: ['pass', 'fail', 'unknown'], description: '`pass`: the check held when measured; `fail`: it did not, or could not be measured (the error is in `observed`); `unknown`: nothing to judge yet (e.g. no checkpoint sealed, no offset sample old enough).' },
    Proof: {
      type: 'object',
      description: 'One live check, measured when asked. `observed` holds the values it measured; its members differ per proof (docs/api.md: Runtime and trust proofs).',
      required: ['id', 'title', 'scope', 'criterion', 'status', 'observed', 'measured_at', 'duration_ms'],
      properties: {
        id: { type: 'string', enum: [...RUNTIME_PROOFS, ...TRUST_PROOFS].map((p) => p.id) },
        title: { type: 'string' },
        scope: { enum: ['service', 'tenant'], description: '`tenant`: measured over the caller\'s tenant only.' },
        criterion: { type: 'string' },
        status: schema('ProofStatus'),
        observed: { type: 'object' },
        measured_at: schema('Timestamp'),
        duration_ms: { type: 'integer', minimum: 0 },
      },
      additionalProperties: false,
    },
    ProofList: {
      type: 'object',
      required: ['proofs', 'summary', 'measured_at'],
      properties: { proofs: { type: 'array', items: schema('Proof') }, summary: statusCount, measured_at: schema('Timestamp') },
      additionalProperties: false,
    },
    Capabilities: {
      type: 'object',
      required: ['capabilities', 'measured_at'],
      properties: {
        capabilities: {
          type: 'array',
          items: {
            type: 'object',
            required: ['id', 'kind', 'title', 'status', 'proofs'],
            properties: {
              id: { type: 'string', enum: CAPABILITIES.map((c) => c.id) },
              kind: { enum: ['runtime', 'trust'] },
              title: { type: 'string' },
              status: schema('ProofStatus'),
              proofs: { type: 'array', minItems: 1, items: { type: 'object', required: ['id', 'status'], properties: { id: { type: 'string' }, status: schema('ProofStatus') }, additionalProperties: false } },
            },
            additionalProperties: false,
          },
        },
        measured_at: schema('Timestamp'),
      },
      additionalProperties: false,
    },
    PlaneName: { enum: PLANES.map((p) => p.name) },
    Plane: {
      type: 'object',
      required: ['name', 'description', 'status', 'signals'],
      properties: {
        name: schema('PlaneName'),
        description: { type: 'string' },
        status: { ...schema('ProofStatus'), description: 'The worst status of its signals.' },
        signals: {
          type: 'array',
          minItems: 1,
          items: {
            type: 'object',
            required: ['name', 'status', 'value', 'source'],
            properties: { name: { type: 'string' }, status: schema('ProofStatus'), value: { description: 'What was measured.' }, source: { type: 'string', description: 'The proof id the signal comes from, or `health` (the dependency checks of /v1/mcp/health).' } },
            additionalProperties: false,
          },
        },
      },
      additionalProperties: false,
    },
    Planes: {
      type: 'object',
      description: 'The operational planes, measured now.',
      required: ['status', 'planes', 'measured_at'],
      properties: { status: schema('ProofStatus'), planes: { type: 'array', items: schema('Plane'), minItems: PLANES.length, maxItems: PLANES.length }, measured_at: schema('Timestamp') },
      additionalProperties: false,
    },
    Readiness: {
      type: 'object',
      required: ['ready', 'status', 'domains', 'proofs', 'measured_at'],
      properties: {
        ready: { type: 'boolean', description: 'No domain fails.' },
        status: schema('ProofStatus'),
        domains: { type: 'array', items: { type: 'object', required: ['name', 'status', 'failing'], properties: { name: schema('PlaneName'), status: schema('ProofStatus'), failing: { type: 'array', items: { type: 'string' } } }, additionalProperties: false } },
        proofs: statusCount,
        measured_at: schema('Timestamp'),
      },
      additionalProperties: false,
    },
    NonClaimList: {
      type: 'object',
      required: ['non_claims', 'categories'],
      properties: {
        non_claims: { type: 'array', items: { type: 'object', required: ['id', 'category', 'statement'], properties: { id: { type: 'string', pattern: '^NC-[0-9]{2}$' }, category: { type: 'string' }, statement: { type: 'string' } }, additionalProperties: false } },
        categories: { type: 'array', items: { type: 'string' } },
      },
      additionalProperties: false,
    },
    IntegrityRefList: {
      type: 'object',
      description: 'The signed checkpoints of the evidence log (integrity receipts), newest first.',
      required: ['origin', 'verifier_key', 'refs', 'next_cursor'],
      properties: {
        origin: { type: 'string' },
        verifier_key: { type: 'string' },
        refs: {
          type: 'array',
          items: {
            type: 'object',
            required: ['tree_size', 'root_hash', 'origin', 'signature', 'signed_note', 'sealed_at'],
            properties: {
              tree_size: { type: 'integer', minimum: 1 },
              root_hash: schema('Sha256Hex'),
              origin: { type: 'string' },
              signature: nullable({ type: 'object', required: ['key_name', 'key_id', 'algorithm', 'signature'], properties: { key_name: { type: 'string' }, key_id: { type: 'string', pattern: '^[0-9a-f]{8}$' }, algorithm: { const: 'ed25519' }, signature: { type: 'string', pattern: '^[A-Za-z0-9+/]{86}==$' } }, additionalProperties: false }),
              signed_note: { type: 'string' },
              sealed_at: schema('Timestamp'),
            },
            additionalProperties: false,
          },
        },
        next_cursor: schema('NextCursor'),
      },
      additionalProperties: false,
    },
    Deleted: { type: 'object', required: ['deleted', 'id'], properties: { deleted: { const: true }, id: { type: 'string' } }, additionalProperties: false },
    DeliveryStatusReport: {
      type: 'object',
      description: 'A delivery\'s status and outcome: `outcome` is `delivered`, `failed` (final) or `in_flight` (another attempt is scheduled at `next_attempt_at`); `transitions` are the event\'s event-level and this delivery\'s state transitions, oldest first; `evidence` is the latest attempt\'s evidence status.',
      required: ['delivery_id', 'event_id', 'destination_id', 'status', 'outcome', 'final', 'attempts', 'last_attempt', 'next_attempt_at', 'transitions', 'evidence'],
      properties: {
        delivery_id: schema('DeliveryId'),
        event_id: schema('EventId'),
        destination_id: schema('DestinationId'),
        status: schema('DeliveryStatus'),
        outcome: { enum: ['delivered', 'failed', 'in_flight'] },
        final: { type: 'boolean' },
        attempts: { type: 'integer', minimum: 1 },
        last_attempt: schema('DeliveryAttempt'),
        next_attempt_at: nullable(schema('Timestamp')),
        transitions: { type: 'array', items: { type: 'object', required: ['state', 'at', 'reason'], properties: { state: { type: 'string', enum: [...EVENT_STATES] }, at: schema('Timestamp'), reason: { type: ['string', 'null'] } }, additionalProperties: false } },
        evidence: {
          type: 'object',
          required: ['status', 'attempt_number', 'leaf_index', 'tree_size'],
          properties: { status: { enum: ['confirmed', 'pending'] }, attempt_number: { type: 'integer', minimum: 1 }, leaf_index: { type: ['integer', 'null'], minimum: 0 }, tree_size: { type: ['integer', 'null'], minimum: 1 } },
          additionalProperties: false,
        },
      },
      additionalProperties: false,
    },
    ResourceEvidence: {
      type: 'object',
      description: 'Evidence by identifier. A delivery id answers its `delivery_evidence` (as GET .../evidence/{delivery_id}); an event, destination or ingester (endpoint) id answers its newest delivery attempts (at most 50) with the evidence status of each, counts over all its attempts, and the newest checkpoint.',
      required: ['id', 'kind'],
      properties: {
        id: { type: 'string' },
        kind: { enum: ['delivery', 'event', 'destination', 'ingester'] },
        delivery_evidence: schema('DeliveryEvidence'),
        summary: {
          type: 'object',
          required: ['deliveries', 'attempts', 'shown', 'confirmed', 'pending'],
          properties: { deliveries: { type: 'integer', minimum: 0 }, attempts: { type: 'integer', minimum: 0 }, shown: { type: 'integer', minimum: 0 }, confirmed: { type: 'integer', minimum: 0, description: 'Of the attempts shown.' }, pending: { type: 'integer', minimum: 0, description: 'Of the attempts shown.' } },
          additionalProperties: false,
        },
        attempts: { type: 'array', items: attemptEvidence, maxItems: 50 },
        checkpoint: nullable(schema('EvidenceCheckpoint')),
      },
      oneOf: [
        { properties: { kind: { const: 'delivery' } }, required: ['delivery_evidence'], not: { anyOf: [{ required: ['summary'] }, { required: ['attempts'] }, { required: ['checkpoint'] }] } },
        { properties: { kind: { enum: ['event', 'destination', 'ingester'] } }, required: ['summary', 'attempts', 'checkpoint'], not: { required: ['delivery_evidence'] } },
      ],
      additionalProperties: false,
    },
    McpEndpoints: {
      type: 'object',
      required: ['endpoints', 'mcp'],
      properties: {
        endpoints: {
          type: 'array',
          items: { type: 'object', required: ['method', 'path', 'scope', 'authentication', 'description'], properties: { method: { enum: ['GET', 'POST'] }, path: { type: 'string' }, scope: { anyOf: [{ type: 'string', enum: [...SCOPES] }, { type: 'null' }] }, authentication: { enum: ['none', 'bearer'] }, description: { type: 'string' } }, additionalProperties: false },
        },
        mcp: {
          type: 'object',
          required: ['path', 'transport', 'tools'],
          properties: {
            path: { const: '/v1/mcp' },
            transport: { const: 'streamable-http' },
            tools: {
              type: 'array',
              items: { type: 'object', required: ['name', 'title', 'group', 'scope', 'enabled'], properties: { name: { type: 'string' }, title: { type: 'string' }, group: { type: 'string', description: '`read`, or the write scope of the tool\'s write group.' }, scope: { anyOf: [{ type: 'string', enum: [...SCOPES] }, { type: 'null' }] }, enabled: { type: 'boolean', description: 'False when configuration disables its write group (DISABLED_WRITE_GROUPS).' } }, additionalProperties: false },
            },
          },
          additionalProperties: false,
        },
      },
      additionalProperties: false,
    },
  };
}

// ---------------------------------------------------------------------------------------------
// parameters, headers, responses

/** The search filters of the deliveries list, by component name. */
const SEARCH_PARAMETERS = ['DeliveryDestination', 'DeliveryEventType', 'DeliveryFrom', 'DeliveryTo', 'DeliveryResponseCode', 'DeliveryText'];

function searchParameters(): Json {
  const q = (name: string, description: string, s: Json): Json => ({ name, in: 'query', required: false, description, schema: s });
  const time = { type: 'string', format: 'date-time' };
  return {
    DeliveryDestination: q('destination_id', 'Only attempts to this destination (1 to 200 characters, else 400).', { type: 'string', minLength: 1, maxLength: 200 }),
    DeliveryEventType: q('event_type', 'Only attempts of events of exactly this type (1 to 200 characters, else 400).', { type: 'string', minLength: 1, maxLength: 200 }),
    DeliveryFrom: q('from', 'Only attempts made at or after this time (RFC 3339, else 400).', time),
    DeliveryTo: q('to', 'Only attempts made before this time (RFC 3339, later than `from`, else 400).', time),
    DeliveryResponseCode: q('response_code', 'Only attempts answered with this HTTP status (`503`) or class (`5xx`, `4xx`, ...); attempts without an answer never match. Anything else answers 400.', { type: 'string', pattern: '^[1-5]([0-9]{2}|xx|XX)$' }),
    DeliveryText: q('q', 'Only attempts whose response body start (first 4 KiB) or whose event\'s request body contains this text, ignoring case (1 to 200 characters, else 400).', { type: 'string', minLength: 1, maxLength: 200 }),
  };
}

function parameters(): Json {
  const pathId = (name: string, what: string, kind: keyof typeof ID_PREFIX): Json => ({
    name,
    in: 'path',
    required: true,
    description: `Id of the ${what}. Any other string (an unknown id, another tenant's id) answers 404.`,
    schema: { type: 'string' },
    examples: { id: { value: `${ID_PREFIX[kind]}_${EXAMPLE_ULID}` } },
  });
  return {
    TenantId: { name: 'tenant_id', in: 'path', required: true, description: 'The tenant; must be the API key\'s own tenant, any other answers 404.', schema: { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]{0,62}$' } },
    DestinationId: pathId('destination_id', 'destination', 'destination'),
    IngesterId: pathId('ingester_id', 'ingester', 'ingester'),
    FlowId: pathId('flow_id', 'delivery flow', 'flow'),
    DeliveryId: pathId('delivery_id', 'delivery', 'delivery'),
    EventId: pathId('event_id', 'event', 'event'),
    SavedPayloadId: pathId('payload_id', 'saved payload', 'savedPayload'),
    ApiKeyId: pathId('key_id', 'API key', 'apiKey'),
    ReplayJobId: pathId('replay_id', 'replay job', 'replayJob'),
    EventTypeId: pathId('event_type_id', 'event type', 'eventType'),
    Limit: { name: 'limit', in: 'query', required: false, description: `Items per page, an integer from 1 to ${MAX_LIMIT} (400 otherwise).`, schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT } },
    Cursor: {
      name: 'cursor',
      in: 'query',
      required: false,
      description: 'The `next_cursor` of the previous page. It is bound to the filters it was issued with: sent with other filters, or not issued by this API, it answers 400. An empty value is the first page.',
      schema: { type: 'string' },
    },
    DeliveryStatus: { name: 'status', in: 'query', required: false, description: 'Only attempts with this status. An unknown value answers 422.', schema: schema('DeliveryStatus') },
    ...searchParameters(),
    LogLevel: { name: 'level', in: 'query', required: false, description: 'Minimum level: `warn` gives warnings and errors. An unknown value answers 422. (`debug` lines are never shipped to the log table.)', schema: schema('LogLevel') },
    EvidenceAttempt: { name: 'attempt', in: 'query', required: false, description: 'The attempt to show; default the latest sealed one. Not a positive integer: 400.', schema: { type: 'integer', minimum: 1 } },
    EvidenceTreeSize: { name: 'tree_size', in: 'query', required: false, description: 'Prove against the checkpoint of exactly this size (404 when there is none or it does not include the leaf); default the newest.', schema: { type: 'integer', minimum: 1 } },
    ConsistencyFrom: { name: 'from', in: 'query', required: true, description: 'Tree size of the older checkpoint.', schema: { type: 'integer', minimum: 1 } },
    ConsistencyTo: { name: 'to', in: 'query', required: false, description: 'Tree size of the newer checkpoint; default the newest.', schema: { type: 'integer', minimum: 1 } },
    IfMatch: {
      name: 'If-Match',
      in: 'header',
      required: false,
      description: 'The `ETag` of the version this change is based on (or a comma-separated list of them): when the destination is at another version now, the change is refused with 412 precondition-failed and nothing changes. `*` matches any existing version. Without it, the change applies to whatever version is current.',
      schema: { type: 'string', minLength: 1 },
    },
    IdempotencyKey: {
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description:
        'Makes the write safe to retry. Keys are per tenant and API key and kept for `IDEMPOTENCY_TTL_SECONDS` (default 24 h). The first request with a key runs and its 2xx or 4xx answer (except 408, 425, 429) is stored; the same request again (same method, path and body, compared as canonical JSON) gets that answer replayed with `Idempotent-Replayed: true` and creates nothing; a different request with the key answers 409 idempotency-conflict. A concurrent request with the key waits up to 10 s for the first. A 5xx answer is not stored. Not 1 to 255 printable ASCII characters: 400.',
      schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7e]+$' },
    },
  };
}


function headers(): Json {
  const integer = (minimum: number): Json => ({ type: 'integer', minimum });
  return {
    'X-Request-Id': { description: 'Id of this request, also the `instance` of a problem document.', required: true, schema: schema('RequestId') },
    RateLimit: { description: 'Rate limit of this API key and route (IETF draft syntax): `limit=<n>, remaining=<n>, reset=<seconds>`. Absent when Redis is unreachable (limits then fail open) and on answers given before the key was known (401, another tenant\'s 404).', schema: { type: 'string', pattern: '^limit=\\d+, remaining=\\d+, reset=\\d+$' } },
    'RateLimit-Policy': { description: 'The route\'s policy: `<limit>;w=<window seconds>`.', schema: { type: 'string', pattern: '^\\d+;w=\\d+$' } },
    'RateLimit-Limit': { description: 'Requests allowed per window.', schema: integer(1) },
    'RateLimit-Remaining': { description: 'Requests left now.', schema: integer(0) },
    'RateLimit-Reset': { description: 'Seconds until the bucket is full again.', schema: integer(0) },
    'Retry-After': { description: 'Seconds to wait before trying again.', required: true, schema: integer(1) },
    Location: { description: 'Path of the resource just created.', required: true, schema: { type: 'string', format: 'uri-reference' } },
    'Idempotent-Replayed': { description: '`true` when this answer is the stored answer of an earlier request with the same `Idempotency-Key`.', schema: { type: 'string', const: 'true' } },
    'WWW-Authenticate': { description: '`Bearer`, or `Bearer error="invalid_token"` for an unknown or expired key.', required: true, schema: { type: 'string', pattern: '^Bearer' } },
    'X-Correlation-Id': { description: 'The correlation id of the event (as in the body).', required: true, schema: { type: 'string', minLength: 1 } },
    'Cache-Control': { description: 'Health answers are never cached.', required: true, schema: { type: 'string', const: 'no-store' } },
    ETag: { description: 'The version of the object shown (strong, `"<n>"`): send it as `If-Match` to change the object only while it is still this version.', required: true, schema: { type: 'string', pattern: '^"\\d+"$' } },
  };
}

const TENANT_HEADER_NAMES = ['X-Request-Id', 'RateLimit', 'RateLimit-Policy', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Idempotent-Replayed'];
const headerRefs = (names: string[]): Json => Object.fromEntries(names.map((n) => [n, ref('headers', n)]));
const tenantHeaders = (...extra: string[]): Json => headerRefs([...TENANT_HEADER_NAMES, ...extra]);

function problemContent(slugs: Exclude<ErrorSlug, 'method-not-allowed'>[]): Json {
  const refs = slugs.map((s) => schema(PROBLEM_SCHEMA_OF[s]));
  return { 'application/problem+json': { schema: refs.length === 1 ? refs[0] : { oneOf: refs } } };
}

function tenantError(description: string, slugs: Exclude<ErrorSlug, 'method-not-allowed'>[], extraHeaders: string[] = []): Json {
  return { description, headers: tenantHeaders(...extraHeaders), content: problemContent(slugs) };
}

function responses(): Json {
  return {
    BadRequest: tenantError('validation-error: the request is malformed (see `errors`). A request body that is not valid JSON answers this on every route, whatever the method.', ['validation-error']),
    Unauthorized: { description: 'unauthorized: the API key is missing, malformed, unknown or expired.', headers: headerRefs(['X-Request-Id', 'WWW-Authenticate']), content: problemContent(['unauthorized']) },
    ForbiddenRead: tenantError('insufficient-scope: the key lacks the scope in `required_scope`.', ['insufficient-scope']),
    ForbiddenReadResource: tenantError('insufficient-scope: the key lacks the scope; or permission-denied: the key is limited to other resource ids (`resource_id`).', ['insufficient-scope', 'permission-denied']),
    ForbiddenWrite: tenantError('insufficient-scope: the key lacks the scope; or write-tool-disabled: the write group (`tool_group`) is switched off on this deployment.', ['insufficient-scope', 'write-tool-disabled']),
    ForbiddenWriteResource: tenantError('insufficient-scope, write-tool-disabled, or permission-denied: the key is limited to resource ids that do not include one this write touches (`resource_id`).', ['insufficient-scope', 'write-tool-disabled', 'permission-denied']),
    ForbiddenCreate: tenantError('insufficient-scope: the key lacks the scope; write-tool-disabled: the write group (`tool_group`) is switched off on this deployment; or quota-exceeded: the tenant holds as many of these objects as it may (`quota`, `limit`).', ['insufficient-scope', 'write-tool-disabled', 'quota-exceeded']),
    ForbiddenCreateResource: tenantError('insufficient-scope, write-tool-disabled, permission-denied (the key is limited to resource ids that do not include one this write touches, `resource_id`), or quota-exceeded (the tenant holds as many of these objects as it may, `quota` and `limit`).', ['insufficient-scope', 'write-tool-disabled', 'permission-denied', 'quota-exceeded']),
    ForbiddenOperator: tenantError('permission-denied: the key is not an operator key (only operators manage tenants).', ['permission-denied']),
    NotFound: tenantError('not-found: the tenant in the path is not the key\'s own (indistinguishable from one that does not exist), or the resource does not exist.', ['not-found']),
    IdempotencyConflict: tenantError('idempotency-conflict: the `Idempotency-Key` was used with a different request (`idempotency_key`).', ['idempotency-conflict']),
    PayloadTooLarge: tenantError(`payload-too-large: the request body is larger than ${MAX_JSON_BODY}.`, ['payload-too-large']),
    UnsupportedMediaType: tenantError('unsupported-media-type: a request body (on any method) that is not `application/json` or `*+json`, or in an unsupported encoding or charset.', ['unsupported-media-type']),
    RequestHeaderFieldsTooLarge: { description: 'request-header-fields-too-large: the request line and headers are larger than the server accepts; answered before any route, with `Connection: close`.', headers: headerRefs(['X-Request-Id']), content: problemContent(['request-header-fields-too-large']) },
    TooManyRequests: tenantError('rate-limit-exceeded: over the rate limit of this API key and route; `Retry-After` and `retry_after_seconds` say when to try again. Never stored as the answer to an `Idempotency-Key`.', ['rate-limit-exceeded'], ['Retry-After']),
    InternalError: tenantError('internal-error: an unexpected error, e.g. Kafka or ClickHouse failing during the request.', ['internal-error']),
    ServiceUnavailable: tenantError('service-unavailable: the service is starting, or the idempotency store is unreachable.', ['service-unavailable']),
  };
}

// ---------------------------------------------------------------------------------------------
// operations

type Forbidden = 'ForbiddenRead' | 'ForbiddenReadResource' | 'ForbiddenWrite' | 'ForbiddenWriteResource' | 'ForbiddenCreate' | 'ForbiddenCreateResource';

export interface TenantOperation {
  operationId: string;
  summary: string;
  description: string;
  tag: string;
  scope: Scope;
  /** Route key of RATE_LIMITS, e.g. `GET /v1/tenants/:tenantId/destinations/:id`. */
  rateLimitRoute: string;
  parameters?: Json[];
  requestBody?: Json;
  success: Record<string, Json>;
  forbidden: Forbidden;
  /** 404 beyond another tenant's path: the resource itself. */
  notFound?: string;
  conflict?: 'IdempotencyConflict' | { description: string };
  unprocessable?: string;
  tooLarge?: string;
  /** 412: the If-Match header names another version. */
  preconditionFailed?: string;
}

/** The answers every authenticated operation shares after its own: body, 422, rate limit, 500, 503. */
function bodyAndLimitErrors(o: { tooLarge?: string; unprocessable?: string }): Json {
  return {
    '413': o.tooLarge ? tenantError(`payload-too-large: ${o.tooLarge}`, ['payload-too-large']) : ref('responses', 'PayloadTooLarge'),
    '415': ref('responses', 'UnsupportedMediaType'),
    ...(o.unprocessable ? { '422': tenantError(`unprocessable-entity: ${o.unprocessable}`, ['unprocessable-entity']) } : {}),
    '429': ref('responses', 'TooManyRequests'),
    '500': ref('responses', 'InternalError'),
    '503': ref('responses', 'ServiceUnavailable'),
  };
}

/**
 * An authenticated operation: its successes, then the answers every such operation shares (400,
 * 401, its 403, its 404, 409, 412, the body and limit errors), the Idempotency-Key of a write and
 * the members that say who may call it (`access`).
 */
function authenticatedOperation(o: Omit<TenantOperation, 'scope' | 'forbidden'>, how: { write: boolean; forbidden: string; notFound: Json | undefined; access: Json }): Json {
  const responses: Json = { ...o.success };
  responses['400'] = ref('responses', 'BadRequest');
  responses['401'] = ref('responses', 'Unauthorized');
  responses['403'] = ref('responses', how.forbidden);
  if (how.notFound) responses['404'] = how.notFound;
  if (o.conflict === 'IdempotencyConflict') responses['409'] = ref('responses', 'IdempotencyConflict');
  else if (o.conflict) responses['409'] = tenantError(`conflict: ${o.conflict.description}; or idempotency-conflict: the \`Idempotency-Key\` was used with a different request.`, ['conflict', 'idempotency-conflict']);
  if (o.preconditionFailed) responses['412'] = tenantError(`precondition-failed: ${o.preconditionFailed}`, ['precondition-failed']);
  Object.assign(responses, bodyAndLimitErrors(o));
  return {
    operationId: o.operationId,
    summary: o.summary,
    description: o.description,
    tags: [o.tag],
    ...how.access,
    'x-rate-limit-route': o.rateLimitRoute,
    ...(o.parameters || how.write ? { parameters: [...(o.parameters ?? []), ...(how.write ? [ref('parameters', 'IdempotencyKey')] : [])] } : {}),
    ...(o.requestBody ? { requestBody: o.requestBody } : {}),
    responses,
  };
}

function tenantOperation(o: TenantOperation): Json {
  return authenticatedOperation(o, {
    write: o.scope.startsWith('write:'),
    forbidden: o.forbidden,
    notFound: o.notFound ? tenantError(`not-found: ${o.notFound}, or the tenant in the path is not the key's own.`, ['not-found']) : ref('responses', 'NotFound'),
    access: { security: [{ bearerAuth: [o.scope] }], 'x-required-scope': o.scope },
  });
}

/**
 * An operation of the operators' (tenants themselves): an operator key only, marked
 * `x-operator`; a tenant's key answers 403 permission-denied.
 */
function operatorOperation(o: Omit<TenantOperation, 'scope' | 'forbidden'>): Json {
  return authenticatedOperation(o, {
    write: !/^(get|list)/.test(o.operationId),
    forbidden: 'ForbiddenOperator',
    notFound: o.notFound ? tenantError(`not-found: ${o.notFound}.`, ['not-found']) : undefined,
    access: { security: [{ bearerAuth: [] }], 'x-operator': true },
  });
}

const jsonBody = (name: string, description: string): Json => ({
  required: true,
  description: `${description} Sent as \`application/json\` (or any \`*+json\` type); at most ${MAX_JSON_BODY}.`,
  content: { 'application/json': { schema: schema(name) } },
});
const ok = (description: string, schemaName: string): Json => ({ description, headers: tenantHeaders(), content: { 'application/json': { schema: schema(schemaName) } } });
const created = (description: string, schemaName: string): Json => ({ description, headers: tenantHeaders('Location'), content: { 'application/json': { schema: schema(schemaName) } } });
const noContent = (description: string): Json => ({ description, headers: tenantHeaders() });
const listParams = [ref('parameters', 'Limit'), ref('parameters', 'Cursor')];
const REFUSED_PATTERN = 'a filter `pattern` the RE2 engine cannot compile (backreferences, lookaround, possessive quantifiers, a syntax error) or that is too large; `errors` names each one, like `filters[0].pattern`. Checked once the request is otherwise valid (400 first).';
const T = '/v1/tenants/:tenantId';

const withEtag = (response: Json): Json => ({ ...response, headers: { ...(response.headers as Json), ETag: ref('headers', 'ETag') } });
const DESTINATION_URL_REFUSED = 'the `url` points at an address `DESTINATION_ALLOWED_NETWORKS` does not allow (private, loopback, link-local, cloud metadata, reserved; a name by what it resolves to now), or at this service itself (its listener or `PUBLIC_BASE_URL`, in any spelling). A name that does not resolve now, or not within 2 s, is accepted: its attempts fail saying so until it resolves, and every connection applies the same policy to what it resolves to then.';
const STALE = 'the `If-Match` header names another version than the destination\'s current `ETag`; nothing changed.';

/** PATCH and PUT of `/destinations/{destination_id}`. */
function destinationChangeOperations(): Json {
  const change = (o: { operationId: string; summary: string; method: string; description: string; body: string; bodyDescription: string }): Json => {
    const op = tenantOperation({
      operationId: o.operationId, summary: o.summary, tag: 'Destinations', scope: 'write:destinations', rateLimitRoute: `${o.method} ${T}/destinations/:id`,
      description: o.description,
      parameters: [ref('parameters', 'IfMatch')],
      requestBody: jsonBody(o.body, o.bodyDescription),
      success: { '200': withEtag(ok('The destination as changed (or as it was, when nothing changed).', 'Destination')) }, forbidden: 'ForbiddenWriteResource', notFound: 'no such destination',
      conflict: { description: 'another destination of the tenant has the new `name` (case-insensitive)' },
      unprocessable: `a member this body does not have (each named in \`errors\` as "is not a member of this body"); a member the service sets sent with another value than the current one; ${DESTINATION_URL_REFUSED} Or a filter pattern the RE2 engine refuses.`,
      preconditionFailed: STALE,
    });
    // a merge patch is JSON: both media types carry the same body
    if (o.method === 'PATCH') {
      const body = op.requestBody as Json;
      op.requestBody = { ...body, content: { 'application/merge-patch+json': { schema: schema(o.body) }, ...(body.content as Json) } };
    }
    return op;
  };
  return {
    patch: change({
      operationId: 'patchDestination', summary: 'Change a destination', method: 'PATCH', body: 'DestinationPatch', bodyDescription: 'The merge patch.',
      description: 'Changes the members the merge patch names: rename, URL, schedule, credentials, `enabled` (pause and resume), rate limit and subscription (`event_types`, `filter`). Every change is kept in the destination\'s history (`/changes`). With `If-Match`, only while the destination is still at that version.',
    }),
    put: change({
      operationId: 'replaceDestination', summary: 'Replace a destination', method: 'PUT', body: 'DestinationReplace', bodyDescription: 'The whole destination.',
      description: 'Replaces every settable member: those left out take their defaults (`enabled` true, the others `null`). A GET answer sent back (credentials masked) changes nothing. With `If-Match`, only while the destination is still at that version.',
    }),
  };
}

/** Rotation of the signing secret and the history of changes. */
function destinationChangePaths(P: string, tenant: Json, destinationId: Json, listParams: Json[]): Json {
  return {
    [`${P}/destinations/{destination_id}/rotate-secret`]: {
      parameters: [tenant, destinationId],
      post: tenantOperation({
        operationId: 'rotateDestinationSecret', summary: 'Rotate the signing secret', tag: 'Destinations', scope: 'write:destinations', rateLimitRoute: `POST ${T}/destinations/:id/rotate-secret`,
        description: 'Gives the destination a new Standard Webhooks signing secret, shown in this answer only. The old secret keeps signing beside it for `overlap_seconds` (default one day): meanwhile `webhook-signature` carries both signatures, `v1,<new> v1,<old>`, so a receiver can switch without a gap. With `If-Match`, only while the destination is still at that version.',
        parameters: [ref('parameters', 'IfMatch')],
        requestBody: { ...jsonBody('SecretRotation', 'The overlap.'), required: false },
        success: { '200': withEtag(ok('The new secret and until when the old one signs.', 'SecretRotated')) }, forbidden: 'ForbiddenWriteResource', notFound: 'no such destination', conflict: 'IdempotencyConflict',
        preconditionFailed: STALE,
      }),
    },
    [`${P}/destinations/{destination_id}/changes`]: {
      parameters: [tenant, destinationId],
      get: tenantOperation({
        operationId: 'listDestinationChanges', summary: 'History of a destination', tag: 'Destinations', scope: 'read:destinations', rateLimitRoute: `GET ${T}/destinations/:id/changes`,
        description: `Every change of the destination, newest first: those made through the API (created, updated, paused, resumed, secret_rotated, deleted) with the API key that made them, and its disabling by the delivery stage when its receiver answered 410 Gone (disabled, actor \`${DELIVERY_STAGE_ACTOR}\`, \`cause\` naming the delivery attempt), each with every member's value before and after (credentials masked, signing secrets never). A deleted destination keeps its history. Paged like the other lists.`,
        parameters: listParams, success: { '200': ok('One page of changes.', 'DestinationChangeList') }, forbidden: 'ForbiddenReadResource', notFound: 'no such destination (and no history of one)',
      }),
    },
  };
}

function tenantPaths(): Json {
  const P = '/v1/tenants/{tenant_id}';
  const tenant = ref('parameters', 'TenantId');
  const idParam = (name: string) => ref('parameters', name);
  const pagingNote = `Paged: \`limit\` 1 to ${MAX_LIMIT} (default ${DEFAULT_LIMIT}), \`next_cursor\` of the answer as \`cursor\` for the next page; items created meanwhile appear on a later page, none twice.`;
  const resourceNote = 'A key limited to resource ids lists only those.';
  return {
    [`${P}/destinations`]: {
      parameters: [tenant],
      get: tenantOperation({
        operationId: 'listDestinations', summary: 'List destinations', tag: 'Destinations', scope: 'read:destinations', rateLimitRoute: `GET ${T}/destinations`,
        description: `The tenant's destinations, oldest first. ${pagingNote} ${resourceNote}`,
        parameters: listParams, success: { '200': ok('One page of destinations.', 'DestinationList') }, forbidden: 'ForbiddenRead',
      }),
      post: tenantOperation({
        operationId: 'createDestination', summary: 'Create a destination', tag: 'Destinations', scope: 'write:destinations', rateLimitRoute: `POST ${T}/destinations`,
        description: 'Creates a destination with a new Standard Webhooks signing secret, shown in this answer only. `ETag` is its version (see `If-Match` on the changes).',
        requestBody: jsonBody('DestinationCreate', 'The destination.'),
        success: { '201': withEtag(created('The destination, with its signing secret.', 'DestinationCreated')) }, forbidden: 'ForbiddenCreate',
        unprocessable: DESTINATION_URL_REFUSED,
        conflict: { description: 'a destination with this name (case-insensitive) exists in the tenant' },
      }),
    },
    [`${P}/destinations/{destination_id}`]: {
      parameters: [tenant, idParam('DestinationId')],
      get: tenantOperation({
        operationId: 'getDestination', summary: 'Get a destination', tag: 'Destinations', scope: 'read:destinations', rateLimitRoute: `GET ${T}/destinations/:id`,
        description: 'One destination, without its signing secret. `ETag` is its version, for `If-Match` on a change.', success: { '200': withEtag(ok('The destination.', 'Destination')) }, forbidden: 'ForbiddenReadResource', notFound: 'no such destination',
      }),
      ...destinationChangeOperations(),
      delete: tenantOperation({
        operationId: 'deleteDestination', summary: 'Delete a destination', tag: 'Destinations', scope: 'write:destinations', rateLimitRoute: `DELETE ${T}/destinations/:id`,
        description: 'Deletes the destination, frees its name and takes it out of every delivery flow; its pending deliveries fail.',
        success: { '204': noContent('Deleted.') }, forbidden: 'ForbiddenWriteResource', notFound: 'no such destination', conflict: 'IdempotencyConflict',
      }),
    },
    ...destinationChangePaths(P, tenant, idParam('DestinationId'), listParams),
    [`${P}/ingesters`]: {
      parameters: [tenant],
      description: 'Other methods on this path answer 405 method-not-allowed (the other collections answer 404).',
      get: tenantOperation({
        operationId: 'listIngesters', summary: 'List ingesters', tag: 'Ingesters', scope: 'read:ingesters', rateLimitRoute: `GET ${T}/ingesters`,
        description: `The tenant's ingesters (endpoints), oldest first, each with its Hook URL, masked config and delivery flows. ${pagingNote} ${resourceNote}`,
        parameters: listParams, success: { '200': ok('One page of ingesters.', 'IngesterList') }, forbidden: 'ForbiddenRead',
      }),
      post: tenantOperation({
        operationId: 'createIngester', summary: 'Create an ingester', tag: 'Ingesters', scope: 'write:ingesters', rateLimitRoute: `POST ${T}/ingesters`,
        description: 'Creates an ingester (endpoint) and, with `destination_ids`, a delivery flow to those destinations. The answer carries the Hook URL and the config with every secret masked. Config, filters and destination ids are all checked; every problem is listed in one 400. A well-formed request whose `matches` patterns the RE2 engine refuses answers 422.',
        requestBody: jsonBody('IngesterCreate', 'The ingester.'),
        success: { '201': created('The ingester.', 'Ingester') }, forbidden: 'ForbiddenCreateResource', conflict: 'IdempotencyConflict', unprocessable: `${REFUSED_PATTERN} Or the delivery flows of the ingester would name more than \`MAX_FANOUT\` (default 50) distinct destinations (\`destination_ids\`).`,
      }),
    },
    [`${P}/ingesters/{ingester_id}`]: {
      parameters: [tenant, idParam('IngesterId')],
      get: tenantOperation({
        operationId: 'getIngester', summary: 'Get an ingester', tag: 'Ingesters', scope: 'read:ingesters', rateLimitRoute: `GET ${T}/ingesters/:id`,
        description: 'One ingester with its Hook URL, masked config and delivery flows.', success: { '200': ok('The ingester.', 'Ingester') }, forbidden: 'ForbiddenReadResource', notFound: 'no such ingester',
      }),
      put: tenantOperation({
        operationId: 'updateIngester', summary: 'Update an ingester', tag: 'Ingesters', scope: 'write:ingesters', rateLimitRoute: `PUT ${T}/ingesters/:id`,
        description: '`name` is required; `provider`, `config` and `filters` replace the stored ones when given. A masked secret sent back unchanged keeps the stored secret, so GET-then-PUT is safe. `destination_ids` replaces the destinations of the first delivery flow (creating one when there is none).',
        requestBody: jsonBody('IngesterUpdate', 'The update.'),
        success: { '200': ok('The updated ingester.', 'Ingester') }, forbidden: 'ForbiddenWriteResource', notFound: 'no such ingester', conflict: 'IdempotencyConflict', unprocessable: `${REFUSED_PATTERN} Or the delivery flows of the ingester would name more than \`MAX_FANOUT\` (default 50) distinct destinations (\`destination_ids\`).`,
      }),
      delete: tenantOperation({
        operationId: 'deleteIngester', summary: 'Delete an ingester', tag: 'Ingesters', scope: 'write:ingesters', rateLimitRoute: `DELETE ${T}/ingesters/:id`,
        description: 'Deletes the ingester and its delivery flows; its Hook URL answers 404 from then on.',
        success: { '204': noContent('Deleted.') }, forbidden: 'ForbiddenWriteResource', notFound: 'no such ingester', conflict: 'IdempotencyConflict',
      }),
    },
    [`${P}/delivery-flows`]: {
      parameters: [tenant],
      get: tenantOperation({
        operationId: 'listDeliveryFlows', summary: 'List delivery flows', tag: 'Delivery flows', scope: 'read:flows', rateLimitRoute: `GET ${T}/delivery-flows`,
        description: `The tenant's delivery flows, oldest first. ${pagingNote} ${resourceNote}`,
        parameters: listParams, success: { '200': ok('One page of delivery flows.', 'DeliveryFlowList') }, forbidden: 'ForbiddenRead',
      }),
      post: tenantOperation({
        operationId: 'createDeliveryFlow', summary: 'Create a delivery flow', tag: 'Delivery flows', scope: 'write:flows', rateLimitRoute: `POST ${T}/delivery-flows`,
        description: 'Connects an ingester to destinations: each event of the ingester fans out to one delivery per destination of each of its flows.',
        requestBody: jsonBody('DeliveryFlowCreate', 'The flow.'),
        success: { '201': created('The delivery flow.', 'DeliveryFlow') }, forbidden: 'ForbiddenCreateResource', conflict: 'IdempotencyConflict', unprocessable: 'the delivery flows of the ingester would name more than `MAX_FANOUT` (default 50) distinct destinations (`destination_ids`).',
      }),
    },
    [`${P}/delivery-flows/{flow_id}`]: {
      parameters: [tenant, idParam('FlowId')],
      get: tenantOperation({
        operationId: 'getDeliveryFlow', summary: 'Get a delivery flow', tag: 'Delivery flows', scope: 'read:flows', rateLimitRoute: `GET ${T}/delivery-flows/:id`,
        description: 'One delivery flow.', success: { '200': ok('The delivery flow.', 'DeliveryFlow') }, forbidden: 'ForbiddenReadResource', notFound: 'no such delivery flow',
      }),
      put: tenantOperation({
        operationId: 'updateDeliveryFlow', summary: 'Update a delivery flow', tag: 'Delivery flows', scope: 'write:flows', rateLimitRoute: `PUT ${T}/delivery-flows/:id`,
        description: 'Renames the flow and, with `destination_ids`, replaces its destinations. Its ingester stays.',
        requestBody: jsonBody('DeliveryFlowUpdate', 'The update.'),
        success: { '200': ok('The updated delivery flow.', 'DeliveryFlow') }, forbidden: 'ForbiddenWriteResource', notFound: 'no such delivery flow', conflict: 'IdempotencyConflict', unprocessable: 'the delivery flows of the ingester would name more than `MAX_FANOUT` (default 50) distinct destinations (`destination_ids`).',
      }),
      delete: tenantOperation({
        operationId: 'deleteDeliveryFlow', summary: 'Delete a delivery flow', tag: 'Delivery flows', scope: 'write:flows', rateLimitRoute: `DELETE ${T}/delivery-flows/:id`,
        description: 'Deletes the flow; events of its ingester no longer go to its destinations.',
        success: { '204': noContent('Deleted.') }, forbidden: 'ForbiddenWriteResource', notFound: 'no such delivery flow', conflict: 'IdempotencyConflict',
      }),
    },
    [`${P}/deliveries`]: {
      parameters: [tenant],
      get: tenantOperation({
        operationId: 'listDeliveries', summary: 'List delivery attempts', tag: 'Deliveries', scope: 'read:deliveries', rateLimitRoute: `GET ${T}/deliveries`,
        description: `Delivery attempts as recorded in ClickHouse, one item per attempt (a delivery retried three times is three items with the same \`id\`), newest first, each with its event's type. ${pagingNote} The cursor is a keyset position (time, delivery id, attempt number), stable while attempts are being added. A key limited to resource ids sees only attempts to those destinations. Search: the filters \`status\`, \`destination_id\`, \`event_type\`, \`from\`, \`to\`, \`response_code\` and \`q\` combine (all must hold); a cursor is bound to the filters it was issued with. A bad value of a search filter answers 400 naming it; other query parameters are ignored.`,
        parameters: [ref('parameters', 'DeliveryStatus'), ...SEARCH_PARAMETERS.map((p) => ref('parameters', p)), ...listParams],
        success: { '200': ok('One page of delivery attempts.', 'DeliveryList') }, forbidden: 'ForbiddenRead',
        unprocessable: '`status` is not one of delivered, retrying, failed.',
      }),
    },
    [`${P}/deliveries/{delivery_id}`]: {
      parameters: [tenant, idParam('DeliveryId')],
      get: tenantOperation({
        operationId: 'getDelivery', summary: 'Get a delivery with its attempts', tag: 'Deliveries', scope: 'read:deliveries', rateLimitRoute: `GET ${T}/deliveries/:id`,
        description: 'One delivery: its latest attempt\'s status and outcome at the top level, every attempt (oldest first) in `attempts`.',
        success: { '200': ok('The delivery.', 'Delivery') }, forbidden: 'ForbiddenReadResource', notFound: 'no attempt of this delivery is recorded',
      }),
    },
    [`${P}/events/{event_id}/retry`]: {
      parameters: [tenant, idParam('EventId')],
      post: tenantOperation({
        operationId: 'retryEvent', summary: 'Retry the failed deliveries of an event', tag: 'Events', scope: 'write:events', rateLimitRoute: `POST ${T}/events/:id/retry`,
        description: 'Every dead delivery of the event (its latest attempt `failed`) to a destination that is still active becomes a new delivery (new id, attempt 1, the original bytes) to the same destination, each dead delivery once (also across the CLI\'s `dlq replay`). No body is needed; one sent is ignored.',
        success: { '202': ok('Queued.', 'RetryResult') }, forbidden: 'ForbiddenWriteResource', notFound: 'no such event',
        conflict: { description: 'nothing is left to retry (no failed delivery, every one already retried, or their destinations are disabled or deleted), or the stored body does not match the SHA-256 recorded at receipt, or the body was removed by retention' },
      }),
    },
    [`${P}/saved-payloads`]: {
      parameters: [tenant],
      get: tenantOperation({
        operationId: 'listSavedPayloads', summary: 'List saved payloads', tag: 'Saved payloads', scope: 'read:payloads', rateLimitRoute: `GET ${T}/saved-payloads`,
        description: `The tenant's saved payloads, oldest first. ${pagingNote}`,
        parameters: listParams, success: { '200': ok('One page of saved payloads.', 'SavedPayloadList') }, forbidden: 'ForbiddenRead',
      }),
      post: tenantOperation({
        operationId: 'createSavedPayload', summary: 'Save a payload', tag: 'Saved payloads', scope: 'write:payloads', rateLimitRoute: `POST ${T}/saved-payloads`,
        description: 'Keeps a named JSON object, e.g. to send test events.',
        requestBody: jsonBody('SavedPayloadCreate', 'The payload.'),
        success: { '201': created('The saved payload.', 'SavedPayload') }, forbidden: 'ForbiddenCreate', conflict: 'IdempotencyConflict',
        tooLarge: `the request body is larger than ${MAX_JSON_BODY}, or \`payload\` is larger than ${MAX_PAYLOAD_BYTES} bytes of JSON.`,
      }),
    },
    [`${P}/saved-payloads/{payload_id}`]: {
      parameters: [tenant, idParam('SavedPayloadId')],
      get: tenantOperation({
        operationId: 'getSavedPayload', summary: 'Get a saved payload', tag: 'Saved payloads', scope: 'read:payloads', rateLimitRoute: `GET ${T}/saved-payloads/:id`,
        description: 'One saved payload.', success: { '200': ok('The saved payload.', 'SavedPayload') }, forbidden: 'ForbiddenReadResource', notFound: 'no such saved payload',
      }),
    },
    [`${P}/api-keys`]: {
      parameters: [tenant],
      get: tenantOperation({
        operationId: 'listApiKeys', summary: 'List API keys', tag: 'API keys', scope: 'read:keys', rateLimitRoute: `GET ${T}/api-keys`,
        description: `The tenant's API keys, oldest first, revoked and expired ones included, each with its status and last use; never a secret or its hash. ${pagingNote} A key limited to resource ids lists those and itself.`,
        parameters: listParams, success: { '200': ok('One page of API keys.', 'ApiKeyList') }, forbidden: 'ForbiddenRead',
      }),
      post: tenantOperation({
        operationId: 'createApiKey', summary: 'Create an API key', tag: 'API keys', scope: 'write:keys', rateLimitRoute: `POST ${T}/api-keys`,
        description: 'Issues a new API key of this tenant, with at most the scopes, resources and lifetime of the key making the request. The plain key is in this answer only. At most `MAX_API_KEYS_PER_TENANT` keys (default 100) per tenant, revoked ones included (403 quota-exceeded).',
        requestBody: jsonBody('ApiKeyCreate', 'The key.'),
        success: { '201': created('The key, with the plain API key.', 'ApiKeyCreated') }, forbidden: 'ForbiddenCreateResource', conflict: 'IdempotencyConflict',
      }),
    },
    [`${P}/api-keys/{key_id}`]: {
      parameters: [tenant, idParam('ApiKeyId')],
      get: tenantOperation({
        operationId: 'getApiKey', summary: 'Get an API key', tag: 'API keys', scope: 'read:keys', rateLimitRoute: `GET ${T}/api-keys/:id`,
        description: 'One API key with its status and last use; never its secret or its hash.', success: { '200': ok('The key.', 'ApiKey') }, forbidden: 'ForbiddenReadResource', notFound: 'no such API key',
      }),
    },
    [`${P}/api-keys/{key_id}/revoke`]: {
      parameters: [tenant, idParam('ApiKeyId')],
      post: tenantOperation({
        operationId: 'revokeApiKey', summary: 'Revoke an API key', tag: 'API keys', scope: 'write:keys', rateLimitRoute: `POST ${T}/api-keys/:id/revoke`,
        description: 'Revokes the key for good: every API process sharing the configuration topic refuses it (401 "the API key has been revoked") within about a second, usually ~100 ms. The key stays listed with `revoked_at`. A key may revoke itself; revoking a revoked key changes nothing and answers it as it is. No request body (an empty object at most; a member is refused, 400).',
        success: { '200': ok('The revoked key.', 'ApiKey') }, forbidden: 'ForbiddenWriteResource', notFound: 'no such API key', conflict: 'IdempotencyConflict',
      }),
    },
    [`${P}/replays`]: {
      parameters: [tenant],
      get: tenantOperation({
        operationId: 'listReplays', summary: 'List replay jobs', tag: 'Replays', scope: 'read:replays', rateLimitRoute: `GET ${T}/replays`,
        description: `The tenant's replay jobs, oldest first, finished ones included. ${pagingNote} A key limited to resource ids lists the jobs of its destinations.`,
        parameters: listParams, success: { '200': ok('One page of replay jobs.', 'ReplayJobList') }, forbidden: 'ForbiddenRead',
      }),
      post: tenantOperation({
        operationId: 'createReplay', summary: 'Start a replay job', tag: 'Replays', scope: 'write:replays', rateLimitRoute: `POST ${T}/replays`,
        description: `Delivers again every delivery whose latest attempt falls in the range and matches the filter, in the background: each becomes a new delivery (new id and \`webhook-id\`, attempt 1, the event's stored bytes, \`replay_of\` the original) to the same destination, in order of attempt time, at most \`REPLAY_RATE_PER_S\` (default 100) per second across the deployment. Its evidence leaf names the original (\`replay_of\`, docs/evidence.md). \`matched\` is counted at start: more than ${MAX_REPLAY_MATCHES} answers 422. At most ${MAX_RUNNING_REPLAYS} jobs of a tenant run at once (409).`,
        requestBody: jsonBody('ReplayCreate', 'The range and filter.'),
        success: { '202': { description: 'The job, running.', headers: tenantHeaders('Location'), content: { 'application/json': { schema: schema('ReplayJob') } } } },
        forbidden: 'ForbiddenWriteResource',
        conflict: { description: `the tenant already has ${MAX_RUNNING_REPLAYS} replay jobs running` },
        unprocessable: `\`to\` is not later than \`from\`, more than ${MAX_REPLAY_RANGE_DAYS} days after it or later than now, \`destination_id\` names no destination of the tenant (or is missing with a key limited to resource ids), or the range matches more than ${MAX_REPLAY_MATCHES} deliveries (replay a narrower one).`,
      }),
    },
    [`${P}/replays/{replay_id}`]: {
      parameters: [tenant, idParam('ReplayJobId')],
      get: tenantOperation({
        operationId: 'getReplay', summary: 'Get a replay job', tag: 'Replays', scope: 'read:replays', rateLimitRoute: `GET ${T}/replays/:id`,
        description: 'One replay job with its progress so far.', success: { '200': ok('The job.', 'ReplayJob') }, forbidden: 'ForbiddenReadResource', notFound: 'no such replay job',
      }),
      delete: tenantOperation({
        operationId: 'cancelReplay', summary: 'Cancel a replay job', tag: 'Replays', scope: 'write:replays', rateLimitRoute: `DELETE ${T}/replays/:id`,
        description: 'Stops queuing the job\'s remaining matches; the deliveries it already queued still run. The job stays listed as `cancelled`, its counts as they stood at the cancel: `replayed` every delivery queued before it (a batch being sent is waited for), `delivered` and `failed` those ended by then.',
        success: { '200': ok('The cancelled job.', 'ReplayJob') }, forbidden: 'ForbiddenWriteResource', notFound: 'no such replay job',
        conflict: { description: 'the job is no longer running (completed, cancelled or failed), also when its completion was recorded before this cancel' },
      }),
    },
    ...eventTypePaths({ P, T, tenant, idParam, tenantOperation, ok, created, noContent, jsonBody, listParams, pagingNote }),
    ...dashboardPaths({ P, T, tenant, idParam, tenantOperation, keyOperation: mcpOperation, ok }),
    ...deadLetterPaths({ P, T, tenant, tenantOperation, ok, schema, listParams, pagingNote }),
    ...exportPaths({ P, T, tenant, tenantOperation, tenantHeaders: tenantHeaders(), deliverySearch: [ref('parameters', 'DeliveryStatus'), ...SEARCH_PARAMETERS.map((p) => ref('parameters', p))], logLevel: ref('parameters', 'LogLevel') }),
    ...analyticsPaths({ P, T, tenant, tenantOperation, ok }),
    ...destinationTypePaths({ P, T, tenant, destinationId: idParam('DestinationId'), tenantOperation, ok, jsonBody, schema, headerRefs, problemResponse: (description, slug) => ({ description, headers: headerRefs(['X-Request-Id']), content: problemContent([slug as Exclude<ErrorSlug, 'method-not-allowed'>]) }) }),
    ...tenantResourcePaths({ P, T, tenant, destinationId: idParam('DestinationId'), tenantOperation, operatorOperation, ok, created, noContent, jsonBody, schema, headerRefs, listParams, problemResponse: (description, slug) => ({ description, headers: headerRefs(['X-Request-Id']), content: problemContent([slug as Exclude<ErrorSlug, 'method-not-allowed'>]) }) }),
    [`${P}/evidence/{delivery_id}`]: {
      parameters: [tenant, idParam('DeliveryId')],
      get: tenantOperation({
        operationId: 'getDeliveryEvidence', summary: 'Get the evidence of a delivery', tag: 'Evidence', scope: 'read:evidence', rateLimitRoute: `GET ${T}/evidence/:id`,
        description: 'The delivery attempt\'s leaf in the evidence log with its inclusion proof and the signed checkpoint it leads to (`confirmed`), or `pending` until the attempt is sealed. A proof reads O(log n) stored subtree hashes. A key limited to resource ids sees only deliveries to those destinations.',
        parameters: [ref('parameters', 'EvidenceAttempt'), ref('parameters', 'EvidenceTreeSize')],
        success: { '200': ok('The evidence.', 'DeliveryEvidence') }, forbidden: 'ForbiddenReadResource', notFound: 'no outcome of this delivery (or attempt) is recorded, or `tree_size` names no checkpoint that includes it',
      }),
    },
    [`${P}/evidence-log`]: {
      parameters: [tenant],
      get: tenantOperation({
        operationId: 'getEvidenceLog', summary: 'Describe the evidence log', tag: 'Evidence', scope: 'read:evidence', rateLimitRoute: `GET ${T}/evidence-log`,
        description: 'The log\'s origin, its checkpoint verifier key and its newest signed checkpoint.',
        success: { '200': ok('The evidence log.', 'EvidenceLog') }, forbidden: 'ForbiddenRead',
      }),
    },
    [`${P}/evidence-log/checkpoints`]: {
      parameters: [tenant],
      get: tenantOperation({
        operationId: 'listCheckpoints', summary: 'List signed checkpoints', tag: 'Evidence', scope: 'read:evidence', rateLimitRoute: `GET ${T}/evidence-log/checkpoints`,
        description: `Every signed checkpoint, one per sealed batch, newest first. ${pagingNote}`,
        parameters: listParams, success: { '200': ok('One page of checkpoints.', 'CheckpointList') }, forbidden: 'ForbiddenRead',
      }),
    },
    [`${P}/evidence-log/consistency`]: {
      parameters: [tenant],
      get: tenantOperation({
        operationId: 'getConsistencyProof', summary: 'Prove that the log only grew', tag: 'Evidence', scope: 'read:evidence', rateLimitRoute: `GET ${T}/evidence-log/consistency`,
        description: 'An RFC 9162 consistency proof between two signed checkpoints, so a client holding the older one can check that the newer tree contains it unchanged.',
        parameters: [ref('parameters', 'ConsistencyFrom'), ref('parameters', 'ConsistencyTo')],
        success: { '200': ok('The two checkpoints and the proof.', 'ConsistencyProof') }, forbidden: 'ForbiddenRead', notFound: 'no checkpoint has the tree size `from` or `to`',
      }),
    },
    [`${P}/logs`]: {
      parameters: [tenant],
      get: tenantOperation({
        operationId: 'listLogs', summary: 'Read the pipeline log', tag: 'Logs', scope: 'read:logs', rateLimitRoute: `GET ${T}/logs`,
        description: `The tenant's pipeline log lines (verification failures, filter drops, delivery outcomes...), newest first. \`level\` is a minimum level, not an exact match. ${pagingNote} The cursor is a keyset position (time, id), stable while lines are being added.`,
        parameters: [ref('parameters', 'LogLevel'), ...listParams],
        success: { '200': ok('One page of log lines.', 'LogList') }, forbidden: 'ForbiddenRead',
        unprocessable: '`level` is not one of debug, info, warn, error.',
      }),
    },
  };
}

interface McpOperation {
  operationId: string;
  summary: string;
  description: string;
  /** null: any valid key. */
  scope: Scope | null;
  rateLimitRoute: string;
  parameters?: Json[];
  success: Record<string, Json>;
  notFound?: string;
  badRequest?: string;
  unprocessable?: string;
  /** A 403 of an operation that needs no scope of its own. */
  forbidden?: Forbidden;
  notAcceptable?: string;
  /** Default: the evidence surface. */
  tag?: string;
}

function mcpOperation(o: McpOperation): Json {
  const responses: Json = { ...o.success };
  responses['400'] = o.badRequest ? tenantError(`validation-error: ${o.badRequest}`, ['validation-error']) : ref('responses', 'BadRequest');
  responses['401'] = ref('responses', 'Unauthorized');
  if (o.scope || o.forbidden) responses['403'] = ref('responses', o.forbidden ?? (o.notFound ? 'ForbiddenReadResource' : 'ForbiddenRead'));
  if (o.notFound) responses['404'] = tenantError(`not-found: ${o.notFound}`, ['not-found']);
  if (o.notAcceptable) responses['406'] = tenantError(`not-acceptable: ${o.notAcceptable}`, ['not-acceptable']);
  Object.assign(responses, bodyAndLimitErrors(o));
  return {
    operationId: o.operationId,
    summary: o.summary,
    description: o.description,
    tags: [o.tag ?? 'Evidence surface'],
    security: [{ bearerAuth: o.scope ? [o.scope] : [] }],
    'x-required-scope': o.scope,
    'x-rate-limit-route': o.rateLimitRoute,
    ...(o.parameters ? { parameters: o.parameters } : {}),
    responses,
  };
}

function mcpPaths(): Json {
  const idParam = (description: string): Json => ({ name: 'id', in: 'path', required: true, description, schema: { type: 'string', minLength: 1 } });
  const live = 'Measured when asked: nothing is cached.';
  const jsonRpcAnswer = (description: string): Json => ({ description, headers: tenantHeaders(), content: { 'application/json': { schema: schema('JsonRpcMessages') } } });
  return {
    '/v1/mcp': {
      post: {
        ...mcpOperation({
          operationId: 'mcp', summary: 'MCP endpoint (Streamable HTTP)', scope: null, rateLimitRoute: 'POST /v1/mcp',
          description: `The Model Context Protocol endpoint, stateless Streamable HTTP with JSON answers: send JSON-RPC messages (\`initialize\`, \`tools/list\`, \`tools/call\`, ...) with \`Accept: application/json, text/event-stream\`. Any valid key may connect; \`tools/list\` shows the tools the key's scopes allow and that are enabled, each with its input and output JSON Schema; every result carries \`structuredContent\`. A tool error (a REST answer that is not a success) is a result with \`isError\` and the problem document as text. A \`tools/call\` of a tool whose write group is disabled answers 403 write-tool-disabled (\`tool_group\`), and one whose scope the key lacks 403 insufficient-scope, before the MCP transport sees it. GET and DELETE answer 405: there is no session and no server-sent event stream. ${live}`,
          success: { '200': jsonRpcAnswer('The JSON-RPC answer(s).'), '202': { description: 'Only notifications or responses were sent: accepted, no body.', headers: tenantHeaders() } },
          forbidden: 'ForbiddenWrite',
          badRequest: 'the body is not a JSON-RPC 2.0 message or batch (or the batch is too long), or `MCP-Protocol-Version` names a version this server does not speak.',
          notAcceptable: '`Accept` does not list both `application/json` and `text/event-stream`.',
        }),
        requestBody: { required: true, description: 'One JSON-RPC 2.0 message or a batch.', content: { 'application/json': { schema: schema('JsonRpcMessages') } } },
      },
    },
    '/v1/mcp/endpoints': {
      get: mcpOperation({
        operationId: 'getMcpEndpoints', summary: 'Evidence endpoints and their scopes', scope: null, rateLimitRoute: 'GET /v1/mcp/endpoints',
        description: 'The routes of the evidence surface with the scope each needs, and the MCP tools with their group, scope and whether configuration enables them. Any valid key.',
        success: { '200': ok('The endpoints and tools.', 'McpEndpoints') },
      }),
    },
    '/v1/mcp/evidence/{id}': {
      get: mcpOperation({
        operationId: 'getMcpEvidence', summary: 'Evidence by endpoint or resource', scope: 'read:evidence', rateLimitRoute: 'GET /v1/mcp/evidence/:id',
        description: `Evidence of the key's tenant by identifier: a delivery id answers its proof (with \`attempt\` and \`tree_size\` as on GET .../evidence/{delivery_id}); an event, destination or ingester (endpoint) id its newest delivery attempts with the evidence status of each. ${live}`,
        parameters: [idParam('A delivery (`dlv_`), event (`evt_`), destination (`dst_`) or ingester (`ing_`) id.'), ref('parameters', 'EvidenceAttempt'), ref('parameters', 'EvidenceTreeSize')],
        success: { '200': ok('The evidence.', 'ResourceEvidence') },
        badRequest: 'the id is not a delivery, event, destination or ingester id, or `attempt`/`tree_size` is not a positive integer.',
        notFound: 'nothing of the key\'s tenant has this id (or no outcome of the delivery is recorded)',
      }),
    },
    '/v1/mcp/deliveries/{delivery_id}/status': {
      get: mcpOperation({
        operationId: 'getMcpDeliveryStatus', summary: 'Delivery status and outcome', scope: 'read:deliveries', rateLimitRoute: 'GET /v1/mcp/deliveries/:id/status',
        description: `One delivery of the key's tenant: its status and outcome, its attempts, the state transitions of its event and of itself, and its evidence status. ${live}`,
        parameters: [ref('parameters', 'DeliveryId')],
        success: { '200': ok('The status.', 'DeliveryStatusReport') },
        notFound: 'no such delivery in the key\'s tenant',
      }),
    },
    '/v1/mcp/planes': {
      get: mcpOperation({
        operationId: 'getMcpPlanes', summary: 'Operational planes', scope: 'read:operations', rateLimitRoute: 'GET /v1/mcp/planes',
        description: `The ingestion, processing, delivery, evidence, query and control planes, each with its status (the worst of its signals) and the signals behind it: the runtime and trust proofs and the dependency checks. Tenant-scoped signals are measured over the key's tenant. ${live}`,
        success: { '200': { ...ok('The planes.', 'Planes'), headers: tenantHeaders('Cache-Control') } },
      }),
    },
    '/v1/mcp/logs/{id}': {
      get: mcpOperation({
        operationId: 'getMcpLogs', summary: 'Logs of a resource', scope: 'read:logs', rateLimitRoute: 'GET /v1/mcp/logs/:id',
        description: 'The log lines of the key\'s tenant that name the resource as their event, delivery, destination, ingester or correlation id, newest first. Paged as GET .../logs; a cursor is bound to the id and `level`.',
        parameters: [idParam('An event, delivery, destination, ingester or correlation id.'), ref('parameters', 'LogLevel'), ref('parameters', 'Limit'), ref('parameters', 'Cursor')],
        success: { '200': ok('One page of log lines (possibly empty).', 'LogList') },
        unprocessable: '`level` is not one of debug, info, warn, error.',
      }),
    },
  };
}

function publicPaths(): Json {
  const problemResponse = (description: string, slug: Exclude<ErrorSlug, 'method-not-allowed'>): Json => ({ description, headers: headerRefs(['X-Request-Id']), content: problemContent([slug]) });
  /** The answers of the live checks, under /v1/mcp/health and /readyz alike. */
  const readiness = (okDescription: string): Json => {
    const health = (status: Json, description: string): Json => ({ description, headers: headerRefs(['X-Request-Id', 'Cache-Control']), content: { 'application/json': { schema: { allOf: [schema('Health'), status] } } } });
    return {
      '200': health({ properties: { status: { const: 'ok' } }, not: { required: ['failing'] } }, okDescription),
      '503': health({ properties: { status: { const: 'unavailable' } }, required: ['failing'] }, 'Some dependency is down or still starting; `failing` names them.'),
      '500': problemResponse('internal-error: the health check itself failed.', 'internal-error'),
    };
  };
  return {
    '/v1/mcp/health': {
      get: {
        operationId: 'getHealth',
        summary: 'Service health',
        description: 'Live checks of Kafka, the schema registry, Redis, ClickHouse and this process\'s pipeline, with build and version metadata. No authentication.',
        tags: ['Health'],
        security: [],
        responses: readiness('Every dependency is up (or unused by this process).'),
      },
    },
    '/readyz': {
      get: {
        operationId: 'getReadiness',
        summary: 'Readiness of this process',
        description: 'Served by every process of the service, whatever its stages or role (a process without the API serves only these two paths and `/v1/mcp/health`). The same live checks as `/v1/mcp/health`: 200 once every dependency this process uses answers and its stages run, 503 naming in `failing` the dependencies that are down or starting. For a load balancer or an orchestrator\'s readiness probe. No authentication.',
        tags: ['Health'],
        security: [],
        responses: readiness('Every dependency this process uses is up, and its stages run.'),
      },
    },
    '/healthz': {
      get: {
        operationId: 'getLiveness',
        summary: 'Liveness of this process',
        description: 'Served by every process of the service: 200 while the process answers at all. Asks no dependency (an outage of Kafka, Redis or ClickHouse is not cured by restarting this process: `/readyz` reports those). For an orchestrator\'s liveness probe. No authentication.',
        tags: ['Health'],
        security: [],
        responses: {
          '200': { description: 'The process is alive.', headers: headerRefs(['X-Request-Id', 'Cache-Control']), content: { 'application/json': { schema: schema('Liveness') } } },
          '500': problemResponse('internal-error: the check itself failed.', 'internal-error'),
        },
      },
    },
    '/metrics': {
      get: {
        operationId: 'getMetrics',
        summary: 'Prometheus metrics of this process',
        description: 'Served by every process of the service, whatever its stages or role: the metrics of this process in the Prometheus text exposition format (version 0.0.4), for a Prometheus scrape. The Node process metrics under their standard names (`process_cpu_seconds_total`, `process_resident_memory_bytes`, `nodejs_*`) and the pipeline\'s under `hookline_` (deliveries by outcome and their duration, Hook URL requests accepted and refused, consumer lag per stage, topic and partition, circuit breakers, Kafka produce duration, sink rows and flush duration, evidence tree size and seal duration; docs/operations.md lists them). When the deployment sets `METRICS_TOKEN`, a request must carry it as `Authorization: Bearer <token>` (401 otherwise); unset, anyone who reaches the port may read it, and no metric names a tenant\'s objects. No API key.',
        tags: ['Health'],
        security: [],
        responses: {
          '200': {
            description: 'The metrics, in the Prometheus text format.',
            headers: { ...headerRefs(['X-Request-Id']), 'Cache-Control': { description: 'Metrics are never cached.', required: true, schema: { type: 'string', const: 'no-store' } } },
            content: { 'text/plain': { schema: { type: 'string', description: 'Prometheus text exposition format 0.0.4 (`text/plain; version=0.0.4; charset=utf-8`).' } } },
          },
          '401': { description: 'unauthorized: `METRICS_TOKEN` is set and the request does not carry it as a bearer token.', headers: headerRefs(['X-Request-Id', 'WWW-Authenticate']), content: problemContent(['unauthorized']) },
          '500': problemResponse('internal-error: the metrics could not be collected.', 'internal-error'),
        },
      },
    },
    '/v1/hooks/{ingester_id}': {
      post: {
        operationId: 'receiveWebhook',
        summary: 'Hook URL: receive a webhook',
        description: 'Where senders POST webhooks for one ingester. No bearer authentication: the ingester\'s provider signature is checked afterwards by the validate stage (a webhook that fails verification is still accepted here, then moves to `failed`). The body is taken as raw bytes of any content type (up to `INGEST_MAX_BODY_BYTES`, default 1 MiB) and travels unchanged, with method, query, headers and source address, so provider signatures stay verifiable. The answer comes only once Kafka has acknowledged the event (acks=all) with its `received` transition. Rate-limited per Hook URL (`INGEST_RATE_LIMIT_PER_HOOK`) and per tenant across its Hook URLs (`INGEST_RATE_LIMIT_PER_TENANT`), failing open when Redis is unreachable; no `Idempotency-Key`.',
        tags: ['Hooks'],
        security: [],
        parameters: [
          { name: 'ingester_id', in: 'path', required: true, description: 'The ingester (its `hook_url`).', schema: { type: 'string' }, examples: { id: { value: `${ID_PREFIX.ingester}_${EXAMPLE_ULID}` } } },
          { name: 'X-Correlation-Id', in: 'header', required: false, description: 'Correlation id to carry (1 to 128 visible ASCII characters); else the trace id of `traceparent`, else one is assigned.', schema: { type: 'string' } },
          { name: 'traceparent', in: 'header', required: false, description: 'W3C trace context: a valid one is continued (its trace id becomes the event\'s trace, and `tracestate`, up to 512 characters, travels with it); else a new trace begins. Every delivery of the event carries the trace on in its own `traceparent`.', schema: { type: 'string' } },
          { name: 'X-Hookline-Hops', in: 'header', required: false, description: 'Set by this service on every delivery: how many of its deliveries the payload has passed through. Absent counts as 0; above `MAX_HOPS` (default 3) the webhook is refused with 422.', schema: { type: 'string' } },
        ],
        requestBody: { required: false, description: 'Any bytes, any content type (gzip, deflate and br encodings are decoded).', content: { '*/*': { schema: {} } } },
        responses: {
          '202': { description: 'Accepted: Kafka has the event.', headers: headerRefs(['X-Request-Id', 'X-Correlation-Id']), content: { 'application/json': { schema: schema('HookAccepted') } } },
          '400': { description: 'validation-error: the body could not be read (e.g. a corrupt compressed body).', headers: headerRefs(['X-Request-Id']), content: problemContent(['validation-error']) },
          '403': problemResponse('tenant-suspended: the ingester\'s tenant is suspended; nothing was accepted. Its Hook URLs accept webhooks again once an operator resumes it.', 'tenant-suspended'),
          '404': problemResponse('not-found: no such ingester (also after it was deleted).', 'not-found'),
          '413': problemResponse('payload-too-large: the body is larger than `INGEST_MAX_BODY_BYTES`, or than the tenant\'s own `limits.max_payload_bytes`.', 'payload-too-large'),
          '415': problemResponse('unsupported-media-type: an unsupported `Content-Encoding`.', 'unsupported-media-type'),
          '422': problemResponse('unprocessable-entity: `X-Hookline-Hops` says the webhook has passed through more than `MAX_HOPS` deliveries of this service (a loop).', 'unprocessable-entity'),
          '429': { description: 'rate-limit-exceeded: over the limit of this Hook URL or of its tenant; nothing was accepted. `Retry-After` and `retry_after_seconds` say when to try again; the RateLimit headers give the limit that refused it (remaining 0).', headers: headerRefs(['X-Request-Id', 'RateLimit', 'RateLimit-Policy', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After']), content: problemContent(['rate-limit-exceeded']) },
          '500': problemResponse('internal-error: an unexpected failure; the sender should retry.', 'internal-error'),
          '503': { description: 'service-unavailable: the service is starting, or Kafka did not acknowledge the event within `INGEST_ACK_TIMEOUT_MS` (a broker frozen or gone, leadership moving); the sender should retry after `Retry-After` (also `retry_after_seconds`). `detail` says whether the event was not stored (it was still waiting for a Kafka request) or may still be (its request had not come back): a retry of the latter may be received twice.', headers: headerRefs(['X-Request-Id', 'Retry-After']), content: problemContent(['service-unavailable']) },
        },
      },
    },
    '/v1/openapi.json': {
      get: {
        operationId: 'getOpenApiDocument',
        summary: 'This OpenAPI document',
        description: 'The OpenAPI 3.1 description of this API. No authentication.',
        tags: ['Meta'],
        security: [],
        responses: {
          '200': { description: 'The document.', headers: headerRefs(['X-Request-Id']), content: { 'application/json': { schema: schema('OpenApiDocument') } } },
          '500': problemResponse('internal-error.', 'internal-error'),
        },
      },
    },
  };
}

const API_DESCRIPTION = `Webhook ingestion and delivery on Apache Kafka. Webhooks enter at per-ingester Hook URLs, pass verification, filters and delivery flows, and are delivered to destinations with Standard Webhooks signatures and retries.

**Authentication.** Every \`/v1/tenants/{tenant_id}/...\` call carries \`Authorization: Bearer <API key>\` (a tenant API key, \`hlk_...\`). Each operation names the scope it needs in \`x-required-scope\` (and in its \`security\` requirement); a key without it gets 403 insufficient-scope. A key sees only its own tenant: another tenant's path answers 404. A key may be limited to some resource ids: lists then show only those (destinations, ingesters, flows, deliveries by destination) and other objects answer 403 permission-denied. Write groups (write scopes) can be switched off per deployment (\`DISABLED_WRITE_GROUPS\`): 403 write-tool-disabled.

**Order of checks** on tenant routes: service ready (503), authentication (401), tenant (404), rate limit (429), JSON body (415, 413, 400), Idempotency-Key (400, 409, 503), scope and write group (403), then the operation's own checks.

**Errors** are RFC 9457 problem documents (\`application/problem+json\`) with \`type\` \`<ERROR_BASE>/errors/<slug>\`, \`title\`, \`status\`, \`detail\`, \`instance\` (the request id, also sent as \`X-Request-Id\`), and the extra members of their type. 400 validation-error lists every problem in \`errors\` ([{field, message}]); an unknown value of a query filter (\`status\`, \`level\`, \`stage\`) is 422. A request whose line and headers exceed ${maxHeaderSize} bytes is answered 431 request-header-fields-too-large on every path, before any route or check.

**Lists** answer an envelope: the items under a resource-named member (\`destinations\`, \`ingesters\`, \`delivery_flows\`, \`deliveries\`, \`saved_payloads\`, \`api_keys\`, \`logs\`, \`dead_letters\`) and \`next_cursor\` (an opaque string, \`null\` on the last page). \`limit\` is 1 to ${MAX_LIMIT} (default ${DEFAULT_LIMIT}). A cursor is bound to the filters it was issued with. Configuration lists are in creation order; deliveries, logs and dead letters newest first. Deliveries list one item per attempt.

**Idempotency.** Every write (POST, PUT, PATCH, DELETE) takes an optional \`Idempotency-Key\` header; see the parameter.

**Rate limits** apply per API key and route (\`RATE_LIMITS\`; each operation's route key is in \`x-rate-limit-route\`). Answers carry \`RateLimit\`, \`RateLimit-Policy\`, \`RateLimit-Limit\`, \`RateLimit-Remaining\` and \`RateLimit-Reset\`; over the limit: 429 with \`Retry-After\` and \`retry_after_seconds\`. When Redis is unreachable, limits fail open and the headers are absent.

**Request bodies** of tenant routes are JSON only (\`application/json\` or \`*+json\`, at most ${MAX_JSON_BODY}); members the API does not know are refused (400 validation-error naming each); members a GET shows that the service sets (\`id\`, \`created_at\`, ...) are accepted back and left as stored, so an object read can be sent back as it was.

**Evidence surface.** Routes under \`/v1/mcp/\` take the same keys; the key's own tenant is implied. \`POST /v1/mcp\` is a Model Context Protocol server (Streamable HTTP) whose tools mirror these routes and add live runtime and trust proofs.`;

/** Node's parser refuses oversized headers before any route runs: every operation may answer 431. */
function withHeaderLimit(paths: Json): Json {
  for (const item of Object.values(paths) as Json[]) {
    for (const op of Object.values(item) as Json[]) {
      // beside the operations a path item may hold its `parameters`, `summary`, `description`
      if (typeof op.operationId === 'string') (op.responses as Json)['431'] = ref('responses', 'RequestHeaderFieldsTooLarge');
    }
  }
  return paths;
}

/** The component each operation's JSON request body is, by operationId: what the routes validate the body with. */
export function requestBodyComponents(doc: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of Object.values(doc.paths as Record<string, Json>)) {
    for (const op of Object.values(item) as Json[]) {
      const ref = ((op?.requestBody as Json | undefined)?.content as Record<string, Json> | undefined)?.['application/json']?.schema as Json | undefined;
      if (typeof ref?.$ref === 'string') out[String(op.operationId)] = ref.$ref.replace('#/components/schemas/', '');
    }
  }
  return out;
}

/** The OpenAPI 3.1 document of the API; `errorBase` is the base of the problem type URIs (ERROR_BASE). */
export function openApiDocument(options: { errorBase: string; serverUrl?: string }): Record<string, unknown> {
  const { errorBase } = options;
  return {
    openapi: '3.1.0',
    info: {
      title: 'hookline API',
      version: packageJson.version,
      description: API_DESCRIPTION,
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    // without a URL of its own, the origin that serves the document: OpenAPI's default, said outright for the tools that need it
    servers: [{ url: options.serverUrl ? options.serverUrl.replace(/\/+$/, '') : '/' }],
    tags: [
      { name: 'Health', description: 'Service health and build metadata.' },
      { name: 'Hooks', description: 'Hook URLs where webhooks arrive.' },
      { name: 'Destinations', description: 'Targets: the receivers webhooks are delivered to.' },
      { name: 'Ingesters', description: 'Endpoints: where webhooks enter, with their provider verification and filters.' },
      { name: 'Delivery flows', description: 'Routing from ingesters to destinations.' },
      { name: 'Deliveries', description: 'Delivery attempts as recorded.' },
      { name: 'Events', description: 'Received events, and operations on them.' },
      { name: 'Dead letters', description: 'Records a stage of the pipeline set aside (undecodable, or a cause such as filters that no longer compile), and putting them back once the cause is fixed.' },
      { name: 'Saved payloads', description: 'Named JSON payloads a tenant keeps.' },
      { name: 'API keys', description: 'The tenant\'s API keys: issue, list, revoke.' },
      { name: 'Replays', description: 'Delivering again, in the background, the deliveries of a time range.' },
      { name: 'Event types', description: 'The tenant\'s catalogue of event types, with the JSON Schema of each payload: what destinations subscribe to.' },
      { name: 'Logs', description: 'The tenant\'s pipeline log.' },
      { name: 'Exports', description: 'A tenant\'s deliveries, events and logs as NDJSON, CSV or Parquet, a bounded page per request, resumable by cursor.' },
      { name: 'Evidence', description: 'The verifiable log of delivery outcomes: inclusion proofs, signed checkpoints, consistency proofs.' },
      { name: 'Stats', description: 'What a dashboard of the tenant shows: throughput and errors over time, the pipeline\'s lag, the breakers of its destinations.' },
      { name: 'Identity', description: 'Which tenant and scopes an API key has.' },
      { name: 'Tenants', description: 'Tenants as a resource, for operators (operator keys only): create, suspend and resume, limits of their own, the portal\'s branding.' },
      { name: 'Portal', description: 'Portal sessions: one-time links that open the portal (/ui) signed in for a tenant, with an HttpOnly session cookie instead of an API key.' },
      { name: 'Evidence surface', description: 'The read-oriented surface under /v1/mcp: the MCP endpoint, planes, delivery status, evidence and logs by resource, all measured live.' },
      { name: 'Meta', description: 'This document.' },
    ],
    paths: withHeaderLimit({ ...publicPaths(), ...mcpPaths(), ...tenantPaths() }),
    components: {
      schemas: schemas(errorBase),
      responses: responses(),
      parameters: parameters(),
      headers: headers(),
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'hlk_<ulid>_<secret>',
          description: `A tenant API key (\`npm run cli -- keys create\`, or \`POST /v1/tenants/{tenant_id}/api-keys\`); a revoked or expired key answers 401. Scopes: ${SCOPES.map((s) => `\`${s}\``).join(', ')}. The scopes an operation lists in its security requirement are the ones the key must hold.`,
        },
      },
    },
  };
}
