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
}

export interface DeliveriesFilter {
  tenant: string;
  status: string | null;
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
  return {
    query: `SELECT delivery_id, attempt_number, event_id, destination_id, status, response_code, toString(attempted_at) AS attempted_at_text, error_message, body_sha256
            FROM ${database}.deliveries
            WHERE ${where.join(' AND ')}
            ORDER BY attempted_at DESC, delivery_id DESC, attempt_number DESC
            LIMIT {limit:UInt32}`,
    query_params: params,
  };
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
