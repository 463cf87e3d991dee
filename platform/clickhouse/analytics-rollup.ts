import type { ClickHouseClient } from '@clickhouse/client';
import { every, type Periodic } from '../../core/periodic';
import { latencyBucketSql } from './analytics';

/**
 * The rollup of the analytics views (migration 013's tables, filled this way since migration 016):
 * every ANALYTICS_ROLLUP_SECONDS, the attempts ClickHouse stored since the last step (by their
 * `stored_at`, the time their insert began) are aggregated into the hour, day and error views in
 * one INSERT … SELECT each. A materialized view did the same on every insert of the sink, a few
 * hundred attempts at a time, and that cost most of the sink's inserts (docs/analytics.md).
 *
 * A step covers attempts stored up to ANALYTICS_ROLLUP_LAG_SECONDS before ClickHouse's clock, so
 * that an insert that began before the step's end is committed before the step reads: an insert
 * taking longer than that to commit is not counted (NC-26). Steps are recorded in
 * `analytics_rollups` before and after their inserts, and each insert is named after its window
 * (`insert_deduplication_token`): a step cut short is done again with the same window, and what it
 * had inserted is not inserted twice. One step at a time across processes (a Redis lock, taken by
 * the caller), which an erasure takes too.
 */

/** The longest window of one step: a rollup far behind (a service down for a day) catches up an hour at a time. */
const MAX_STEP_MS = 3_600_000;

const NAME = 'deliveries';

/** One attempt's latency bucket (migration 013's histogram) as a one-entry map, for sumMap. */
const histogram = (v: string) => `map(${latencyBucketSql(v)}, toUInt64(1))`;

/** The columns of the attempts the views aggregate, computed once per attempt. */
const ATTEMPTS = (time: string) => `tenant_id, ${time}, status, duration_ms, status != 'dropped' AS sent,
             toUnixTimestamp64Milli(attempted_at) + duration_ms - ifNull(toUnixTimestamp64Milli(received_at), 0) AS e2e,
             status = 'delivered' AND received_at IS NOT NULL AS e2e_known, ifNull(response_code, 0) AS code`;

/** Each attempt once per keying of the views (docs/analytics.md: the narrowest holding a query's dimensions is read). */
const KEYINGS = `arrayJoin([('none', '', '', '', 0), ('destination', destination_id, '', '', 0), ('event_type', '', event_type, '', 0), ('ingester', '', '', ingester_id, 0), ('response_code', '', '', '', code), ('all', destination_id, event_type, ingester_id, code)]) AS k`;

const FIGURES = `countIf(status = 'delivered') AS delivered, countIf(status = 'retrying') AS retrying, countIf(status = 'failed') AS failed, countIf(status = 'dropped') AS dropped,
       sumMapIf(${histogram('duration_ms')}, sent) AS latency, minIf(toNullable(duration_ms), sent) AS latency_min, maxIf(toNullable(duration_ms), sent) AS latency_max,
       sumMapIf(${histogram('e2e')}, e2e_known) AS end_to_end, minIf(toNullable(e2e), e2e_known) AS end_to_end_min, maxIf(toNullable(e2e), e2e_known) AS end_to_end_max`;

/** The attempts of a window: stored in (from, to], of tenants not being erased. */
const WINDOW = `stored_at > fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND stored_at <= fromUnixTimestamp64Milli({to:Int64}, 'UTC') AND NOT has({skipped:Array(String)}, tenant_id)`;

/** The three inserts of a step, by view table. */
function stepSql(database: string): Record<'delivery_hours' | 'delivery_days' | 'delivery_error_hours', string> {
  const byTime = (table: string, column: string, start: string) =>
    `INSERT INTO ${database}.${table}
     SELECT tenant_id, k.1 AS keyed_by, ${column}, k.2 AS destination_id, k.3 AS event_type, k.4 AS ingester_id, k.5 AS response_code, ${FIGURES}
     FROM (SELECT ${ATTEMPTS(`${start} AS ${column}`)}, ${KEYINGS} FROM ${database}.deliveries WHERE ${WINDOW})
     GROUP BY tenant_id, k, ${column}`;
  return {
    delivery_hours: byTime('delivery_hours', 'hour', "toStartOfHour(toDateTime(attempted_at, 'UTC'))"),
    delivery_days: byTime('delivery_days', 'day', "toStartOfDay(toDateTime(attempted_at, 'UTC'))"),
    delivery_error_hours: `INSERT INTO ${database}.delivery_error_hours
     SELECT tenant_id, k.1 AS keyed_by, hour, k.2 AS destination_id, k.3 AS event_type, error_message, count() AS attempts
     FROM (SELECT tenant_id, toStartOfHour(toDateTime(attempted_at, 'UTC')) AS hour, assumeNotNull(error_message) AS error_message,
                  arrayJoin([('none', '', ''), ('all', destination_id, event_type)]) AS k
           FROM ${database}.deliveries
           WHERE ${WINDOW} AND error_message IS NOT NULL AND status IN ('retrying', 'failed'))
     GROUP BY tenant_id, k, hour, error_message`,
  };
}

