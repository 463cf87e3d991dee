/**
 * The analytics benchmark: fills a fresh embedded ClickHouse database with synthetic attempts
 * (generated inside ClickHouse with INSERT ... SELECT FROM numbers, then rolled into the views of
 * migration 013 as the service's rollup does it, platform/clickhouse/analytics-rollup.ts), then times GET .../analytics through the API's own query code
 * (deliveryAnalytics) for each bucket and group_by over one tenant's range, against the same
 * figures computed from the attempts themselves (the raw table, FINAL) in the same rounds. Minute
 * buckets read the attempts either way (there is no minute view), so their ratio is about 1.
 * Before timing, each case checks that the views give exactly the raw table's answer.
 *
 * Run by bench/run.ts (scenario `analytics`) as a process of its own: the embedded engine allows
 * one process per data dir. Environment: ANALYTICS_DATA_DIR, ANALYTICS_ROWS (all attempts),
 * ANALYTICS_TENANT_ROWS (the queried tenant's), ANALYTICS_DAYS, ANALYTICS_REPS (timed runs per
 * case), ANALYTICS_RAW_REPS (timed baseline runs per case), ANALYTICS_RESULTS (the JSON written).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import path from 'node:path';
import type { ClickHouseClient } from '@clickhouse/client';
import { openClickHouse } from '../platform/clickhouse/client';
import { rollUpAnalytics } from '../platform/clickhouse/analytics-rollup';
import { migrate } from '../platform/clickhouse/migrate';
import { analyticsBody } from '../api/routes/analytics';
import { ANALYTICS_GROUP_BY, deliveryAnalytics, type AnalyticsBucket, type AnalyticsGroupBy, type AnalyticsQuery } from '../platform/clickhouse/analytics';
import type { Entry } from './lib/report';
import { spawnScript, tail } from './lib/procs';
import { quantile, round, sleep } from './lib/stats';

const DATABASE = 'hookline';
const TENANT = 'tenant-a';
/** The figure the analytics are held to: p99 of one answer. */
const TARGET_P99_MS = 100;

