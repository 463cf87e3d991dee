import type { ClickHouseClient } from '@clickhouse/client';

export const ANALYTICS_BUCKETS = ['minute', 'hour', 'day'] as const;
export type AnalyticsBucket = (typeof ANALYTICS_BUCKETS)[number];
export const BUCKET_SECONDS: Record<AnalyticsBucket, number> = { minute: 60, hour: 3600, day: 86_400 };

export const ANALYTICS_GROUP_BY = ['destination', 'event_type', 'response_code', 'response_class', 'ingester'] as const;
export type AnalyticsGroupBy = (typeof ANALYTICS_GROUP_BY)[number];

/** Most groups listed by their own key; the rest fold into one `other` group. */
export const MAX_GROUPS = 50;
/** Most error messages listed, the most frequent first. */
export const MAX_TOP_ERRORS = 10;

export interface AnalyticsQuery {
  tenant: string;
  /** [fromMs, toMs): both multiples of the bucket's width (UTC days for `day`). */
  fromMs: number;
  toMs: number;
  bucket: AnalyticsBucket;
  groupBy: AnalyticsGroupBy | null;
  destinationId: string | null;
  eventType: string | null;
  /** A key limited to resource ids sees only attempts to those destinations; null: all. */
  destinationIds: readonly string[] | null;
}

/** p50, p95 and p99 in ms; null without a measured attempt. */
export interface Quantiles {
  p50: number | null;
  p95: number | null;
  p99: number | null;
}

/** What the analytics say of a set of attempts (a bucket, a group, the whole range). */
export interface Figures {
  attempts: number;
  delivered: number;
  retrying: number;
  failed: number;
  dropped: number;
  /** delivered / (delivered + retrying + failed); null when none of these. */
  success_rate: number | null;
  /** (delivered + retrying + failed) / delivered; null when nothing was delivered. */
  attempts_per_delivered: number | null;
  attempt_latency_ms: Quantiles;
  end_to_end_latency_ms: Quantiles;
}

export interface AnalyticsAnswer {
  totals: Figures;
  /** Every bucket of the range, in order. */
  buckets: (Figures & { startMs: number })[];
  /** With groupBy: the biggest groups by attempts (then key), then `other`; each lists its non-empty buckets. */
  groups: { key: string | null; other: boolean; totals: Figures; buckets: (Figures & { startMs: number })[] }[] | null;
  /** Distinct groups in the range, before folding. */
  groupsTotal: number | null;
  topErrors: { message: string; attempts: number }[];
}


/**
 * Latency histograms (migration 013): bucket 0 holds values under 1 ms, bucket b in
 * 1..TOP_BUCKET-1 holds [2^((b-1)/8), 2^(b/8)) ms (9% wide), TOP_BUCKET everything from 2^30 ms
 * (12.4 days).
 */
export const BUCKETS_PER_DOUBLING = 8;
export const TOP_BUCKET = 241;
export const QUANTILES = [0.5, 0.95, 0.99] as const;
/** The largest relative error of an estimated quantile: half a bucket (in ratio), below TOP_BUCKET. */
export const MAX_RELATIVE_ERROR = 2 ** (1 / (2 * BUCKETS_PER_DOUBLING)) - 1;

/** The bucket of a value in ms, as the views compute it (migration 013 holds this text for `duration_ms` and `e2e`). */
export const latencyBucketSql = (v: string): string => `if(${v} < 1, 0, toUInt8(least(1 + floor(${BUCKETS_PER_DOUBLING} * log2(${v})), ${TOP_BUCKET})))`;

/**
 * The estimate of a quantile in bucket `b` of a set whose values span [min, max]: the geometric
 * middle of the bucket narrowed to that span. The exact quantile lies in the same narrowed bucket,
 * so the estimate is off by at most half its width (MAX_RELATIVE_ERROR), and exact when the span
 * is one value.
 */
