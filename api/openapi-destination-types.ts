import { DESTINATION_TYPE_SPECS, MAX_TRANSFORMATION_BYTES } from '../core/destination-types';
import { DESTINATION_TYPES } from '../core/model';
import type { TenantOperation } from './openapi';

/**
 * The destination types' part of the OpenAPI document (api/openapi.ts spreads it in): each
 * type's config schema, the list of types with their schemas, and the test run of a
 * transformation. The schemas are core/destination-types.ts's own, so the document, the
 * /v1/destination-types answer and the checks of create and update never differ.
 */

type Json = Record<string, unknown>;

/** Component names of the config schemas, by type. */
export const CONFIG_COMPONENTS = { kafka: 'KafkaDestinationConfig', amqp: 'AmqpDestinationConfig', nats: 'NatsDestinationConfig', mqtt: 'MqttDestinationConfig' } as const;

export interface DestinationTypeSchemaHelpers {
  schema(name: string): Json;
  nullable(s: Json): Json;
}

export function destinationTypeSchemas(h: DestinationTypeSchemaHelpers): Json {
  const configs = Object.fromEntries(
    Object.entries(CONFIG_COMPONENTS).map(([type, name]) => {
      const spec = DESTINATION_TYPE_SPECS[type as keyof typeof CONFIG_COMPONENTS];
      return [name, { ...spec.config_schema, description: `\`config\` of a \`${type}\` destination (${spec.title}). Delivered when ${spec.delivered_when}.` }];
    }),
  );
  return {
    DestinationType: {
      type: 'string', enum: [...DESTINATION_TYPES], default: 'webhook',
      description: 'Where deliveries go: `webhook` (an HTTP POST, the default), `kafka`, `amqp`, `nats` (JetStream) or `mqtt`. Each type has its own `url` schemes, `config` schema and `auth` types (GET /v1/destination-types). Every type has the same guarantees: an attempt row and outcome record, an evidence leaf, the retry schedule and dead letters, breakers, rate limit, pause and replay.',
    },
    DestinationConfig: {
      type: ['object', 'null'],
      description: `The settings of a broker type, checked against that type's schema: ${Object.entries(CONFIG_COMPONENTS).map(([t, n]) => `\`${t}\`: ${n}`).join('; ')}. Required for a broker type; \`null\` (or absent) for a webhook. Problems are reported by member (\`config.topic\`).`,
    },
    ...configs,
    Transformation: {
      type: ['string', 'null'], maxLength: MAX_TRANSFORMATION_BYTES,
      description: `JavaScript that defines \`function transform(event)\`, run before every attempt in a WebAssembly sandbox (QuickJS) with a CPU-time and a memory limit and no I/O. \`event\` has \`id\`, \`delivery_id\`, \`destination_id\`, \`attempt\`, \`content_type\`, \`received_at\` and \`body\` (parsed when JSON, else text). It returns \`null\` to drop the delivery (its attempt is recorded as \`dropped\`), or \`{ body, headers?, method?, path? }\`: a string \`body\` is sent as it is, any other value as JSON; \`headers\` are added (not the service's own); \`method\` (POST, PUT, PATCH) and \`path\` (replacing the URL's path and query) apply to webhooks. Code that throws, runs out of time or memory, or returns anything else fails that attempt (retried as any failure), with the reason in the attempt's error. At most ${MAX_TRANSFORMATION_BYTES} bytes; checked to compile on create and update (400). \`null\`: sent as received.`,
    },
    DestinationTypeInfo: {
      type: 'object',
      required: ['type', 'title', 'description', 'schemes', 'url_example', 'default_ports', 'config_schema', 'auth_types', 'delivered_when', 'headers_in'],
      additionalProperties: false,
      properties: {
        type: h.schema('DestinationType'),
        title: { type: 'string' },
        description: { type: 'string' },
        schemes: { type: 'array', items: { type: 'string' }, description: 'The schemes `url` may use.' },
        url_example: { type: 'string' },
        default_ports: { type: 'object', additionalProperties: { type: 'integer' }, description: 'The port a URL without one connects to, per scheme.' },
        config_schema: { type: ['object', 'null'], description: 'JSON Schema (2020-12) of `config`; `null`: the type takes none.' },
        auth_types: { type: 'array', items: { type: 'string', enum: ['basic', 'bearer', 'header'] }, description: 'The `auth` types accepted (each optional).' },
        delivered_when: { type: 'string', description: 'What makes an attempt delivered.' },
        headers_in: { type: 'string', description: 'Where the Standard Webhooks headers travel.' },
      },
    },
    DestinationTypeList: {
      type: 'object', required: ['destination_types'], additionalProperties: false,
      properties: { destination_types: { type: 'array', items: h.schema('DestinationTypeInfo') } },
    },
    TransformationTest: {
      type: 'object',
      description: 'What to run the transformation on: a saved payload (`payload_id`) or a `body` given here (exactly one), and optionally the code to run instead of the destination\'s own (to try a change before saving it).',
      required: [],
      additionalProperties: false,
      properties: {
        payload_id: { ...h.schema('SavedPayloadId'), description: 'A saved payload of the tenant, as the event body (application/json).' },
        body: { description: 'The event body: any JSON value (a string is taken as a text body).' },
        content_type: { type: 'string', minLength: 1, maxLength: 200, description: 'The event\'s content type (default `application/json`, or `text/plain` for a string body).' },
        transformation: { type: 'string', minLength: 1, maxLength: MAX_TRANSFORMATION_BYTES, description: 'Code to run instead of the destination\'s transformation; nothing is saved.' },
      },
    },
    TransformationTestResult: {
      type: 'object',
      required: ['outcome', 'cpu_ms'],
      additionalProperties: false,
      properties: {
        outcome: { type: 'string', enum: ['send', 'drop', 'fail'], description: '`send`: an attempt would send what follows; `drop`: the transformation returned null, nothing would be sent; `fail`: the attempt would fail with `error`.' },
        body: { type: 'string', description: 'The body an attempt would send (UTF-8 text; invalid sequences replaced).' },
        body_sha256: { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'SHA-256 of the body an attempt would send: what its attempt row and evidence leaf carry.' },
        content_type: { type: 'string' },
        headers: { type: 'object', additionalProperties: { type: 'string' }, description: 'The headers the transformation adds.' },
        method: { type: 'string' },
        path: { type: 'string' },
        error: { type: 'string', description: 'Why the attempt would fail.' },
        cpu_ms: { type: 'number', description: 'Time the run took in the sandbox, ms.' },
      },
    },
  };
}

