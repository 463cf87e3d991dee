import type { TenantOperation } from './openapi';
import { EXPORT_LIMITS, EXPORT_MEDIA_TYPES, NEXT_CURSOR_HEADER } from './routes/exports';
import { EXPORT_BODY_SHOWN, type ExportKind } from '../platform/clickhouse/exports';
import { MAX_EXPORT_TOOL_ROWS } from './mcp/export-tools';

/**
 * The exports' part of the OpenAPI document (api/openapi.ts spreads it in): a tenant's
 * deliveries, events and logs as NDJSON, CSV or Parquet, a bounded page per request, in key
 * order, with the next cursor in the headers. Built with the document's own helpers.
 */

type Json = Record<string, unknown>;

export interface ExportSchemaHelpers {
  schema(name: string): Json;
  nullable(s: Json): Json;
}

const TIME_NOTE = 'RFC 3339 in UTC with milliseconds (`2026-01-02T03:04:05.678Z`) in NDJSON and CSV; a Parquet `TIMESTAMP(MILLIS, UTC)` column.';

export function exportSchemas(h: ExportSchemaHelpers): Json {
  const text = (description: string): Json => ({ type: 'string', description });
  const nullableText = (description: string): Json => ({ type: ['string', 'null'], description });
  const time = (description: string): Json => ({ type: 'string', format: 'date-time', description: `${description} ${TIME_NOTE}` });
  const row = (description: string, properties: Json): Json => ({ type: 'object', description, required: Object.keys(properties), properties, additionalProperties: false });
  return {
    DeliveryExportRow: row('One attempt in an export of deliveries: the members of an item of GET .../deliveries, by the same names; `error_message` and `trace_id` are `null` where the list leaves them out or empty.', {
      id: h.schema('DeliveryId'),
      event_id: h.schema('EventId'),
      destination_id: h.schema('DestinationId'),
      status: h.schema('DeliveryStatus'),
      response_code: { type: ['integer', 'null'], description: 'Int32; `null` when no answer came.' },
      attempt_number: { type: 'integer', minimum: 1, description: 'UInt32.' },
      attempted_at: time('When the attempt was made.'),
      body_sha256: h.schema('Sha256Hex'),
      error_message: nullableText('Why the attempt failed; `null` when it did not.'),
      event_type: nullableText('The event\'s type; `null` when it has none.'),
      trace_id: nullableText('The attempt\'s W3C trace id; `null` when it carried none.'),
    }),
    EventExportRow: row('One event in an export of events: the members of GET .../events/{id}, by the same names.', {
      id: h.schema('EventId'),
      ingester_id: text('The ingester it arrived at.'),
      correlation_id: text('Its correlation id.'),
      event_type: nullableText('Its type; `null` when it has none.'),
      received_at: time('When it was received.'),
      content_type: nullableText('The request\'s Content-Type.'),
      body_sha256: h.schema('Sha256Hex'),
      body: nullableText(`The first ${EXPORT_BODY_SHOWN} bytes of the body: UTF-8 text as it is (cut at a character boundary), anything else base64; \`null\` when the stored bytes do not match \`body_sha256\`.`),
      body_encoding: { type: ['string', 'null'], enum: ['utf8', 'base64', null] },
      body_bytes: { type: ['integer', 'null'], minimum: 0, description: 'Size of the whole body (UInt32).' },
      body_truncated: { type: 'boolean', description: `Whether the body is longer than the ${EXPORT_BODY_SHOWN} bytes shown.` },
      body_verified: { type: 'boolean', description: 'Whether the stored bytes match the SHA-256 recorded at receipt.' },
      body_expired: { type: 'boolean', description: 'The body was removed by retention: `body` is `null`, `body_sha256` remains.' },
    }),
    LogExportRow: row('One line in an export of the pipeline log: the members of an item of GET .../logs, by the same names, but `fields` as JSON text.', {
      id: text('The line\'s id.'),
      timestamp: time('When it was logged.'),
      level: h.schema('LogLevel'),
      message: text('The message.'),
      stage: nullableText('The stage that logged it.'),
      event_id: nullableText(''),
      delivery_id: nullableText(''),
      destination_id: nullableText(''),
      ingester_id: nullableText(''),
      correlation_id: nullableText(''),
      fields: text('The line\'s other fields: a JSON object as text (the list shows it parsed).'),
    }),
    ExportRows: {
      type: 'object',
      description: `At most ${MAX_EXPORT_TOOL_ROWS} rows of an export as NDJSON text, and the cursor of the rest.`,
      required: ['kind', 'rows', 'ndjson', 'next_cursor'],
      properties: {
        kind: { type: 'string', enum: ['deliveries', 'events', 'logs'] },
        rows: { type: 'integer', minimum: 0, description: 'Rows in `ndjson`.' },
        ndjson: { type: 'string', description: 'One JSON object per line, each a DeliveryExportRow, EventExportRow or LogExportRow.' },
        next_cursor: h.nullable({ type: 'string', description: 'Send it as `cursor`, with the same kind and filters, for the next rows; `null`: none are left.' }),
      },
      additionalProperties: false,
    },
  };
}