export function bucketValue(b: number, min: number, max: number): number {
  if (b === 0) return 0;
  const lo = Math.max(LOWER_EDGE[b]!, min);
  const hi = Math.min(UPPER_EDGE[b]!, max);
  return Math.sqrt(lo * hi);
}

/** Each bucket's edges in ms, computed once: an answer turns up to tens of thousands of buckets into values. */
const LOWER_EDGE = Array.from({ length: TOP_BUCKET + 1 }, (_, b) => (b === 0 ? 0 : 2 ** ((b - 1) / BUCKETS_PER_DOUBLING)));
const UPPER_EDGE = Array.from({ length: TOP_BUCKET + 1 }, (_, b) => (b === 0 ? 1 : b === TOP_BUCKET ? Infinity : 2 ** (b / BUCKETS_PER_DOUBLING)));

/**
 * The bucket of each quantile of a histogram (a map bucket -> count, keys in order, as sumMap
 * gives them): the q-quantile is the value at 0-based position floor(q * n) of the n sorted
 * values (as quantileExact takes it), in the first bucket whose running count exceeds it.
 */
export const histogramBucketsSql = (map: string): string =>
  `arrayMap(q -> mapKeys(${map})[arrayFirstIndex(c -> c > floor(q * arrayCumSum(mapValues(${map}))[-1]), arrayCumSum(mapValues(${map})))], [${QUANTILES.join(', ')}])`;

/**
 * The columns of an answer's rows, in the order the figures query selects them: rows are read as
 * arrays (JSONCompact), since a grouped answer has thousands of them.
 */
const enum Col {
  start_s,
  other,
  g,
  level,
  delivered,
  retrying,
  failed,
  dropped,
  /** Each quantile's bucket, and the smallest and largest value; empty and null without a value. */
  latency_b,
  latency_min,
  latency_max,
  end_to_end_b,
  end_to_end_min,
  end_to_end_max,
}
type CellRow = unknown[];
const CELL_COLUMNS = 'start_s, other, g, level, delivered, retrying, failed, dropped, latency_b, latency_min, latency_max, end_to_end_b, end_to_end_min, end_to_end_max';

const EMPTY_QUANTILES: Quantiles = { p50: null, p95: null, p99: null };

/** p50, p95 and p99 (whole ms) from each one's bucket and the span of the values. */
function quantilesOf(buckets: unknown, min: unknown, max: unknown): Quantiles {
  const b = buckets as number[];
  if (b.length !== QUANTILES.length || min === null || max === null) return EMPTY_QUANTILES;
  const lo = Number(min);
  const hi = Number(max);
  return { p50: Math.round(bucketValue(Number(b[0]), lo, hi)), p95: Math.round(bucketValue(Number(b[1]), lo, hi)), p99: Math.round(bucketValue(Number(b[2]), lo, hi)) };
}

export function figuresOf(n: { delivered: number; retrying: number; failed: number; dropped: number }, latency?: Quantiles, endToEnd?: Quantiles): Figures {
  return figures(n.delivered, n.retrying, n.failed, n.dropped, latency ?? EMPTY_QUANTILES, endToEnd ?? EMPTY_QUANTILES);
}

/** Figures as one literal of a fixed shape: an answer makes tens of thousands of them. */
function figures(delivered: number, retrying: number, failed: number, dropped: number, latency: Quantiles, endToEnd: Quantiles): Figures {
  const sent = delivered + retrying + failed;
  return {
    attempts: sent + dropped,
    delivered,
    retrying,
    failed,
    dropped,
    success_rate: sent === 0 ? null : delivered / sent,
    attempts_per_delivered: delivered === 0 ? null : sent / delivered,
    attempt_latency_ms: latency,
    end_to_end_latency_ms: endToEnd,
  };
}

/** A bucket's figures: the same fields, then its start. */
type BucketFigures = Figures & { startMs: number };
const bucketFigures = (startMs: number, f: Figures): BucketFigures => Object.assign(f, { startMs });