export interface DestinationTypePathHelpers {
  P: string;
  T: string;
  tenant: Json;
  destinationId: Json;
  tenantOperation(o: TenantOperation): Json;
  ok(description: string, schemaName: string): Json;
  jsonBody(name: string, description: string): Json;
  schema(name: string): Json;
  headerRefs(names: string[]): Json;
  problemResponse(description: string, slug: string): Json;
}

export function destinationTypePaths(h: DestinationTypePathHelpers): Json {
  return {
    '/v1/destination-types': {
      get: {
        operationId: 'listDestinationTypes',
        summary: 'Destination types and their config schemas',
        description: 'Every destination type with its URL schemes, the JSON Schema of its `config`, the `auth` types it takes and what counts as delivered: what a form for a destination is built from. Create and update check a destination against the same schemas. No authentication.',
        tags: ['Destinations'],
        security: [],
        responses: {
          '200': { description: 'The types.', headers: h.headerRefs(['X-Request-Id']), content: { 'application/json': { schema: h.schema('DestinationTypeList') } } },
          '500': h.problemResponse('internal-error.', 'internal-error'),
        },
      },
    },
    [`${h.P}/destinations/{destination_id}/transformation/test`]: {
      parameters: [h.tenant, h.destinationId],
      post: h.tenantOperation({
        operationId: 'testDestinationTransformation', summary: 'Run a transformation on a payload', tag: 'Destinations', scope: 'write:destinations', rateLimitRoute: `POST ${h.T}/destinations/:id/transformation/test`,
        description: 'Runs the destination\'s transformation (or the `transformation` given) in the sandbox on a saved payload or a given body, as an attempt would, and shows what the attempt would send, or why it would fail. Nothing is sent or saved. A destination without a transformation shows the body as it would be sent unchanged.',
        requestBody: h.jsonBody('TransformationTest', 'The payload, and optionally the code.'),
        success: { '200': h.ok('What an attempt would send.', 'TransformationTestResult') }, forbidden: 'ForbiddenWriteResource', notFound: 'no such destination, or no such saved payload',
        conflict: 'IdempotencyConflict',
      }),
    },
  };
}
