import type { TenantOperation } from './openapi';
import { DEAD_LETTER_STAGES } from './routes/dead-letters';

/**
 * The dead letters' part of the OpenAPI document (api/openapi.ts spreads it in): the records any
 * stage set aside, listed per tenant and put back where they were read. Built with the
 * document's own helpers.
 */

type Json = Record<string, unknown>;

export interface DeadLetterSchemaHelpers {
  schema(name: string): Json;
  typedId(kind: 'deadLetter', what: string): Json;
  nullable(s: Json): Json;
  listOf(member: string, item: string, order: string): Json;
}

export function deadLetterSchemas(h: DeadLetterSchemaHelpers): Json {
  const place = (what: string): Json => ({
    type: 'object',
    description: what,
    required: ['topic', 'partition', 'offset'],
    properties: { topic: { type: 'string' }, partition: { type: 'integer', minimum: 0 }, offset: { type: 'integer', minimum: 0 } },
    additionalProperties: false,
  });
  const shown: Json = {
    id: h.schema('DeadLetterId'),
    stage: { type: 'string', enum: [...DEAD_LETTER_STAGES], description: 'The stage that set the record aside (`validate` for bytes on webhooks.received that do not decode; a filter or route letter carries the webhook as received, since the three run as one).' },
    reason: { type: 'string', description: 'Why: the stage\'s own reason, or `stage <name> failed on this record <n> times: <error>` for a handler that kept failing.' },
    at: { ...h.schema('Timestamp'), description: 'When it was set aside.' },
    event_id: h.nullable(h.schema('EventId')),
    record: { type: 'string', enum: ['WebhookEvent', 'DeliveryTask', 'DeliveryOutcome'], description: 'What the input record is: an event (its ingester in `resource_id`), a delivery task or an attempt\'s outcome (its destination).' },
    resource_id: { type: 'string', description: 'The ingester or destination the record belongs to: a key limited to resource ids sees the letters of its own.' },
    source: place('Where the record was read (and where a replay writes it back).'),
    replayed_at: { ...h.nullable(h.schema('Timestamp')), description: 'When its record was put back; `null` until then.' },
    replayed_by: { type: ['string', 'null'], description: 'Who put it back: the API key (`key_...`), or `operator` for the command line.' },
  };
  const detail: Json = {
    ...shown,
    key_base64: { type: ['string', 'null'], description: 'The record\'s key as read, base64; `null` for none.' },
    value_base64: { type: ['string', 'null'], description: 'The record\'s bytes as read (Confluent wire format: magic byte, schema id, Avro), base64; an event\'s or a delivery\'s body inside is sealed with the tenant\'s data key, as on Kafka (`body_key` names the key); `null` when the stored bytes do not match `value_sha256`.' },
    value_bytes: { type: ['integer', 'null'], minimum: 0 },
    value_sha256: h.schema('Sha256Hex'),
    value_expired: { type: 'boolean', description: 'The bytes were removed by retention (the tenant\'s `limits.retention.bodies_seconds`, else `RETENTION_BODIES`): `value_base64` is `null` and a replay answers 409.' },
  };
  return {
    DeadLetterId: h.typedId('deadLetter', 'a dead letter'),
    DeadLetter: {
      type: 'object',
      description: 'A record a stage of the pipeline set aside so that its partition could go on, with the stage and the reason.',
      required: Object.keys(shown),
      properties: shown,
      additionalProperties: false,
    },
    DeadLetterDetail: {
      type: 'object',
      description: 'A dead letter with the bytes it carries: what a replay writes back.',
      required: Object.keys(detail),
      properties: detail,
      additionalProperties: false,
    },
    DeadLetterList: h.listOf('dead_letters', 'DeadLetter', 'newest first'),
    DeadLetterReplayed: {
      type: 'object',
      description: 'The dead letter\'s record is back on the topic it was read from, acknowledged by Kafka: the pipeline handles it again from there.',
      required: ['status', 'dead_letter_id', 'stage', 'event_id', 'source', 'written', 'replayed_at', 'message'],
      properties: {
        status: { const: 'replayed' },
        dead_letter_id: h.schema('DeadLetterId'),
        stage: { type: 'string', enum: [...DEAD_LETTER_STAGES] },
        event_id: h.nullable(h.schema('EventId')),
        source: place('Where the record had been read.'),
        written: place('Where it was written again: the same topic, the partition its key leads to.'),
        replayed_at: h.schema('Timestamp'),
        message: { type: 'string' },
      },
      additionalProperties: false,
    },
  };
}