const figuresOfRow = (r: CellRow): Figures =>
  figures(
    Number(r[Col.delivered]),
    Number(r[Col.retrying]),
    Number(r[Col.failed]),
    Number(r[Col.dropped]),
    quantilesOf(r[Col.latency_b], r[Col.latency_min], r[Col.latency_max]),
    quantilesOf(r[Col.end_to_end_b], r[Col.end_to_end_min], r[Col.end_to_end_max]),
  );

const bucketFiguresOfRow = (r: CellRow): BucketFigures => bucketFigures(Number(r[Col.start_s]) * 1000, figuresOfRow(r));

/** The view each bucket reads (migration 013), and its time column; minute buckets read the attempts. */
const VIEW_OF: Record<'hour' | 'day', { table: string; column: string }> = {
  hour: { table: 'delivery_hours', column: 'hour' },
  day: { table: 'delivery_days', column: 'day' },
};

/** The dimensions the rows of each `keyed_by` of the views hold; a read takes the narrowest holding its group_by and filters. */
type Dimension = 'destination' | 'event_type' | 'ingester' | 'response_code';
const KEYED_BY: { name: string; holds: readonly Dimension[] }[] = [
  { name: 'none', holds: [] },
  { name: 'destination', holds: ['destination'] },
  { name: 'event_type', holds: ['event_type'] },
  { name: 'ingester', holds: ['ingester'] },
  { name: 'response_code', holds: ['response_code'] },
  { name: 'all', holds: ['destination', 'event_type', 'ingester', 'response_code'] },
];
const DIMENSION_OF: Record<AnalyticsGroupBy, Dimension> = { destination: 'destination', event_type: 'event_type', ingester: 'ingester', response_code: 'response_code', response_class: 'response_code' };

/**
 * The rows of the views a read takes, and whether they are one per bucket and group: then the
 * read takes them merged (FINAL) as they are, with no aggregation state per cell.
 */
export function keyedByOf(q: Pick<AnalyticsQuery, 'groupBy' | 'destinationId' | 'eventType' | 'destinationIds'>): { name: string; onePerCell: boolean } {
  const needs = new Set<Dimension>();
  if (q.groupBy) needs.add(DIMENSION_OF[q.groupBy]);
  if (q.destinationId !== null || q.destinationIds) needs.add('destination');
  if (q.eventType !== null) needs.add('event_type');
  const k = KEYED_BY.find((x) => [...needs].every((d) => x.holds.includes(d)))!;
  const pinned = (d: Dimension) => (d === 'destination' && q.destinationId !== null) || (d === 'event_type' && q.eventType !== null);
  const grouped = (d: Dimension) => q.groupBy !== null && q.groupBy !== 'response_class' && DIMENSION_OF[q.groupBy] === d;
  return { name: k.name, onePerCell: k.holds.every((d) => pinned(d) || grouped(d)) };
}

/** The conditions every read shares: the tenant, the filters and the key's destinations. */
function filtersSql(q: AnalyticsQuery): { sql: string; params: Record<string, unknown> } {
  const parts: string[] = [];
  const params: Record<string, unknown> = { tenant: q.tenant, from: Math.floor(q.fromMs / 1000), to: Math.floor(q.toMs / 1000) };
  if (q.destinationId !== null) {
    parts.push('destination_id = {destination:String}');
    params.destination = q.destinationId;
  }
  if (q.eventType !== null) {
    parts.push('event_type = {event_type:String}');
    params.event_type = q.eventType;
  }
  if (q.destinationIds) {
    parts.push('destination_id IN {destinations:Array(String)}');
    params.destinations = [...q.destinationIds];
  }
  return { sql: parts.map((p) => `AND ${p}`).join(' '), params };
}

/** The value of a row each group_by groups by (`code` 0: no answer); '' is "none" (no type, no answer). */
const GROUP_EXPR: Record<AnalyticsGroupBy, string> = {
  destination: 'destination_id',
  event_type: 'event_type',
  ingester: 'ingester_id',
  response_code: "if(code = 0, '', toString(code))",
  response_class: "if(code = 0, '', concat(toString(intDiv(code, 100)), 'xx'))",
};

