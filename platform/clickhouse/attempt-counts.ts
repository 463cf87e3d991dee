import type { ClickHouseClient } from '@clickhouse/client';

/** Delivery attempts of one time bucket, by outcome. */
export interface AttemptBucket {
  /** Start of the bucket, ms since the epoch (a multiple of the bucket width). */
  startMs: number;
  delivered: number;
  retrying: number;
  failed: number;
}

export interface AttemptCountQuery {
  tenant: string;
  /** [fromMs, toMs): both multiples of bucketSeconds * 1000. */
  fromMs: number;
  toMs: number;
  bucketSeconds: number;
  /** A key limited to resource ids counts only attempts to those destinations; null: all. */
  destinationIds: readonly string[] | null;
}

/**
 * A tenant's delivery attempts per time bucket, every bucket of [from, to) present (zero when
 * nothing happened). One range read of the tenant's part of `deliveries`, whose key starts with
 * (tenant_id, attempted_at); FINAL, so an outcome the sink wrote twice counts once.
 */
export async function attemptCounts(clickhouse: ClickHouseClient, database: string, q: AttemptCountQuery): Promise<AttemptBucket[]> {
  const rs = await clickhouse.query({
    query: `SELECT toString(toUnixTimestamp(toStartOfInterval(attempted_at, toIntervalSecond({bucket:UInt32})))) AS start_s,
                   countIf(status = 'delivered') AS delivered,
                   countIf(status = 'retrying') AS retrying,
                   countIf(status = 'failed') AS failed
            FROM ${database}.deliveries FINAL
            WHERE tenant_id = {tenant:String}
              AND attempted_at >= fromUnixTimestamp64Milli({from:Int64}) AND attempted_at < fromUnixTimestamp64Milli({to:Int64})
              ${q.destinationIds ? 'AND destination_id IN {destinations:Array(String)}' : ''}
            GROUP BY start_s`,
    query_params: { tenant: q.tenant, bucket: q.bucketSeconds, from: q.fromMs, to: q.toMs, ...(q.destinationIds ? { destinations: [...q.destinationIds] } : {}) },
    format: 'JSONEachRow',
  });
  const rows = await rs.json<{ start_s: string; delivered: string | number; retrying: string | number; failed: string | number }>();
  const byStart = new Map(rows.map((r) => [Number(r.start_s) * 1000, r]));
  const width = q.bucketSeconds * 1000;
  const buckets: AttemptBucket[] = [];
  for (let at = q.fromMs; at < q.toMs; at += width) {
    const r = byStart.get(at);
    buckets.push({ startMs: at, delivered: Number(r?.delivered ?? 0), retrying: Number(r?.retrying ?? 0), failed: Number(r?.failed ?? 0) });
  }
  return buckets;
}