export interface DeadLetterPathHelpers {
  /** `/v1/tenants/{tenant_id}` and the rate-limit form `/v1/tenants/:tenantId`. */
  P: string;
  T: string;
  tenant: Json;
  tenantOperation(o: TenantOperation): Json;
  ok(description: string, schemaName: string): Json;
  schema(name: string): Json;
  listParams: Json[];
  pagingNote: string;
}

export function deadLetterPaths(h: DeadLetterPathHelpers): Json {
  const { P, T } = h;
  const tag = 'Dead letters';
  const id: Json = { name: 'dead_letter_id', in: 'path', required: true, description: 'Id of the dead letter. Any other string (an unknown id, another tenant\'s letter, a letter of no tenant) answers 404.', schema: { type: 'string' }, examples: { id: { value: 'dlt_01j9zx5w3k8f6t2q4r7m1n0bcd' } } };
  const q = (name: string, description: string, s: Json): Json => ({ name, in: 'query', required: false, description, schema: s });
  const owned = 'A tenant sees the letters whose record names it; letters whose bytes do not decode name no tenant and are listed to none (the operator reads and replays them with the command line). A key limited to resource ids sees the letters of its ingesters and destinations.';
  return {
    [`${P}/dead-letters`]: {
      parameters: [h.tenant],
      get: h.tenantOperation({
        operationId: 'listDeadLetters', summary: 'List dead letters', tag, scope: 'read:events', rateLimitRoute: `GET ${T}/dead-letters`,
        description: `Records a stage of the pipeline set aside (validate, filter, route, deliver, release, retry, evidence-sequencer), newest first, each with its stage, reason, where it was read and whether it was replayed. ${owned} ${h.pagingNote} The cursor is a keyset position (time, id); it is bound to \`stage\`, \`from\` and \`to\`.`,
        parameters: [
          q('stage', `Only letters of this stage (${DEAD_LETTER_STAGES.join(', ')}); another value answers 422.`, { type: 'string', enum: [...DEAD_LETTER_STAGES] }),
          q('from', 'Only letters set aside at or after this time (RFC 3339, else 400).', { type: 'string', format: 'date-time' }),
          q('to', 'Only letters set aside before this time (RFC 3339, later than `from`, else 400).', { type: 'string', format: 'date-time' }),
          ...h.listParams,
        ],
        success: { '200': h.ok('One page of dead letters.', 'DeadLetterList') }, forbidden: 'ForbiddenRead',
        unprocessable: '`stage` is not a stage that sets records aside.',
      }),
    },
    [`${P}/dead-letters/{dead_letter_id}`]: {
      parameters: [h.tenant, id],
      get: h.tenantOperation({
        operationId: 'getDeadLetter', summary: 'Get a dead letter', tag, scope: 'read:events', rateLimitRoute: `GET ${T}/dead-letters/:id`,
        description: 'One dead letter with the key and bytes of its record, as read.',
        success: { '200': h.ok('The dead letter.', 'DeadLetterDetail') }, forbidden: 'ForbiddenReadResource', notFound: 'no such dead letter of the tenant (letters are shown once the sink has stored them, within about a second)',
      }),
    },
    [`${P}/dead-letters/{dead_letter_id}/replay`]: {
      parameters: [h.tenant, id],
      post: h.tenantOperation({
        operationId: 'replayDeadLetter', summary: 'Put a dead letter back', tag, scope: 'write:events', rateLimitRoute: `POST ${T}/dead-letters/:id/replay`,
        description: 'Writes the letter\'s record, its exact key and bytes, back to the topic it was read from, naming this process\'s configuration version (`hookline-config-version`): the stage that set it aside handles it again, with the fix (a corrected filter, a restored destination) in hand. The event moves to `replayed`. An input record is put back once, through whichever of its letters: a second replay answers 409, and so does one running at the same time. No body is needed; one sent is ignored.',
        success: { '202': h.ok('Put back.', 'DeadLetterReplayed') }, forbidden: 'ForbiddenWriteResource', notFound: 'no such dead letter of the tenant',
        conflict: { description: 'its record was replayed already (through this letter or another letter of the same record), its stored bytes do not match their SHA-256, or it was read from a topic no stage of this deployment reads' },
      }),
    },
  };
}