export interface ExportPathHelpers {
  P: string;
  T: string;
  tenant: Json;
  tenantOperation(o: TenantOperation): Json;
  /** The headers every tenant answer carries (X-Request-Id, the rate limit). */
  tenantHeaders: Json;
  /** status, destination_id, event_type, from, to, response_code, q of the deliveries list. */
  deliverySearch: Json[];
  /** The `level` parameter of the logs list. */
  logLevel: Json;
}

const ROW_SCHEMA: Record<ExportKind, string> = { deliveries: 'DeliveryExportRow', events: 'EventExportRow', logs: 'LogExportRow' };

export function exportPaths(h: ExportPathHelpers): Json {
  const { P, T } = h;
  const q = (name: string, description: string, s: Json): Json => ({ name, in: 'query', required: false, description, schema: s });
  const time = { type: 'string', format: 'date-time' };
  const common = (kind: ExportKind): Json[] => [
    q('format', '`ndjson`, `csv` or `parquet` (else 400). Absent: the first of `application/x-ndjson`, `text/csv`, `application/vnd.apache.parquet` the Accept header prefers; NDJSON when it names none.', { type: 'string', enum: ['ndjson', 'csv', 'parquet'] }),
    q('limit', `Rows of this page, an integer from 1 to ${EXPORT_LIMITS[kind].max} (default ${EXPORT_LIMITS[kind].default}; else 400).`, { type: 'integer', minimum: 1, maximum: EXPORT_LIMITS[kind].max, default: EXPORT_LIMITS[kind].default }),
    q('cursor', `The \`${NEXT_CURSOR_HEADER}\` of the previous page (the same kind and filters; the format and limit may change).`, { type: 'string', minLength: 1 }),
  ];
  const rowSchema = (kind: ExportKind): Json => ({ $ref: `#/components/schemas/${ROW_SCHEMA[kind]}` });
  const success = (kind: ExportKind): Record<string, Json> => ({
    '200': {
      description: `One page of ${kind}, streamed as ClickHouse writes it (chunked, no Content-Length). Each row is a ${ROW_SCHEMA[kind]}. An answer cut short by an error after the headers ends without its last chunk (the connection is closed): a client must treat a transfer that did not end cleanly as failed.`,
      headers: {
        ...h.tenantHeaders,
        'Content-Disposition': { description: `\`attachment; filename="${kind}-<time of the export, 20260102T030405Z>.<ndjson|csv|parquet>"\`.`, required: true, schema: { type: 'string', pattern: `^attachment; filename="${kind}-\\d{8}T\\d{6}Z\\.(ndjson|csv|parquet)"$` } },
        Link: { description: '`<path?...&cursor=...>; rel="next"`: this request with the next cursor (and its format); absent on the last page.', schema: { type: 'string', pattern: '^<[^>]+>; rel="next"$' } },
        [NEXT_CURSOR_HEADER]: { description: 'The cursor of the next page, known before the rows are sent; absent on the last page.', schema: { type: 'string', minLength: 1 } },
      },
      content: {
        [EXPORT_MEDIA_TYPES.ndjson]: { schema: { description: `One JSON object per line (UTF-8), each a ${ROW_SCHEMA[kind]}; nothing for an empty page.`, contentMediaType: EXPORT_MEDIA_TYPES.ndjson, 'x-row-schema': rowSchema(kind) } },
        [EXPORT_MEDIA_TYPES.csv]: { schema: { type: 'string', contentMediaType: EXPORT_MEDIA_TYPES.csv, description: `RFC 4180 with a header line naming the ${ROW_SCHEMA[kind]} members, in that order; \`null\` is an empty field, booleans \`true\`/\`false\`.`, 'x-row-schema': rowSchema(kind) } },
        [EXPORT_MEDIA_TYPES.parquet]: { schema: { description: `A Parquet file (Snappy), one column per ${ROW_SCHEMA[kind]} member; nullable members are optional columns, times TIMESTAMP(MILLIS, UTC).`, contentMediaType: EXPORT_MEDIA_TYPES.parquet, 'x-row-schema': rowSchema(kind) } },
      },
    },
  });
  const order = (kind: ExportKind, key: string) =>
    `Rows oldest first, in the table's key order (${key}), a page of \`limit\` rows per request; follow \`Link: rel="next"\` (or send \`${NEXT_CURSOR_HEADER}\` as \`cursor\`) until it is absent. The cursor is a keyset position read before the rows are sent: rows recorded meanwhile come on a later page, none twice. A key limited to resource ids exports only rows of those ${kind === 'deliveries' ? 'destinations' : 'destinations and ingesters'}. Query parameters of another kind's filters answer 400.`;
  return {
    [`${P}/exports/deliveries`]: {
      parameters: [h.tenant],
      get: h.tenantOperation({
        operationId: 'exportDeliveries', summary: 'Export delivery attempts', tag: 'Exports', scope: 'read:deliveries', rateLimitRoute: `GET ${T}/exports/deliveries`,
        description: `Delivery attempts as NDJSON, CSV or Parquet, narrowed by the search filters of GET .../deliveries. ${order('deliveries', 'attempted_at, delivery id, attempt number')}`,
        parameters: [...h.deliverySearch, ...common('deliveries')],
        success: success('deliveries'), forbidden: 'ForbiddenRead',
        unprocessable: '`status` is not one of delivered, retrying, failed, dropped.',
      }),
    },
    [`${P}/exports/events`]: {
      parameters: [h.tenant],
      get: h.tenantOperation({
        operationId: 'exportEvents', summary: 'Export received events', tag: 'Exports', scope: 'read:events', rateLimitRoute: `GET ${T}/exports/events`,
        description: `Received events with (the first ${EXPORT_BODY_SHOWN} bytes of) their bodies, as GET .../events/{id} shows them, as NDJSON, CSV or Parquet. ${order('events', 'event id, a ULID: the time of receipt')}`,
        parameters: [
          q('event_type', 'Only events of exactly this type (1 to 200 characters, else 400).', { type: 'string', minLength: 1, maxLength: 200 }),
          q('from', 'Only events received at or after this time (RFC 3339, else 400).', time),
          q('to', 'Only events received before this time (RFC 3339, later than `from`, else 400).', time),
          ...common('events'),
        ],
        success: success('events'), forbidden: 'ForbiddenRead',
      }),
    },
    [`${P}/exports/logs`]: {
      parameters: [h.tenant],
      get: h.tenantOperation({
        operationId: 'exportLogs', summary: 'Export the pipeline log', tag: 'Exports', scope: 'read:logs', rateLimitRoute: `GET ${T}/exports/logs`,
        description: `The tenant's pipeline log as NDJSON, CSV or Parquet. ${order('logs', 'time, line id')}`,
        parameters: [
          h.logLevel,
          q('from', 'Only lines logged at or after this time (RFC 3339, else 400).', time),
          q('to', 'Only lines logged before this time (RFC 3339, later than `from`, else 400).', time),
          ...common('logs'),
        ],
        success: success('logs'), forbidden: 'ForbiddenRead',
        unprocessable: '`level` is not a log level.',
      }),
    },
  };
}