interface RollupState {
  fromMs: number;
  toMs: number;
  done: boolean;
}

async function stateOf(clickhouse: ClickHouseClient, database: string): Promise<RollupState | undefined> {
  const rs = await clickhouse.query({
    query: `SELECT toUnixTimestamp64Milli(rolled_from) AS f, toUnixTimestamp64Milli(rolled_to) AS t, done FROM ${database}.analytics_rollups FINAL WHERE name = {name:String}`,
    query_params: { name: NAME },
    format: 'JSONEachRow',
  });
  const row = (await rs.json<{ f: string | number; t: string | number; done: number }>())[0];
  return row && { fromMs: Number(row.f), toMs: Number(row.t), done: Number(row.done) === 1 };
}

async function record(clickhouse: ClickHouseClient, database: string, fromMs: number, toMs: number, done: boolean): Promise<void> {
  await clickhouse.command({
    query: `INSERT INTO ${database}.analytics_rollups (name, rolled_from, rolled_to, done, version)
            VALUES ({name:String}, fromUnixTimestamp64Milli({from:Int64}, 'UTC'), fromUnixTimestamp64Milli({to:Int64}, 'UTC'), {done:UInt8}, {version:UInt64})`,
    query_params: { name: NAME, from: fromMs, to: toMs, done: done ? 1 : 0, version: toMs * 2 + (done ? 1 : 0) },
  });
}

export interface RollupResult {
  /** Windows rolled up, [from, to] in ms of `stored_at`; a window done again after a cut-short step counts too. */
  steps: { fromMs: number; toMs: number; redone: boolean }[];
  /** How far the views are now: attempts stored up to here are counted. */
  rolledToMs: number;
}

/**
 * Rolls the attempts stored since the last step into the views, up to `lagMs` before ClickHouse's
 * clock, an hour at most per step. `skipped`: tenants whose attempts are not counted (being
 * erased). Resolves with the steps done; throws on a ClickHouse failure (the next call does the
 * step again).
 */
export async function rollUpAnalytics(clickhouse: ClickHouseClient, database: string, opts: { lagMs: number; skipped?: readonly string[] }): Promise<RollupResult> {
  const state = await stateOf(clickhouse, database);
  // the state's first row is written by migration 016; without it nothing is known of what the views hold
  if (!state) throw new Error(`${database}.analytics_rollups has no state: migration 016 has not run`);
  const nowRs = await clickhouse.query({ query: 'SELECT toUnixTimestamp64Milli(now64(3)) AS now', format: 'JSONEachRow' });
  const untilMs = Number((await nowRs.json<{ now: string | number }>())[0]!.now) - opts.lagMs;
  const sql = stepSql(database);
  const skipped = [...(opts.skipped ?? [])];
  const steps: RollupResult['steps'] = [];
  let at = state;
  for (;;) {
    let window: { fromMs: number; toMs: number; redone: boolean };
    if (!at.done) window = { fromMs: at.fromMs, toMs: at.toMs, redone: true };
    else if (at.toMs < untilMs) window = { fromMs: at.toMs, toMs: Math.min(untilMs, at.toMs + MAX_STEP_MS), redone: false };
    else break;
    if (!window.redone) await record(clickhouse, database, window.fromMs, window.toMs, false);
    for (const [table, query] of Object.entries(sql)) {
      await clickhouse.command({
        query,
        query_params: { from: window.fromMs, to: window.toMs, skipped },
        clickhouse_settings: { insert_deduplication_token: `${table}:${window.fromMs}:${window.toMs}` },
      });
    }
    await record(clickhouse, database, window.fromMs, window.toMs, true);
    steps.push(window);
    at = { fromMs: window.fromMs, toMs: window.toMs, done: true };
  }
  return { steps, rolledToMs: at.toMs };
}

/**
 * Rolls up every `intervalS` seconds, one rollup at a time in this process and, through
 * `withLock` (platform/redis/analytics-rollup-lock.ts, which an erasure holds too), across
 * processes. A failed rollup is logged, and the next one does its step again.
 */
export function startAnalyticsRollup(
  clickhouse: ClickHouseClient,
  database: string,
  opts: { intervalS: number; lagS: number; withLock: <T>(fn: () => Promise<T>) => Promise<T>; skipped: () => readonly string[]; log: { warn(msg: string, fields?: Record<string, unknown>): void } },
): Periodic<RollupResult> {
  return every(
    opts.intervalS * 1_000,
    // the tenants to skip are read once the lock is held: an erasure marks its tenant before it takes the lock
    () => opts.withLock(() => rollUpAnalytics(clickhouse, database, { lagMs: opts.lagS * 1_000, skipped: opts.skipped() })),
    (err) => opts.log.warn('analytics rollup failed; the next one does its step again', { error: err instanceof Error ? err.message : String(err) }),
  );
}
