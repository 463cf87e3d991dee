import type { ClickHouseClient } from '@clickhouse/client';

/** One attempt as the deliveries table gives it to the API. */
export interface DeliveryRow {
  delivery_id: string;
  attempt_number: number;
  event_id: string;
  destination_id: string;
  status: string;
  response_code: number | null;
  attempted_at_text: string;
  error_message: string | null;
  body_sha256: string;
  /** The attempt's W3C trace id; '' when its records carried none (or it was recorded before trace ids). Read by the list and the delivery view. */
  trace_id?: string;
}

/** What a search narrows the attempts to; null: no such filter. */
export interface SearchFilters {
  destinationId: string | null;
  /** The event's type (events table). */
  eventType: string | null;
  /** attempted_at bounds as DateTime64(3) text in UTC: from inclusive, to exclusive. */
  from: string | null;
  to: string | null;
  /** response_code from min to max inclusive (one code, or a class such as 500-599). */
  responseCode: { min: number; max: number } | null;
  /** Found case-insensitively in the start of the response body or in the event's request body. */
  text: string | null;
}

export const NO_SEARCH: SearchFilters = { destinationId: null, eventType: null, from: null, to: null, responseCode: null, text: null };

export interface DeliveriesFilter {
  tenant: string;
  status: string | null;
  search?: SearchFilters;
  /** Only attempts before this one in the list's order (newest first): the cursor. */
  before: { at: string; id: string; n: number } | null;
  /** A key limited to some destinations sees only theirs. */
  destinationIds: string[] | null;
}

/**
 * The SQL of one page of delivery attempts, newest first. It reads without FINAL, so that the
 * engine reads the table in its key order (tenant, attempted_at, ...) from the newest granule
 * and stops after `rows` rows; an attempt the sink inserted twice and no merge has collapsed yet
 * comes back as two equal rows side by side, which listDeliveries drops.
 */
export function listDeliveriesSql(database: string, f: DeliveriesFilter, rows: number) {
  const params: Record<string, unknown> = { tenant: f.tenant, limit: rows };
  const where = ['tenant_id = {tenant:String}'];
  if (f.status) {
    where.push('status = {status:String}');
    params.status = f.status;
  }
  if (f.before) {
    where.push('(attempted_at, delivery_id, attempt_number) < ({at:DateTime64(3)}, {id:String}, {n:UInt32})');
    Object.assign(params, f.before);
  }
  if (f.destinationIds) {
    where.push('destination_id IN {resources:Array(String)}');
    params.resources = f.destinationIds;
  }
  const text = f.search ? searchConditions(database, f.search, where, params) : null;
  const page = (conditions: string[]) => `SELECT delivery_id, attempt_number, event_id, destination_id, status, response_code, toString(attempted_at) AS attempted_at_text, error_message, body_sha256, trace_id
            FROM ${database}.deliveries
            WHERE ${conditions.join(' AND ')}
            ORDER BY attempted_at DESC, delivery_id DESC, attempt_number DESC
            LIMIT {limit:UInt32}`;
  if (!text) return { query: page(where), query_params: params };
  // text in the answer OR in the request: one page of each, merged. Each branch reads in key order
  // and stops after its page, and only the second runs the events subquery; an attempt found by
  // both comes back twice, side by side, and is dropped like any other duplicate.
  return {
    query: `SELECT * FROM (${page([...where, text.inResponse])} UNION ALL ${page([...where, text.inRequest])})
            ORDER BY attempted_at_text DESC, delivery_id DESC, attempt_number DESC
            LIMIT {limit:UInt32}`,
    query_params: params,
  };
}

/**
 * The conditions of a search. The event's type (event_types) and request body (events) are
 * matched by a subquery over the tenant's event ids, bounded by `to` when given
 * (an event is received before its attempts; an attempt may come long after, so `from` does not
 * bound the events).
 */
export function searchConditions(database: string, s: SearchFilters, where: string[], params: Record<string, unknown>): { inResponse: string; inRequest: string } | null {
  const eventsWhere = ['tenant_id = {tenant:String}'];
  if (s.to) eventsWhere.push('received_at < {to:DateTime64(3)}');
  const eventsWith = (condition: string) => `event_id IN (SELECT event_id FROM ${database}.events WHERE ${[...eventsWhere, condition].join(' AND ')})`;
  if (s.destinationId !== null) {
    where.push('destination_id = {destination:String}');
    params.destination = s.destinationId;
  }
  if (s.from !== null) {
    where.push('attempted_at >= {from:DateTime64(3)}');
    params.from = s.from;
  }
  if (s.to !== null) {
    where.push('attempted_at < {to:DateTime64(3)}');
    params.to = s.to;
  }
  if (s.responseCode) {
    where.push('response_code BETWEEN {codeMin:Int32} AND {codeMax:Int32}');
    params.codeMin = s.responseCode.min;
    params.codeMax = s.responseCode.max;
  }
  if (s.eventType !== null) {
    where.push(`event_id IN (SELECT event_id FROM ${database}.event_types WHERE ${[...eventsWhere, 'event_type = {eventType:String}'].join(' AND ')})`);
    params.eventType = s.eventType;
  }
  if (s.text === null) return null;
  params.text = likePattern(s.text);
  // a body past its retention is not searched, whether ClickHouse has cleared it yet or not
  return { inResponse: `(${textMatch('response_body')} AND body_expires_at > now())`, inRequest: eventsWith(`${textMatch('body')} AND body_expires_at > now()`) };
}

/**
 * A case-insensitive substring test, lowerUTF8(column) LIKE '%text%': the form an ngram bloom
 * filter index over lowerUTF8(column) could use (measured without gain, see migration 008).
 */
const textMatch = (column: string) => `lowerUTF8(${column}) LIKE {text:String}`;

/** `%text%` for LIKE, lower-cased, with LIKE's own characters escaped. */
export function likePattern(text: string): string {
  return `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** The type of each of `eventIds` (events of the tenant) that validation found one for. */
export async function eventTypesOf(client: ClickHouseClient, database: string, tenant: string, eventIds: string[]): Promise<Map<string, string | null>> {
  if (eventIds.length === 0) return new Map();
  const rs = await client.query({
    query: `SELECT event_id, any(event_type) AS event_type FROM ${database}.event_types WHERE tenant_id = {tenant:String} AND event_id IN {ids:Array(String)} GROUP BY event_id`,
    query_params: { tenant, ids: [...new Set(eventIds)] },
    format: 'JSONEachRow',
  });
  return new Map((await rs.json<{ event_id: string; event_type: string | null }>()).map((r) => [r.event_id, r.event_type]));
}

/**
 * Up to `rows` distinct attempts matching `f`, newest first. Rows of one attempt are equal and
 * adjacent in this order; when dropping them leaves the page short, the next rows are read from
 * after the last one seen.
 */
export async function listDeliveries(client: ClickHouseClient, database: string, f: DeliveriesFilter, rows: number): Promise<DeliveryRow[]> {
  const out: DeliveryRow[] = [];
  let before = f.before;
  for (;;) {
    const asked = rows - out.length;
    const rs = await client.query({ ...listDeliveriesSql(database, { ...f, before }, asked), format: 'JSONEachRow' });
    const got = await rs.json<DeliveryRow>();
    for (const r of got) {
      const last = out[out.length - 1];
      if (last && last.delivery_id === r.delivery_id && last.attempt_number === r.attempt_number) continue;
      out.push(r);
    }
    const tail = got[got.length - 1];
    if (out.length >= rows || got.length < asked || !tail) return out;
    before = { at: tail.attempted_at_text, id: tail.delivery_id, n: tail.attempt_number };
  }
}