type Sql = { query: string; query_params: Record<string, unknown> };

/** The rows a read aggregates: of the view of its bucket, or the attempts themselves (minute buckets, and the bench's baseline). */
function rowsSql(database: string, q: AnalyticsQuery, source: 'view' | 'raw', final = false): string {
  const f = filtersSql(q);
  if (source === 'view' && q.bucket !== 'minute') {
    const v = VIEW_OF[q.bucket];
    return `(SELECT toUnixTimestamp(${v.column}) AS start_s, destination_id, event_type, ingester_id, response_code AS code,
                    delivered, retrying, failed, dropped, latency, latency_min, latency_max, end_to_end, end_to_end_min, end_to_end_max
             FROM ${database}.${v.table}${final ? ' FINAL' : ''}
             WHERE tenant_id = {tenant:String} AND keyed_by = '${keyedByOf(q).name}' AND ${v.column} >= toDateTime({from:Int64}, 'UTC') AND ${v.column} < toDateTime({to:Int64}, 'UTC') ${f.sql})`;
  }
  const start = q.bucket === 'day' ? "toStartOfDay(attempted_at, 'UTC')" : `toStartOfInterval(attempted_at, toIntervalSecond(${BUCKET_SECONDS[q.bucket]}), 'UTC')`;
  return `(SELECT toUnixTimestamp(${start}) AS start_s, destination_id, event_type, ingester_id, ifNull(response_code, 0) AS code, status, duration_ms,
                  toUnixTimestamp64Milli(attempted_at) + duration_ms - ifNull(toUnixTimestamp64Milli(received_at), 0) AS e2e,
                  status != 'dropped' AS sent, status = 'delivered' AND received_at IS NOT NULL AS e2e_known
           FROM ${database}.deliveries FINAL
           WHERE tenant_id = {tenant:String} AND attempted_at >= fromUnixTimestamp64Milli({from:Int64} * 1000) AND attempted_at < fromUnixTimestamp64Milli({to:Int64} * 1000) ${f.sql})`;
}

/** The groups of the range by attempts, biggest first (then by key), and how many there are. */
export function topGroupsSql(database: string, q: AnalyticsQuery & { groupBy: AnalyticsGroupBy }, source: 'view' | 'raw' = 'view'): Sql {
  const attempts = source === 'view' && q.bucket !== 'minute' ? 'delivered + retrying + failed + dropped' : '1';
  return {
    query: `SELECT g, count() OVER () AS total FROM (SELECT ${GROUP_EXPR[q.groupBy]} AS g, sum(${attempts}) AS n FROM ${rowsSql(database, q, source)} GROUP BY g)
            ORDER BY n DESC, g LIMIT ${MAX_GROUPS}`,
    query_params: filtersSql(q).params,
  };
}

/** Levels of an answer's rows: bits of grouping(start_s, other, g), a column left out of the row's set. */
const NO_BUCKET = 4;
const NO_GROUP = 3;
const TOTAL = NO_BUCKET | NO_GROUP;

/** The view's figures of a set of rows: summed counts, merged histograms and the span of their values. */
const VIEW_SUMS =
  'sum(delivered) AS delivered, sum(retrying) AS retrying, sum(failed) AS failed, sum(dropped) AS dropped, sumMap(latency) AS latency, min(latency_min) AS latency_min, max(latency_max) AS latency_max, sumMap(end_to_end) AS end_to_end, min(end_to_end_min) AS end_to_end_min, max(end_to_end_max) AS end_to_end_max';
const VIEW_COLUMNS = 'delivered, retrying, failed, dropped, latency, latency_min, latency_max, end_to_end, end_to_end_min, end_to_end_max';

