import type { ClickHouseClient } from '@clickhouse/client';
import type { ReplayJob } from '../../core/model';
import { readStoredEvents, type StoredEvent } from './stored-events';

/** One delivery a replay job repeats: its latest attempt, in the job's order. */
export interface ReplayMatch {
  delivery_id: string;
  event_id: string;
  destination_id: string;
  /** The latest attempt's time, ms since the epoch. */
  at_ms: number;
  /** The latest attempt's trace id ('' for none). */
  trace_id: string;
}


export type ReplayFilter = ReplayJob['filter'];

/**
 * The ClickHouse reads of replay jobs. A delivery is one unit: its latest attempt (highest attempt
 * number) decides its time and status; a delivery still retrying has no final status and never
 * matches. Rows are read with FINAL, so an outcome the sink wrote twice counts once.
 */
export class ReplayMatches {
  constructor(
    private readonly clickhouse: ClickHouseClient,
    private readonly database: string,
  ) {}

  /**
   * The deliveries of `filter` in [from, to) as a subquery with its parameters; the deliveries this
   * job queued itself are left out, so a range reaching into the job's own run never repeats them.
   */
  private matching(tenantId: string, jobId: string, filter: ReplayFilter): { sql: string; params: Record<string, unknown> } {
    const db = this.database;
    const params: Record<string, unknown> = { tenant: tenantId, job: jobId, from: Date.parse(filter.from), to: Date.parse(filter.to) };
    const where: string[] = [];
    if (filter.destination_id) {
      where.push('destination_id = {destination:String}');
      params.destination = filter.destination_id;
    }
    const status = filter.status ? 'm_status = {status:String}' : "m_status IN ('delivered', 'failed')";
    if (filter.status) params.status = filter.status;
    let eventType = '';
    if (filter.event_type) {
      // the type validation found is kept in event_types (the events row is written before validation)
      eventType = `AND m_event IN (SELECT event_id FROM ${db}.event_types WHERE tenant_id = {tenant:String} AND event_type = {event_type:String})`;
      params.event_type = filter.event_type;
    }
    // an attempt before `from` can never be a latest attempt in range: those rows are not read
    // the latest attempt's members under names of their own: the row filters read the stored columns
    const sql = `
      SELECT m_delivery AS delivery_id, m_event AS event_id, m_destination AS destination_id, m_at AS at_ms, m_trace AS trace_id FROM (
        SELECT delivery_id AS m_delivery,
               argMax(trace_id, attempt_number) AS m_trace,
               argMax(event_id, attempt_number) AS m_event,
               argMax(destination_id, attempt_number) AS m_destination,
               argMax(status, attempt_number) AS m_status,
               toUnixTimestamp64Milli(argMax(attempted_at, attempt_number)) AS m_at,
               argMax(ifNull(replay_job_id, ''), attempt_number) AS m_job
        FROM ${db}.deliveries FINAL
        WHERE tenant_id = {tenant:String} AND attempted_at >= fromUnixTimestamp64Milli({from:Int64}) ${where.map((w) => `AND ${w}`).join(' ')}
        GROUP BY delivery_id
      )
      WHERE m_at >= {from:Int64} AND m_at < {to:Int64} AND ${status} AND m_job != {job:String} ${eventType}`;
    return { sql, params };
  }

  /** How many deliveries match, counted up to `cap` + 1 (enough to refuse a range that is too wide). */
  async count(tenantId: string, jobId: string, filter: ReplayFilter, cap: number): Promise<number> {
    const { sql, params } = this.matching(tenantId, jobId, filter);
    const rs = await this.clickhouse.query({ query: `SELECT count() AS n FROM (${sql} LIMIT {cap:UInt64})`, query_params: { ...params, cap: cap + 1 }, format: 'JSONEachRow' });
    const [row] = await rs.json<{ n: string | number }>();
    return Number(row?.n ?? 0);
  }

  /** The next `limit` matches after the position (attempted_at, delivery_id), in that order. */
  async page(tenantId: string, jobId: string, filter: ReplayFilter, after: { after_ms: number; after_id: string } | null, limit: number): Promise<ReplayMatch[]> {
    const { sql, params } = this.matching(tenantId, jobId, filter);
    const rs = await this.clickhouse.query({
      query: `SELECT delivery_id, event_id, destination_id, at_ms, trace_id FROM (${sql})
              WHERE (at_ms, delivery_id) > ({after_ms:Int64}, {after_id:String})
              ORDER BY at_ms, delivery_id LIMIT {limit:UInt32}`,
      query_params: { ...params, after_ms: after?.after_ms ?? -1, after_id: after?.after_id ?? '', limit },
      format: 'JSONEachRow',
    });
    return (await rs.json<ReplayMatch & { at_ms: string | number }>()).map((r) => ({ ...r, at_ms: Number(r.at_ms) }));
  }

  /** The stored events of these ids, by id. */
  events(tenantId: string, eventIds: readonly string[]): Promise<Map<string, StoredEvent>> {
    return readStoredEvents(this.clickhouse, this.database, tenantId, eventIds);
  }

  /** How the deliveries the job queued ended so far: delivered, or failed for good. */
  async outcomes(tenantId: string, jobId: string): Promise<{ delivered: number; failed: number }> {
    const rs = await this.clickhouse.query({
      query: `SELECT countIf(s = 'delivered') AS delivered, countIf(s = 'failed') AS failed FROM (
                SELECT delivery_id, argMax(status, attempt_number) AS s FROM ${this.database}.deliveries FINAL
                WHERE tenant_id = {tenant:String} AND replay_job_id = {job:String} GROUP BY delivery_id)`,
      query_params: { tenant: tenantId, job: jobId },
      format: 'JSONEachRow',
    });
    const [row] = await rs.json<{ delivered: string | number; failed: string | number }>();
    return { delivered: Number(row?.delivered ?? 0), failed: Number(row?.failed ?? 0) };
  }
}
