import type { Readable } from 'node:stream';
import type { ClickHouseClient } from '@clickhouse/client';
import { searchConditions, type SearchFilters } from './deliveries-list';

/**
 * Exports of a tenant's deliveries, events and logs, written by ClickHouse in its own output
 * formats and read in the table's key order (oldest first), one bounded page at a time. A page
 * is two reads: the keys at the page's end first (so the next cursor is known before any row is
 * sent), then the rows up to that key, streamed as ClickHouse writes them.
 */

export const EXPORT_KINDS = ['deliveries', 'events', 'logs'] as const;
export type ExportKind = (typeof EXPORT_KINDS)[number];

export const EXPORT_FORMATS = ['ndjson', 'csv', 'parquet'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** The ClickHouse output format that writes each export format. */
const OUTPUT_FORMAT: Record<ExportFormat, string> = { ndjson: 'JSONEachRow', csv: 'CSVWithNames', parquet: 'Parquet' };

/** Most bytes of an event's body a row carries, as GET .../events/{id} shows it. */
export const EXPORT_BODY_SHOWN = 64 * 1024;

export interface ExportFilter {
  kind: ExportKind;
  tenant: string;
  /** A key limited to resource ids: only rows of those destinations (and, for events and logs, ingesters). */
  resourceIds: string[] | null;
  /** deliveries: every filter; events: from, to (received_at) and eventType; logs: from, to (ts). */
  search: SearchFilters;
  /** deliveries only. */
  status: string | null;
  /** logs only: the levels taken in. */
  levels: string[] | null;
  /** The key of the last row already sent (the cursor), or null from the start. */
  after: unknown[] | null;
}

interface KeyColumn {
  column: string;
  type: string;
  /** How the key is read for a cursor: DateTime64 as its ClickHouse text, so it goes back unchanged. */
  text: string;
}

interface KindSpec {
  table: string;
  key: KeyColumn[];
  /** Columns the page reads (no aliases over column names: WHERE would resolve to them). */
  read: string;
  /** The rows as exported, from the page `p` and the event types `t`; times by `time`. */
  columns(time: (column: string) => string): string;
  /** Whether the event's type (event_types) joins in as `t`. */
  eventTypes: boolean;
  conditions(f: ExportFilter, database: string, where: string[], params: Record<string, unknown>): void;
}

/**
 * A stored body's exact bytes, checked against its SHA-256 (core/stored-body.ts: UTF-8 text as it
 * is, anything else `base64:<data>`); NULL when no reading gives those bytes, and past the body's
 * retention, whether ClickHouse has cleared it yet or not.
 */
const VERIFIED_BODY = `multiIf(
  body_expires_at <= now(), NULL,
  startsWith(body, 'base64:') AND lower(hex(SHA256(tryBase64Decode(substring(body, 8))))) = body_sha256, tryBase64Decode(substring(body, 8)),
  lower(hex(SHA256(body))) = body_sha256, body,
  NULL)`;

/** The body as the event view shows it: its first EXPORT_BODY_SHOWN bytes, UTF-8 cut at a character boundary, else base64. */
function bodyColumns(): string {
  const v = 'p.verified_body';
  const n = EXPORT_BODY_SHOWN;
  const text = `isValidUTF8(ifNull(${v}, ''))`;
  // a cut inside a character moves back past its continuation bytes (10xxxxxx), at most three
  const continues = (pos: number) => `bitAnd(reinterpretAsUInt8(substring(${v}, ${pos}, 1)), 192) = 128`;
  const textCut = `if(length(${v}) <= ${n}, length(${v}), ${n} - if(${continues(n + 1)}, if(${continues(n)}, if(${continues(n - 1)}, 3, 2), 1), 0))`;
  const cut = `if(${text}, ${textCut}, least(length(${v}), ${n}))`;
  return `if(isNull(${v}), NULL, if(${text}, substring(${v}, 1, ${cut}), base64Encode(substring(${v}, 1, ${n})))) AS body,
          if(isNull(${v}), NULL, if(${text}, 'utf8', 'base64')) AS body_encoding,
          if(isNull(${v}), NULL, toUInt32(length(${v}))) AS body_bytes,
          toBool(isNotNull(${v}) AND ${cut} < length(${v})) AS body_truncated,
          toBool(isNotNull(${v})) AS body_verified,
          toBool(p.expired) AS body_expired`;
}

/** Bounds of a time column from the search's from (inclusive) and to (exclusive). */
function timeBounds(column: string, s: SearchFilters, where: string[], params: Record<string, unknown>): void {
  if (s.from !== null) {
    where.push(`${column} >= {from:DateTime64(3)}`);
    params.from = s.from;
  }
  if (s.to !== null) {
    where.push(`${column} < {to:DateTime64(3)}`);
    params.to = s.to;
  }
}

const KINDS: Record<ExportKind, KindSpec> = {
  deliveries: {
    table: 'deliveries',
    key: [
      { column: 'attempted_at', type: 'DateTime64(3)', text: 'toString(attempted_at)' },
      { column: 'delivery_id', type: 'String', text: 'delivery_id' },
      { column: 'attempt_number', type: 'UInt32', text: 'attempt_number' },
    ],
    read: 'delivery_id, attempt_number, event_id, destination_id, status, response_code, attempted_at, body_sha256, error_message, trace_id',
    columns: (time) => `p.delivery_id AS id, p.event_id AS event_id, p.destination_id AS destination_id, toString(p.status) AS status, p.response_code AS response_code,
          p.attempt_number AS attempt_number, ${time('p.attempted_at')} AS attempted_at, p.body_sha256 AS body_sha256, nullIf(p.error_message, '') AS error_message,
          t.event_type AS event_type, nullIf(p.trace_id, '') AS trace_id`,
    eventTypes: true,
    conditions(f, database, where, params) {
      if (f.status !== null) {
        where.push('status = {status:String}');
        params.status = f.status;
      }
      if (f.resourceIds) {
        where.push('destination_id IN {resources:Array(String)}');
        params.resources = f.resourceIds;
      }
      const text = searchConditions(database, f.search, where, params);
      if (text) where.push(`(${text.inResponse} OR ${text.inRequest})`);
    },
  },
  events: {
    table: 'events',
    // event ids are ULIDs: their order is the order of receipt, to the millisecond
    key: [{ column: 'event_id', type: 'String', text: 'event_id' }],
    read: `event_id, ingester_id, correlation_id, received_at, content_type, body_sha256, ${VERIFIED_BODY} AS verified_body, body_expires_at <= now() AS expired`,
    columns: (time) => `p.event_id AS id, p.ingester_id AS ingester_id, p.correlation_id AS correlation_id, t.event_type AS event_type,
          ${time('p.received_at')} AS received_at, p.content_type AS content_type, p.body_sha256 AS body_sha256, ${bodyColumns()}`,
    eventTypes: true,
    conditions(f, database, where, params) {
      if (f.resourceIds) {
        // as GET .../events/{id}: an event of one of the key's ingesters, or delivered to one of its destinations
        where.push(`(ingester_id IN {resources:Array(String)} OR event_id IN (SELECT event_id FROM ${database}.deliveries WHERE tenant_id = {tenant:String} AND destination_id IN {resources:Array(String)}))`);
        params.resources = f.resourceIds;
      }
      timeBounds('received_at', f.search, where, params);
      if (f.search.eventType !== null) {
        where.push(`event_id IN (SELECT event_id FROM ${database}.event_types WHERE tenant_id = {tenant:String} AND event_type = {eventType:String})`);
        params.eventType = f.search.eventType;
      }
    },
  },
  logs: {
    table: 'logs',
    key: [
      { column: 'ts', type: 'DateTime64(3)', text: 'toString(ts)' },
      { column: 'id', type: 'String', text: 'id' },
    ],
    read: 'id, ts, level, message, stage, event_id, delivery_id, destination_id, ingester_id, correlation_id, fields',
    columns: (time) => `p.id AS id, ${time('p.ts')} AS timestamp, toString(p.level) AS level, p.message AS message, CAST(p.stage AS Nullable(String)) AS stage,
          p.event_id AS event_id, p.delivery_id AS delivery_id, p.destination_id AS destination_id, p.ingester_id AS ingester_id,
          p.correlation_id AS correlation_id, p.fields AS fields`,
    eventTypes: false,
    conditions(f, _database, where, params) {
      where.push('level IN {levels:Array(String)}');
      params.levels = f.levels ?? [];
      if (f.resourceIds) {
        where.push('(destination_id IN {resources:Array(String)} OR ingester_id IN {resources:Array(String)})');
        params.resources = f.resourceIds;
      }
      timeBounds('ts', f.search, where, params);
    },
  },
};

/** The key of a kind as a tuple, and a tuple of parameters `<prefix>0...`. */
function keyTuples(spec: KindSpec, prefix: string): { columns: string; params: string } {
  return {
    columns: `(${spec.key.map((k) => k.column).join(', ')})`,
    params: `(${spec.key.map((k, i) => `{${prefix}${i}:${k.type}}`).join(', ')})`,
  };
}

/** The conditions of the filter, the cursor included; `before`: only keys up to and including it. */
function whereOf(database: string, f: ExportFilter, before: unknown[] | null): { where: string[]; params: Record<string, unknown> } {
  const spec = KINDS[f.kind];
  const where = ['tenant_id = {tenant:String}'];
  const params: Record<string, unknown> = { tenant: f.tenant };
  spec.conditions(f, database, where, params);
  const bound = (position: unknown[], prefix: string, op: string) => {
    const t = keyTuples(spec, prefix);
    where.push(`${t.columns} ${op} ${t.params}`);
    position.forEach((v, i) => (params[`${prefix}${i}`] = v));
  };
  if (f.after) bound(f.after, 'after', '>');
  if (before) bound(before, 'last', '<=');
  return { where, params };
}

const orderOf = (spec: KindSpec) => spec.key.map((k) => k.column).join(', ');

/**
 * Where the page of `limit` rows after the cursor ends: the key of its last row when another
 * row follows (that key is the next cursor), else null (this page is the last). Read from the
 * keys alone, in key order; FINAL, as the page itself, so both count each row once.
 */
export async function pageEndOf(client: ClickHouseClient, database: string, f: ExportFilter, limit: number): Promise<unknown[] | null> {
  const spec = KINDS[f.kind];
  const { where, params } = whereOf(database, f, null);
  const rs = await client.query({
    query: `SELECT ${spec.key.map((k, i) => `${k.text} AS key_${i}`).join(', ')} FROM ${database}.${spec.table} FINAL
            WHERE ${where.join(' AND ')} ORDER BY ${orderOf(spec)} LIMIT 2 OFFSET {offset:UInt32}`,
    query_params: { ...params, offset: limit - 1 },
    format: 'JSONCompactEachRow',
  });
  const rows = await rs.json<unknown[]>();
  return rows.length === 2 ? rows[0]! : null;
}

/** Settings of an export read (those of a server's HTTP interface only are dropped by the embedded engine). */
const EXPORT_SETTINGS = {
  // a server answers an error in the query with an error status, never after rows it has sent
  wait_end_of_query: 1,
  join_use_nulls: 1,
  format_csv_null_representation: '',
  output_format_json_escape_forward_slashes: 0,
  // every Parquet reader reads Snappy; ClickHouse's default (zstd) is not read by all of them
  output_format_parquet_compression_method: 'snappy',
} as const;

/**
 * The page's rows in `format`, as ClickHouse writes them: after the cursor, up to `end` (the
 * key pageEndOf gave) when one follows, else at most `limit`. Up to `end` rather than `limit`
 * rows: a row recorded between the two reads with a key inside the page is sent with it instead
 * of being skipped by the next page.
 */
export async function exportRows(client: ClickHouseClient, database: string, f: ExportFilter, end: unknown[] | null, limit: number, format: ExportFormat): Promise<Readable> {
  const spec = KINDS[f.kind];
  const { where, params } = whereOf(database, f, end);
  const page = `SELECT ${spec.read} FROM ${database}.${spec.table} FINAL WHERE ${where.join(' AND ')}
                ORDER BY ${orderOf(spec)}${end ? '' : ' LIMIT {limit:UInt32}'}`;
  // text formats carry times as RFC 3339 (as the API's JSON does), Parquet as DateTime64(3, 'UTC')
  const time = (column: string) => (format === 'parquet' ? column : `concat(replaceOne(toString(${column}), ' ', 'T'), 'Z')`);
  const types = spec.eventTypes
    ? `LEFT JOIN (SELECT event_id, any(event_type) AS event_type FROM ${database}.event_types
                  WHERE tenant_id = {tenant:String} AND event_id IN (SELECT event_id FROM page) GROUP BY event_id) AS t ON t.event_id = p.event_id`
    : '';
  const result = await client.exec({
    query: `WITH page AS (${page})
            SELECT ${spec.columns(time)} FROM page AS p ${types}
            ORDER BY ${spec.key.map((k) => `p.${k.column}`).join(', ')}
            FORMAT ${OUTPUT_FORMAT[format]}`,
    query_params: { ...params, limit },
    clickhouse_settings: EXPORT_SETTINGS,
  });
  return result.stream;
}