const num = (name: string, fallback: number) => Math.max(1, Number(process.env[name] ?? fallback));
const say = (msg: string) => process.stdout.write(`[analytics ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

async function scalar(client: ClickHouseClient, query: string): Promise<number> {
  const rs = await client.query({ query, format: 'JSONEachRow' });
  return Number(Object.values((await rs.json<Record<string, unknown>>())[0] ?? {})[0] ?? 0);
}

/**
 * `rows` attempts over `days` up to `endMs`: the first `tenantRows` the queried tenant's, the rest
 * spread over nine others, each evenly in time. An event's type decides its ingester (types 0-9
 * over 3 ingesters) and one of two destinations subscribed to it (20 in all), as routing would;
 * 85% delivered (a sixth of them on a second attempt), 10% retrying, 5% failed, a fifth of the
 * failures without an answer; dst_0003 answers 1.5 s slower than the rest.
 */
async function fill(client: ClickHouseClient, rows: number, tenantRows: number, days: number, endMs: number): Promise<void> {
  const spanMs = days * 86_400_000;
  const startMs = endMs - spanMs;
  const chunk = 1_000_000;
  for (let from = 0; from < rows; from += chunk) {
    const n = Math.min(chunk, rows - from);
    await client.command({
      query: `INSERT INTO ${DATABASE}.deliveries (tenant_id, delivery_id, attempt_number, event_id, destination_id, correlation_id, status, response_code, attempted_at, duration_ms, error_message, body_sha256, next_attempt_at, event_type, ingester_id, received_at)
        SELECT tenant_id, concat('dlv_', hex(cityHash64(number, 'd'))), attempt, concat('evt_', hex(h)), concat('dst_', leftPad(toString(ty * 2 + intDiv(h, 10) % 2), 4, '0')) AS destination, 'cor',
               status, code, at, toUInt32(20 + intDiv(h, 10000) % 300 + if(destination = 'dst_0003', 1500, 0)),
               multiIf(status = 'delivered', NULL, isNull(code), 'timeout after 10000 ms', status = 'failed', concat('retries exhausted after 5 attempts; last: HTTP ', toString(code)), concat('HTTP ', toString(code))),
               'ab', NULL, concat('type.', toString(ty)), concat('ing_', toString(ty % 3)),
               at - toIntervalMillisecond(60000 * (attempt - 1) + 80 + h % 50)
        FROM (
          SELECT number, cityHash64(number) AS h, h % 10 AS ty, intDiv(h, 100) % 100 AS s,
                 if(number < ${tenantRows}, '${TENANT}', concat('tenant-', toString(number % 9 + 1))) AS tenant_id,
                 multiIf(s < 85, 'delivered', s < 95, 'retrying', 'failed') AS status, toUInt32(1 + (status = 'delivered' AND s % 6 = 0)) AS attempt,
                 if(status = 'delivered', [200, 204][s % 2 + 1], if(s % 5 = 0, NULL, [500, 502, 503, 429][s % 4 + 1])) AS code,
                 fromUnixTimestamp64Milli(toInt64(${startMs} + if(number < ${tenantRows}, intDiv(number * ${spanMs}, ${tenantRows}), intDiv((number - ${tenantRows}) * ${spanMs}, ${Math.max(1, rows - tenantRows)}))), 'UTC') AS at
          FROM numbers(${from}, ${n}))`,
    });
    say(`attempts: ${(from + n).toLocaleString('en-US')} of ${rows.toLocaleString('en-US')}`);
  }
}

async function settle(client: ClickHouseClient): Promise<void> {
  let quiet = 0;
  const start = performance.now();
  while (quiet < 3 && performance.now() - start < 300_000) {
    quiet = (await scalar(client, `SELECT count() FROM system.merges WHERE database = '${DATABASE}'`)) === 0 ? quiet + 1 : 0;
    await sleep(1_000);
  }
}

interface Case {
  name: string;
  query: AnalyticsQuery;
}

/** Each bucket over the widest range it takes (minute: the last day; hour and day: the 30 days), ungrouped and by each group_by. */
function cases(endMs: number, days: number): Case[] {
  const hour = 3_600_000;
  const toMs = Math.ceil(endMs / hour) * hour;
  const ranges: Record<AnalyticsBucket, { fromMs: number; toMs: number }> = {
    minute: { fromMs: toMs - 24 * hour, toMs },
    hour: { fromMs: toMs - days * 24 * hour, toMs },
    day: { fromMs: Math.floor((toMs - days * 24 * hour) / (24 * hour)) * 24 * hour, toMs: Math.ceil(toMs / (24 * hour)) * 24 * hour },
  };
  const groups: (AnalyticsGroupBy | null)[] = [null, ...ANALYTICS_GROUP_BY];
  return (['minute', 'hour', 'day'] as const).flatMap((bucket) =>
    groups.map((groupBy) => ({ name: `${bucket}_${groupBy ?? 'totals'}`, query: { tenant: TENANT, ...ranges[bucket], bucket, groupBy, destinationId: null, eventType: null, destinationIds: null } })),
  );
}

type Timing = { p50_ms: number; p99_ms: number; min_ms: number; max_ms: number; runs: number };
const timing = (xs: number[]): Timing => ({ p50_ms: round(quantile(xs, 0.5)), p99_ms: round(quantile(xs, 0.99)), min_ms: round(Math.min(...xs)), max_ms: round(Math.max(...xs)), runs: xs.length });

export interface AnalyticsResult {
  rows: number;
  tenant_rows: number;
  days: number;
  fill_s: number;
  rollup_s: number;
  view_rows: { hours: number; days: number; error_hours: number; hours_by: Record<string, number> };
  /** view: the answer (deliveryAnalytics); with_body: the same runs, up to the API's JSON body of that answer written (analyticsBody, JSON.stringify). */
  cases: Record<string, { view: Timing; with_body: Timing; body_bytes: number; raw: Timing; attempts: number; buckets: number; groups: number | null }>;
}

async function main(): Promise<void> {
  const rows = num('ANALYTICS_ROWS', 10_000_000);
  const tenantRows = Math.min(rows, num('ANALYTICS_TENANT_ROWS', 1_000_000));
  const days = num('ANALYTICS_DAYS', 30);
  const reps = num('ANALYTICS_REPS', 30);
  const rawReps = num('ANALYTICS_RAW_REPS', 5);
  const client = openClickHouse({ url: undefined, user: 'default', password: '', dataDir: process.env.ANALYTICS_DATA_DIR! });
  try {
    await migrate(client, DATABASE);
    const endMs = Math.floor(Date.now() / 1000) * 1000;
    const t0 = performance.now();
    await fill(client, rows, tenantRows, days, endMs);
    const fillS = (performance.now() - t0) / 1000;
    await settle(client);
    const t1 = performance.now();
    // every attempt stored so far: no insert is under way
    const rolled = await rollUpAnalytics(client, DATABASE, { lagMs: 0 });
    const rollupS = (performance.now() - t1) / 1000;
    say(`rolled up into the views in ${rollupS.toFixed(1)} s (${rolled.steps.length} step(s))`);
    // the rollup of 30 days at once writes parts that each span every key, which FINAL then merges
    // on every read; a running service's rollups add a few seconds of attempts at a time, whose
    // parts overlap the history only in the latest hour, and background merges fold them in: the
    // history is measured merged into one part per partition (docs/analytics.md)
    await settle(client);
    const parts = () => scalar(client, `SELECT count() FROM system.parts WHERE database = '${DATABASE}' AND table = 'delivery_hours' AND active`);
    const partsBefore = await parts();
    for (const view of ['delivery_hours', 'delivery_days', 'delivery_error_hours']) await client.command({ query: `OPTIMIZE TABLE ${DATABASE}.${view} FINAL` });
    say(`the hour view's active parts: ${partsBefore} after the rollup, ${await parts()} merged`);
    const count = (table: string) => scalar(client, `SELECT count() FROM ${DATABASE}.${table} WHERE tenant_id = '${TENANT}'`);
    const hoursBy = await client.query({ query: `SELECT keyed_by, count() AS n FROM ${DATABASE}.delivery_hours FINAL WHERE tenant_id = '${TENANT}' GROUP BY keyed_by ORDER BY keyed_by`, format: 'JSONEachRow' });
    const viewRows = {
      hours: await count('delivery_hours'),
      days: await count('delivery_days'),
      error_hours: await count('delivery_error_hours'),
      hours_by: Object.fromEntries((await hoursBy.json<{ keyed_by: string; n: string }>()).map((r) => [r.keyed_by, Number(r.n)])),
    };
    say(`filled ${rows.toLocaleString('en-US')} attempts in ${fillS.toFixed(1)} s; the tenant's view rows: ${JSON.stringify(viewRows)}`);

    const all = cases(endMs, days);
    const results: AnalyticsResult['cases'] = {};
    for (const c of all) {
      const view: number[] = [];
      const withBody: number[] = [];
      let bodyBytes = 0;
      const raw: number[] = [];
      let answer = await deliveryAnalytics(client, DATABASE, c.query);
      const exact = await deliveryAnalytics(client, DATABASE, c.query, 'raw');
      // no outcome is inserted twice here, and quantiles come from the same buckets: the views must give the raw table's answer
      if (!isDeepStrictEqual(answer, exact)) throw new Error(`${c.name}: the views' answer differs from the raw table's (${answer.totals.attempts} and ${exact.totals.attempts} attempts; ${JSON.stringify(answer.totals)} / ${JSON.stringify(exact.totals)})`);
      // the raw runs interleave with the view's, so both see the same load
      const every = Math.max(1, Math.floor(reps / rawReps));
      for (let r = 0; r < reps; r++) {
        let t = performance.now();
        answer = await deliveryAnalytics(client, DATABASE, c.query);
        view.push(performance.now() - t);
        // what the route does with the answer before the response goes out
        bodyBytes = JSON.stringify(analyticsBody(c.query, answer)).length;
        withBody.push(performance.now() - t);
        if (r % every === 0 && raw.length < rawReps) {
          t = performance.now();
          await deliveryAnalytics(client, DATABASE, c.query, 'raw');
          raw.push(performance.now() - t);
        }
      }
      results[c.name] = { view: timing(view), with_body: timing(withBody), body_bytes: bodyBytes, raw: timing(raw), attempts: answer.totals.attempts, buckets: answer.buckets.length, groups: answer.groupsTotal };
      say(`${c.name}: p50 ${results[c.name]!.view.p50_ms} ms, p99 ${results[c.name]!.view.p99_ms} ms (with the JSON body: ${results[c.name]!.with_body.p50_ms} / ${results[c.name]!.with_body.p99_ms} ms); raw p50 ${results[c.name]!.raw.p50_ms} ms (${answer.totals.attempts} attempts, ${answer.buckets.length} buckets)`);
    }
    const result: AnalyticsResult = { rows, tenant_rows: tenantRows, days, fill_s: round(fillS, 1), rollup_s: round(rollupS, 1), view_rows: viewRows, cases: results };
    writeFileSync(process.env.ANALYTICS_RESULTS!, JSON.stringify(result, null, 2));
  } finally {
    await client.close().catch(() => undefined);
  }
}