/** The figures query's columns (CELL_COLUMNS) from rows of view sums: each histogram as its quantiles' buckets. */
const quantileBucketsOf = (rows: string): string =>
  `SELECT start_s, other, g, level, delivered, retrying, failed, dropped,
          if(empty(latency), [], ${histogramBucketsSql('latency')}) AS latency_b, latency_min, latency_max,
          if(empty(end_to_end), [], ${histogramBucketsSql('end_to_end')}) AS end_to_end_b, end_to_end_min, end_to_end_max
   FROM (${rows})`;

/** A row's group (`raw`), whether it folds into `other` (not among `top`), and its key `g` ('' when folded). */
const foldedSql = (group: string, top: string[] | null): string => `${group} AS raw, ${top ? 'NOT has({top:Array(String)}, raw)' : '0'} AS other, if(other, '', raw) AS g`;

/**
 * The GROUPING SETS of the one-scan forms, each prefixed with `by` (a column whose rows are kept
 * apart), and each row's level from the columns left out of its set. Ungrouped, `other` and `g`
 * are constants: the first set is per bucket, the second the total.
 */
const groupingSetsSql = (q: AnalyticsQuery, by = ''): { sets: string; level: string } => ({
  sets: q.groupBy ? `(${by}start_s, other, g), (${by}other, g), (${by}start_s), (${by.slice(0, -2)})` : '(start_s, other, g), (other, g)',
  level: `grouping(start_s, other, g) + ${q.groupBy ? 0 : NO_GROUP}`,
});

/**
 * The figures per bucket (and group) from the views, and every level of totals, in one query of a
 * few parts: rows one per bucket and group are read merged (FINAL) and passed through, rows that
 * are not (several codes of a class; filtered rows) are summed per cell, and only the totals merge
 * many histograms. `top`: the groups listed by key when there are more than MAX_GROUPS (the rest
 * fold into `other`), else null.
 */
function viewSql(database: string, q: AnalyticsQuery, top: string[] | null): Sql {
  const f = filtersSql(q);
  const cells = (qq: AnalyticsQuery, g: string, level: number, where = '') => {
    const k = keyedByOf(qq);
    return k.onePerCell
      ? `SELECT start_s, 0 AS other, ${g} AS g, ${level} AS level, ${VIEW_COLUMNS} FROM ${rowsSql(database, qq, 'view', true)} ${where}`
      : `SELECT start_s, 0 AS other, ${g} AS g, ${level} AS level, ${VIEW_SUMS} FROM ${rowsSql(database, qq, 'view')} ${where} GROUP BY start_s, g`;
  };
  const ungrouped = { ...q, groupBy: null };
  const parts = [cells(ungrouped, "''", NO_GROUP), `SELECT 0 AS start_s, 0 AS other, '' AS g, ${TOTAL} AS level, ${VIEW_SUMS} FROM ${rowsSql(database, ungrouped, 'view')}`];
  if (q.groupBy) {
    const group = GROUP_EXPR[q.groupBy];
    const rows = rowsSql(database, q, 'view');
    if (top) {
      parts.push(
        cells(q, group, 0, 'WHERE has({top:Array(String)}, g)'),
        `SELECT start_s, 1 AS other, '' AS g, 0 AS level, ${VIEW_SUMS} FROM ${rows} WHERE NOT has({top:Array(String)}, ${group}) GROUP BY start_s`,
        `SELECT 0 AS start_s, NOT has({top:Array(String)}, ${group}) AS other, if(other, '', ${group}) AS g, ${NO_BUCKET} AS level, ${VIEW_SUMS} FROM ${rows} GROUP BY other, g`,
      );
    } else parts.push(cells(q, group, 0), `SELECT 0 AS start_s, 0 AS other, ${group} AS g, ${NO_BUCKET} AS level, ${VIEW_SUMS} FROM ${rows} GROUP BY g`);
  }
  return {
    query: quantileBucketsOf(parts.join('\nUNION ALL ')),
    query_params: { ...f.params, ...(top ? { top } : {}) },
  };
}

