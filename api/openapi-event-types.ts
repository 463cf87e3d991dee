import { JSON_SCHEMA_2020_12, MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH } from '../core/event-type-schema';
import { EVENT_TYPE_NAME_PATTERN } from '../core/subscriptions';
import type { TenantOperation } from './openapi';

/**
 * The event type catalogue's part of the OpenAPI document (api/openapi.ts spreads it in): its
 * component schemas and its operations, built with the document's own helpers.
 */

type Json = Record<string, unknown>;

export const MAX_EVENT_TYPE_DESCRIPTION = 1000;

export interface SchemaHelpers {
  schema(name: string): Json;
  typedId(kind: 'eventType', what: string): Json;
  nullable(s: Json): Json;
  shownBack(names: string[]): Record<string, Json>;
  listOf(member: string, item: string, order: string): Json;
}

export function eventTypeSchemas(h: SchemaHelpers): Json {
  const name: Json = { type: 'string', pattern: EVENT_TYPE_NAME_PATTERN, 'x-pattern-message': 'must be 1 to 200 of A-Z a-z 0-9 . _ : -', description: 'The event type as events carry it, like `invoice.paid`: 1 to 200 of `A-Z a-z 0-9 . _ : -`. Unique in the tenant (case-insensitive); fixed once created.', examples: ['invoice.paid'] };
  const description: Json = h.nullable({ type: 'string', maxLength: MAX_EVENT_TYPE_DESCRIPTION, description: `What the event means, at most ${MAX_EVENT_TYPE_DESCRIPTION} characters.` });
  const payloadSchema: Json = h.nullable({
    type: 'object',
    description: `JSON Schema (${JSON_SCHEMA_2020_12}) of the payload. It must compile (an invalid schema answers 422 naming \`schema\`), be at most ${MAX_SCHEMA_BYTES} bytes of JSON and ${MAX_SCHEMA_DEPTH} levels deep, refer only within itself (\`$ref\` starting with \`#\`), and its \`pattern\`s must be RE2 expressions (as filter patterns). \`$schema\`, when given, must be the 2020-12 URI. Kept and shown as documentation; the service does not validate payloads against it.`,
  });
  const members = { name, description, schema: payloadSchema };
  return {
    EventTypeId: h.typedId('eventType', 'an event type'),
    EventTypeCreate: {
      type: 'object',
      description: 'A new event type of the catalogue. Members a GET shows that the service sets (`id`, `created_at`, `updated_at`) are accepted and left as the service sets them; any other member is refused (400).',
      required: ['name'],
      additionalProperties: false,
      properties: { ...h.shownBack(['id', 'example', 'created_at', 'updated_at']), ...members },
    },
    EventTypeReplace: {
      type: 'object',
      description: 'The new description and schema; an absent one becomes null. `name` may be sent back as it is (GET-then-PUT), a different one answers 422: subscriptions name event types by name. Any other member than those a GET shows is refused (400).',
      required: [],
      additionalProperties: false,
      properties: { ...h.shownBack(['id', 'example', 'created_at', 'updated_at']), ...members },
    },
    EventType: {
      type: 'object',
      required: ['id', 'name', 'description', 'schema', 'example', 'created_at', 'updated_at'],
      properties: { id: h.schema('EventTypeId'), name: { type: 'string' }, description: { type: ['string', 'null'] }, schema: { type: ['object', 'null'] }, example: { description: 'An example payload: the schema\'s first `examples` entry, else one built from the schema (each property\'s `const`, `default`, first `enum` value or a value of its type); `null` without a schema. What a test event of this type sends by default.' }, created_at: h.schema('Timestamp'), updated_at: h.schema('Timestamp') },
      additionalProperties: false,
    },
    EventTypeList: h.listOf('event_types', 'EventType', 'by id (creation time), oldest first'),
  };
}

export interface PathHelpers {
  /** `/v1/tenants/{tenant_id}` and the rate-limit form `/v1/tenants/:tenantId`. */
  P: string;
  T: string;
  tenant: Json;
  idParam(name: string): Json;
  tenantOperation(o: TenantOperation): Json;
  ok(description: string, schemaName: string): Json;
  created(description: string, schemaName: string): Json;
  noContent(description: string): Json;
  jsonBody(name: string, description: string): Json;
  listParams: Json[];
  pagingNote: string;
}

export function eventTypePaths(h: PathHelpers): Json {
  const { P, T } = h;
  const tag = 'Event types';
  const refusedSchema = 'the `schema` is not valid JSON Schema 2020-12, does not compile, refers outside itself, is too large or too deep, or has a `pattern` RE2 cannot run; `errors` names `schema` or the member inside it.';
  return {
    [`${P}/event-types`]: {
      parameters: [h.tenant],
      get: h.tenantOperation({
        operationId: 'listEventTypes', summary: 'List event types', tag, scope: 'read:event-types', rateLimitRoute: `GET ${T}/event-types`,
        description: `The tenant's event type catalogue, oldest first, each with its schema. ${h.pagingNote}`,
        parameters: h.listParams, success: { '200': h.ok('One page of event types.', 'EventTypeList') }, forbidden: 'ForbiddenRead',
      }),
      post: h.tenantOperation({
        operationId: 'createEventType', summary: 'Create an event type', tag, scope: 'write:event-types', rateLimitRoute: `POST ${T}/event-types`,
        description: 'Adds an event type to the catalogue, with an optional description and JSON Schema of its payload. At most `MAX_EVENT_TYPES_PER_TENANT` (default 1000) per tenant.',
        requestBody: h.jsonBody('EventTypeCreate', 'The event type.'),
        success: { '201': h.created('The event type.', 'EventType') }, forbidden: 'ForbiddenCreate',
        conflict: { description: 'an event type with this name (case-insensitive) exists in the tenant' }, unprocessable: refusedSchema,
      }),
    },
    [`${P}/event-types/{event_type_id}`]: {
      parameters: [h.tenant, h.idParam('EventTypeId')],
      get: h.tenantOperation({
        operationId: 'getEventType', summary: 'Get an event type', tag, scope: 'read:event-types', rateLimitRoute: `GET ${T}/event-types/:id`,
        description: 'One event type with its schema.', success: { '200': h.ok('The event type.', 'EventType') }, forbidden: 'ForbiddenReadResource', notFound: 'no such event type',
      }),
      put: h.tenantOperation({
        operationId: 'replaceEventType', summary: 'Replace an event type\'s description and schema', tag, scope: 'write:event-types', rateLimitRoute: `PUT ${T}/event-types/:id`,
        description: 'Replaces the description and schema; an absent one becomes null. The name cannot change.',
        requestBody: h.jsonBody('EventTypeReplace', 'The replacement.'),
        success: { '200': h.ok('The event type.', 'EventType') }, forbidden: 'ForbiddenWriteResource', notFound: 'no such event type', conflict: 'IdempotencyConflict',
        unprocessable: `${refusedSchema} Or \`name\` differs from the stored one.`,
      }),
      delete: h.tenantOperation({
        operationId: 'deleteEventType', summary: 'Delete an event type', tag, scope: 'write:event-types', rateLimitRoute: `DELETE ${T}/event-types/:id`,
        description: 'Removes the event type from the catalogue and frees its name. Subscriptions that name it are left as they are: they match on the name events carry.',
        success: { '204': h.noContent('Deleted.') }, forbidden: 'ForbiddenWriteResource', notFound: 'no such event type', conflict: 'IdempotencyConflict',
      }),
    },
  };
}