/**
 * The scenario as bench/run.ts runs it: this file in a process of its own on a fresh data dir,
 * then one entry per case: its p99 against TARGET_P99_MS, and for hour and day buckets its median
 * against the raw table's. Medians, since the baseline runs fewer times: the p99 of 5 runs is
 * their slowest, which a p99 of 30 runs is not. A minute answer reads the attempts either way
 * (the same SQL as its baseline), so its ratio is noise about 1 and only its p99 decides.
 */
export async function runAnalytics(root: string, settings: { rows: number; tenantRows: number; reps: number; rawReps: number }): Promise<Entry[]> {
  const out = path.join(root, 'analytics.json');
  const env = { ...process.env, ANALYTICS_DATA_DIR: path.join(root, 'analytics'), ANALYTICS_ROWS: String(settings.rows), ANALYTICS_TENANT_ROWS: String(settings.tenantRows), ANALYTICS_REPS: String(settings.reps), ANALYTICS_RAW_REPS: String(settings.rawReps), ANALYTICS_RESULTS: out };
  const child = spawnScript('analytics bench', 'bench/analytics.ts', [], env, path.join(root, 'analytics.log'));
  const timer = setTimeout(() => void child.stop(5_000), 40 * 60_000);
  const exit = await child.exited;
  clearTimeout(timer);
  await child.stop(1_000);
  if (exit.code !== 0) throw new Error(`bench/analytics.ts failed (${exit.code ?? exit.signal}): ${tail(child.logFile, 2000)}`);
  const r = JSON.parse(readFileSync(out, 'utf8')) as AnalyticsResult;
  return Object.entries(r.cases).map(([name, v]) => {
    const [bucket, ...group] = name.split('_');
    const range = bucket === 'minute' ? 'the last 24 h' : `${r.days} days`;
    const within = v.view.p99_ms <= TARGET_P99_MS;
    const ratio = round(v.raw.p50_ms / v.view.p50_ms);
    return {
      name: `analytics_${name}`,
      metric: `analytics p99, ${bucket} buckets over ${range}, ${group.join('_') === 'totals' ? 'ungrouped' : `group_by=${group.join('_')}`} (p99 <= ${TARGET_P99_MS} ms: ${within ? 'yes' : 'no'})`,
      unit: 'ms',
      value: v.view.p99_ms,
      spread: { min: v.view.min_ms, max: v.view.max_ms },
      repetitions: v.view.runs,
      baseline: { name: 'the same figures from the raw table (FINAL)', value: v.raw.p99_ms, spread: { min: v.raw.min_ms, max: v.raw.max_ms }, unit: 'ms' },
      ratio,
      target: 1,
      better: 'higher',
      met: within && (bucket === 'minute' || ratio >= 1),
      notes: `${r.rows.toLocaleString('en-US')} synthetic attempts over ${r.days} days in a fresh embedded engine, ${r.tenant_rows.toLocaleString('en-US')} of them the queried tenant's (20 destinations, 10 event types, 3 ingesters), generated inside ClickHouse (INSERT ... SELECT FROM numbers) in ${r.fill_s} s and rolled into the views in ${r.rollup_s} s; the tenant's view rows: ${r.view_rows.hours.toLocaleString('en-US')} per hour (${Object.entries(r.view_rows.hours_by).map(([k, n]) => `${k} ${n.toLocaleString('en-US')}`).join(', ')}), ${r.view_rows.days.toLocaleString('en-US')} per day, ${r.view_rows.error_hours.toLocaleString('en-US')} error rows per hour. One answer of GET .../analytics through the API's query code (deliveryAnalytics: the figures and the top errors), ${v.view.runs} runs: p50 ${v.view.p50_ms} ms, p99 ${v.view.p99_ms} ms (${v.attempts.toLocaleString('en-US')} attempts, ${v.buckets} buckets${v.groups === null ? '' : `, ${v.groups} groups`}); with the API's JSON body of each answer written (analyticsBody, JSON.stringify: ${(v.body_bytes / 1e6).toFixed(2)} MB), p50 ${v.with_body.p50_ms} ms, p99 ${v.with_body.p99_ms} ms. Baseline: the same figures computed from the raw attempts (deliveries FINAL, quantileExact over the attempts' latency buckets), ${v.raw.runs} runs interleaved, p50 ${v.raw.p50_ms} ms${bucket === 'minute' ? '; minute buckets read the attempts either way' : ''}. ratio = baseline p50 / p50${bucket === 'minute' ? ' (the same SQL: noise about 1, not a target)' : ''}; target (this suite's own): p99 <= ${TARGET_P99_MS} ms (${within ? 'met' : 'NOT met'})${bucket === 'minute' ? '' : `, and ratio >= 1 (${ratio >= 1 ? 'met' : 'NOT met'})`}.`,
      details: { ...v, p99_within_target: within, target_p99_ms: TARGET_P99_MS } as unknown as Record<string, unknown>,
    };
  });
}

if (require.main === module) {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    },
  );
}