/**
 * Day buckets from the day view in one scan: at most MAX_RANGE_DAYS + 1 buckets, so an answer has
 * a few thousand cells at most, and summing every row per cell and per total (GROUPING SETS, as
 * the raw form does) costs less than the four reads viewSql makes, each of which pays the engine's
 * floor for reading a table (about 10 to 20 ms on a 2-core machine, where the whole answer then
 * takes 30). When the ungrouped figures and the grouped ones read rows of two different `keyed_by`
 * (a group_by without filters), both are read in that scan and each set keeps the rows of its own.
 */
function daySql(database: string, q: AnalyticsQuery, top: string[] | null): Sql {
  const f = filtersSql(q);
  const ungroupedBy = keyedByOf({ ...q, groupBy: null }).name;
  const groupedBy = q.groupBy ? keyedByOf(q).name : ungroupedBy;
  const both = groupedBy !== ungroupedBy;
  const by = both ? 'keyed_by, ' : '';
  const { sets, level } = groupingSetsSql(q, by);
  const rows = `SELECT start_s, other, g, ${level} AS level, ${by}${VIEW_SUMS}
                FROM (SELECT keyed_by, toUnixTimestamp(day) AS start_s, response_code AS code, ${foldedSql(q.groupBy ? GROUP_EXPR[q.groupBy] : "''", top)}, ${VIEW_COLUMNS}
                      FROM ${database}.delivery_days
                      WHERE tenant_id = {tenant:String} AND keyed_by IN ('${ungroupedBy}', '${groupedBy}') AND day >= toDateTime({from:Int64}, 'UTC') AND day < toDateTime({to:Int64}, 'UTC') ${f.sql})
                GROUP BY GROUPING SETS (${sets})`;
  return {
    query: `${quantileBucketsOf(rows)} ${both ? `WHERE (level IN (${NO_GROUP}, ${TOTAL})) = (keyed_by = '${ungroupedBy}')` : ''}`,
    query_params: { ...f.params, ...(top ? { top } : {}) },
  };
}

/**
 * The same figures from the attempts themselves (deliveries FINAL): what minute buckets read (a
 * range of at most about a day, in key order: tenant_id, attempted_at), and the baseline the
 * bench measures the views against. Each quantile's bucket is the bucket at its position among
 * the attempts' (quantileExact over bucket numbers), so the figures equal the views'.
 */
function rawSql(database: string, q: AnalyticsQuery, top: string[] | null): Sql {
  const { sets, level } = groupingSetsSql(q);
  const quantiles = (bucket: string, cond: string) => `if(countIf(${cond}) = 0, [], quantilesExactIf(${QUANTILES.join(', ')})(${bucket}, ${cond}))`;
  return {
    query: `SELECT start_s, other, g, ${level} AS level,
                   countIf(status = 'delivered') AS delivered, countIf(status = 'retrying') AS retrying, countIf(status = 'failed') AS failed, countIf(status = 'dropped') AS dropped,
                   ${quantiles(latencyBucketSql('duration_ms'), 'sent')} AS latency_b, minIf(duration_ms, sent) AS latency_min, maxIf(duration_ms, sent) AS latency_max,
                   ${quantiles(latencyBucketSql('e2e'), 'e2e_known')} AS end_to_end_b, minIf(e2e, e2e_known) AS end_to_end_min, maxIf(e2e, e2e_known) AS end_to_end_max
            FROM (SELECT ${foldedSql(q.groupBy ? GROUP_EXPR[q.groupBy] : "''", top)}, * FROM ${rowsSql(database, q, 'raw')})
            GROUP BY GROUPING SETS (${sets})`,
    query_params: { ...filtersSql(q).params, ...(top ? { top } : {}) },
  };
}

/**
 * The SQL of an answer's figures: from the views for hour and day buckets (the day view in one
 * scan), from the attempts for minute buckets (or for every bucket with `raw`, the bench's baseline).
 */
export function analyticsSql(database: string, q: AnalyticsQuery, top: string[] | null, source: 'view' | 'raw' = 'view'): Sql {
  if (source === 'raw' || q.bucket === 'minute') return rawSql(database, q, top);
  return q.bucket === 'day' ? daySql(database, q, top) : viewSql(database, q, top);
}

/**
 * The most frequent error messages of failed and retrying attempts over the range: from the
 * per-hour view for hour and day buckets (its rows keyed by nothing when there is no filter),
 * from the attempts themselves for minute buckets.
 */
export function topErrorsSql(database: string, q: AnalyticsQuery): Sql {
  const f = filtersSql(q);
  const query =
    q.bucket === 'minute'
      ? `SELECT assumeNotNull(error_message) AS message, count() AS attempts FROM ${database}.deliveries FINAL
         WHERE tenant_id = {tenant:String} AND attempted_at >= fromUnixTimestamp64Milli({from:Int64} * 1000) AND attempted_at < fromUnixTimestamp64Milli({to:Int64} * 1000)
           AND error_message IS NOT NULL AND status IN ('retrying', 'failed') ${f.sql}
         GROUP BY message ORDER BY attempts DESC, message LIMIT ${MAX_TOP_ERRORS}`
      : `SELECT error_message AS message, sum(attempts) AS attempts FROM ${database}.delivery_error_hours
         WHERE tenant_id = {tenant:String} AND keyed_by = '${f.sql === '' ? 'none' : 'all'}' AND hour >= toDateTime({from:Int64}, 'UTC') AND hour < toDateTime({to:Int64}, 'UTC') ${f.sql}
         GROUP BY message ORDER BY attempts DESC, message LIMIT ${MAX_TOP_ERRORS}`;
  return { query, query_params: f.params };
}

async function rowsOf<T>(clickhouse: ClickHouseClient, sql: Sql): Promise<T[]> {
  return (await clickhouse.query({ ...sql, format: 'JSONEachRow' })).json<T>();
}

/** An answer's rows as arrays in CELL_COLUMNS order (JSONCompact names the columns once, where JSONEachRow repeats them on every row). */
async function cellRowsOf(clickhouse: ClickHouseClient, sql: Sql): Promise<CellRow[]> {
  const { meta, data } = await (await clickhouse.query({ ...sql, format: 'JSONCompact' })).json<unknown[]>();
  const names = (meta ?? []).map((m) => m.name).join(', ');
  if (names !== CELL_COLUMNS) throw new Error(`the analytics query answered the columns ${names}, not ${CELL_COLUMNS}`);
  return data;
}

/**
 * (tenant, group_by) pairs whose last answer had more than MAX_GROUPS groups: their next answer
 * lists the groups first. A hint, not data: when it is wrong an answer costs a query more, and
 * the oldest entries go past MAX_FOLDING_HINTS.
 */
const foldedLastTime = new Set<string>();
const MAX_FOLDING_HINTS = 10_000;

function hintFolding(key: string, folded: boolean): void {
  foldedLastTime.delete(key);
  if (!folded) return;
  foldedLastTime.add(key);
  if (foldedLastTime.size > MAX_FOLDING_HINTS) foldedLastTime.delete(foldedLastTime.values().next().value!);
}

/** A tenant's delivery analytics over [from, to): see docs/analytics.md for each figure. */
export async function deliveryAnalytics(clickhouse: ClickHouseClient, database: string, q: AnalyticsQuery, source: 'view' | 'raw' = 'view'): Promise<AnalyticsAnswer> {
  const figures = async (): Promise<{ groupsTotal: number | null; cells: CellRow[] }> => {
    if (!q.groupBy) return { groupsTotal: null, cells: await cellRowsOf(clickhouse, analyticsSql(database, q, null, source)) };
    const hint = `${q.tenant}\u0000${q.groupBy}`;
    if (!foldedLastTime.has(hint)) {
      // most answers have at most MAX_GROUPS groups, and then nothing folds: the figures are asked
      // for unfolded, their per-group totals counting the groups, and bounded to the rows such an
      // answer has, so that an answer with many more groups costs no more than one of MAX_GROUPS
      const buckets = Math.ceil((q.toMs - q.fromMs) / (BUCKET_SECONDS[q.bucket] * 1000));
      const bound = MAX_GROUPS * buckets + MAX_GROUPS + buckets + 1;
      const sql = analyticsSql(database, q, null, source);
      // every form of the figures query is one SELECT, whose rows the LIMIT bounds (wrapped in a
      // SELECT * of its own, the query measured 10 ms slower)
      const cells = await cellRowsOf(clickhouse, { ...sql, query: `${sql.query}\nLIMIT ${bound + 1}` });
      let groups = 0;
      for (const r of cells) if (Number(r[Col.level]) === NO_BUCKET) groups++;
      if (cells.length <= bound && groups <= MAX_GROUPS) return { groupsTotal: groups, cells };
    }
    // more than MAX_GROUPS: the biggest are listed by key and the rest fold into `other`
    const biggest = await rowsOf<{ g: string; total: string | number }>(clickhouse, topGroupsSql(database, { ...q, groupBy: q.groupBy }, source));
    const groupsTotal = Number(biggest[0]?.total ?? 0);
    hintFolding(hint, groupsTotal > MAX_GROUPS);
    const top = groupsTotal > MAX_GROUPS ? biggest.map((b) => b.g) : null;
    return { groupsTotal, cells: await cellRowsOf(clickhouse, analyticsSql(database, q, top, source)) };
  };
  const [{ groupsTotal, cells }, errors] = await Promise.all([figures(), rowsOf<{ message: string; attempts: string | number }>(clickhouse, topErrorsSql(database, q))]);
  return answerOf(q, groupsTotal, cells, errors);
}

/** An answer from the figures query's rows (CellRow, CELL_COLUMNS) and the top errors' rows. */
function answerOf(q: AnalyticsQuery, groupsTotal: number | null, cells: CellRow[], errors: { message: string; attempts: string | number }[]): AnalyticsAnswer {
  const width = BUCKET_SECONDS[q.bucket] * 1000;
  const empty = figuresOf({ delivered: 0, retrying: 0, failed: 0, dropped: 0 });

  type Group = { key: string | null; other: boolean; totals: Figures; buckets: BucketFigures[] };
  let totals = empty;
  const perBucket = new Map<number, BucketFigures>();
  const named = new Map<string, Group>();
  let other: Group | null = null;
  const groupOf = (r: CellRow): Group => {
    if (Number(r[Col.other]) !== 0) return (other ??= { key: null, other: true, totals: empty, buckets: [] });
    const key = String(r[Col.g]);
    let g = named.get(key);
    if (!g) named.set(key, (g = { key: key === '' ? null : key, other: false, totals: empty, buckets: [] }));
    return g;
  };
  for (const r of cells) {
    const level = Number(r[Col.level]);
    if (level === TOTAL) totals = figuresOfRow(r);
    else if (level === NO_BUCKET) groupOf(r).totals = figuresOfRow(r);
    else if (level === NO_GROUP) {
      const b = bucketFiguresOfRow(r);
      perBucket.set(b.startMs, b);
    } else groupOf(r).buckets.push(bucketFiguresOfRow(r));
  }
  const buckets: BucketFigures[] = [];
  // an empty bucket gets figures of its own: bucketFigures adds its start to the object it is given
  for (let at = q.fromMs; at < q.toMs; at += width) buckets.push(perBucket.get(at) ?? bucketFigures(at, figuresOf({ delivered: 0, retrying: 0, failed: 0, dropped: 0 })));
  let listed: Group[] | null = null;
  if (q.groupBy) {
    listed = [...named.values()].sort((a, b) => b.totals.attempts - a.totals.attempts || String(a.key ?? '').localeCompare(String(b.key ?? '')));
    if (other) listed.push(other);
    for (const g of listed) g.buckets.sort((a, b) => a.startMs - b.startMs);
  }
  return {
    totals,
    buckets,
    groups: listed,
    groupsTotal,
    topErrors: errors.map((e) => ({ message: e.message, attempts: Number(e.attempts) })),
  };
}
