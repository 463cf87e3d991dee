/**
 * The search benchmark: fills a fresh embedded ClickHouse database with synthetic attempts and
 * their events (generated inside ClickHouse with INSERT ... SELECT FROM numbers), then times the
 * deliveries search through the API's own query code (listDeliveries and eventTypesOf, a first
 * page of 50). Each repetition runs every search twice, alternately with and without the
 * data-skipping indexes (ignore_data_skipping_indices), so both see the same load; the
 * baseline is one full scan of the attempts for a text, timed in the same rounds.
 *
 * Environment: SEARCH_DATA_DIR, SEARCH_ROWS (attempts; two per event), SEARCH_TENANTS,
 * SEARCH_DESTINATIONS, SEARCH_DAYS, SEARCH_REPS (runs per query, median), SEARCH_RESULTS (file the
 * JSON result is written to), SEARCH_TRY_INDEXES (candidate indexes to measure, see below).
 */
import { writeFileSync } from 'node:fs';
import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import { openClickHouse } from '../platform/clickhouse/client';
import { migrate } from '../platform/clickhouse/migrate';
import { eventTypesOf, listDeliveries, NO_SEARCH, type DeliveriesFilter, type SearchFilters } from '../platform/clickhouse/deliveries-list';
import { median, round, sleep } from './lib/stats';

const DATABASE = 'hookline';
const PAGE = 50;
/**
 * The data-skipping indexes the search may use, ignored in the runs without them: the one of
 * migration 008 (event_types by id) and any set by SEARCH_TRY_INDEXES, statements run after the
 * migrations to measure a candidate (`ALTER TABLE {database}.deliveries ADD INDEX name ...;...`).
 */
const TRY_INDEXES = (process.env.SEARCH_TRY_INDEXES ?? '').split(';').map((x) => x.trim()).filter(Boolean);
const SEARCH_INDEXES = ['event_id_bloom', ...TRY_INDEXES.map((x) => /ADD INDEX (?:IF NOT EXISTS )?(\w+)/i.exec(x)?.[1]).filter((x): x is string => !!x)];

const num = (name: string, fallback: number) => Math.max(1, Number(process.env[name] ?? fallback));
const rows = num('SEARCH_ROWS', 10_000_000);
const tenants = num('SEARCH_TENANTS', 50);
const destinations = num('SEARCH_DESTINATIONS', 200);
const days = num('SEARCH_DAYS', 30);
const reps = num('SEARCH_REPS', 7);
const events = Math.ceil(rows / 2);
const say = (msg: string) => process.stdout.write(`[search ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

async function scalar(client: ClickHouseClient, query: string): Promise<number> {
  const rs = await client.query({ query, format: 'JSONEachRow' });
  return Number(Object.values((await rs.json<Record<string, unknown>>())[0] ?? {})[0] ?? 0);
}

async function settle(client: ClickHouseClient): Promise<void> {
  let quiet = 0;
  const start = performance.now();
  while (quiet < 3 && performance.now() - start < 300_000) {
    const busy = (await scalar(client, `SELECT count() FROM system.merges WHERE database = '${DATABASE}'`)) + (await scalar(client, `SELECT count() FROM system.mutations WHERE database = '${DATABASE}' AND NOT is_done`));
    quiet = busy === 0 ? quiet + 1 : 0;
    await sleep(1_000);
  }
}

/**
 * Events e in [0, events): tenant e % tenants, destination e % destinations (so each tenant has
 * destinations / tenants of them), evenly over `days` up to `endMs`. Attempt i belongs to event
 * i / 2 and is its attempt i % 2 + 1, a minute after the first.
 */
async function fill(client: ClickHouseClient, endMs: number): Promise<void> {
  const spanMs = days * 86_400_000;
  const startMs = endMs - spanMs;
  const at = (e: string) => `fromUnixTimestamp64Milli(toInt64(${startMs} + intDiv(${e} * ${spanMs}, ${events})), 'UTC')`;
  const chunk = 1_000_000;
  const words = `['alpha','bravo','charlie','delta','echo','foxtrot','golf','hotel','india','juliet','kilo','lima','mike','november','oscar','papa']`;
  for (let from = 0; from < events; from += chunk) {
    const n = Math.min(chunk, events - from);
    await client.command({
      query: `INSERT INTO ${DATABASE}.events (tenant_id, event_id, ingester_id, correlation_id, received_at, event_type, content_type, headers, body, body_sha256)
        SELECT concat('tenant-', toString(number % ${tenants})), concat('evt_', hex(cityHash64(number))), 'ing_bench', concat('cor_', toString(number)), ${at('number')},
               concat('type.', toString(cityHash64(number, 't') % 20)), 'application/json', '{}',
               concat('{"type":"type.', toString(cityHash64(number, 't') % 20), '","customer":"cus_', toString(cityHash64(number, 'c') % 1000000),
                      '","amount":', toString(number % 10000), ',"description":"',
                      ${words}[cityHash64(number, 'w') % 16 + 1], ' ', ${words}[number % 16 + 1], ' ', repeat('lorem ipsum dolor ', 8),
                      '","note":"', if(cityHash64(number, 'n') % 20000 = 0, 'Refund DISPUTED by the bank', 'paid in full'), '"}'),
               hex(cityHash64(number, 'b'))
        FROM numbers(${from}, ${n})`,
    });
    say(`events: ${Math.min(events, from + n).toLocaleString('en-US')} of ${events.toLocaleString('en-US')}`);
  }
  // what the sink writes from the validated events
  await client.command({ query: `INSERT INTO ${DATABASE}.event_types (tenant_id, event_id, event_type, received_at) SELECT tenant_id, event_id, assumeNotNull(event_type), received_at FROM ${DATABASE}.events` });
  for (let from = 0; from < rows; from += chunk) {
    const n = Math.min(chunk, rows - from);
    // h decides status and code; attempts without an answer (code NULL) have no body
    await client.command({
      query: `INSERT INTO ${DATABASE}.deliveries (tenant_id, delivery_id, attempt_number, event_id, destination_id, correlation_id, status, response_code, attempted_at, duration_ms, error_message, body_sha256, next_attempt_at, response_body)
        SELECT tenant_id, delivery_id, attempt_number, event_id, destination_id, correlation_id, status, code, attempted_at, 40, if(status = 'delivered', NULL, 'status'), 'ab', NULL,
               if(isNull(code), '', if(status = 'delivered', concat('{"received":true,"ref":"', hex(cityHash64(i, 'r')), '"}'),
                  concat('{"error":"', ['upstream timeout','internal error','bad gateway','not found','rate limited'][h % 5 + 1], '","trace":"', hex(cityHash64(i, 'r')), '"',
                         if(cityHash64(i, 'q') % 4000 = 0, ',"detail":"Quota Exceeded for account"', ''), '}'))) AS response_body
        FROM (
          SELECT number AS i, intDiv(number, 2) AS e, cityHash64(number) % 100 AS h,
                 concat('tenant-', toString(e % ${tenants})) AS tenant_id, concat('dlv_', hex(cityHash64(e, 'd'))) AS delivery_id, toUInt32(number % 2 + 1) AS attempt_number,
                 concat('evt_', hex(cityHash64(e))) AS event_id, concat('dst_', leftPad(toString(e % ${destinations}), 4, '0')) AS destination_id, concat('cor_', toString(e)) AS correlation_id,
                 multiIf(h < 80, 'delivered', h < 92, 'retrying', 'failed') AS status,
                 if(h < 80, [200, 201, 204][h % 3 + 1], if(h % 10 = 9, NULL, [500, 502, 503, 404, 429][h % 5 + 1])) AS code,
                 ${at('e')} + toIntervalSecond(60 * (number % 2)) + toIntervalMillisecond(50) AS attempted_at
          FROM numbers(${from}, ${n}))`,
    });
    say(`attempts: ${Math.min(rows, from + n).toLocaleString('en-US')} of ${rows.toLocaleString('en-US')}`);
  }
}

interface Case {
  name: string;
  search: Partial<SearchFilters>;
  status?: string;
  pages?: number;
}

const chTime = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

/** The searches timed: a first page of 50 each (the last one walks to page 5 by cursors). */
function cases(endMs: number): Case[] {
  return [
    { name: 'tenant', search: {} },
    { name: 'status_failed', search: {}, status: 'failed' },
    { name: 'destination', search: { destinationId: `dst_${String(7 + tenants).padStart(4, '0')}` } },
    { name: 'event_type', search: { eventType: 'type.3' } },
    { name: 'one_day', search: { from: chTime(endMs - 10 * 86_400_000), to: chTime(endMs - 9 * 86_400_000) } },
    { name: 'response_5xx', search: { responseCode: { min: 500, max: 599 } } },
    { name: 'text_response_body', search: { text: 'quota exceeded' } },
    { name: 'text_request_body', search: { text: 'refund disputed' } },
    { name: 'page_5', search: {}, pages: 5 },
  ];
}

/** One search as the route runs it: a page (plus one row) and the event types of the page. */
async function searchPage(client: ClickHouseClient, f: DeliveriesFilter): Promise<{ rows: number; last: DeliveriesFilter['before'] }> {
  const got = await listDeliveries(client, DATABASE, f, PAGE + 1);
  const page = got.slice(0, PAGE);
  await eventTypesOf(client, DATABASE, f.tenant, page.map((r) => r.event_id));
  const last = page[page.length - 1];
  return { rows: page.length, last: got.length > PAGE && last ? { at: last.attempted_at_text, id: last.delivery_id, n: last.attempt_number } : null };
}

type Timing = { median_ms: number; min_ms: number; max_ms: number };
const timing = (xs: number[]): Timing => ({ median_ms: round(median(xs)), min_ms: round(Math.min(...xs)), max_ms: round(Math.max(...xs)) });

/** The client with settings added to every query (the API's code takes a client, not settings). */
function withSettings(client: ClickHouseClient, settings: ClickHouseSettings): ClickHouseClient {
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop === 'query') return (p: Parameters<ClickHouseClient['query']>[0]) => target.query({ ...p, clickhouse_settings: { ...(p.clickhouse_settings ?? {}), ...settings } } as never);
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/** One search, all its pages, in ms. */
async function runCase(client: ClickHouseClient, c: Case): Promise<{ ms: number; rows: number }> {
  const t = performance.now();
  let before: DeliveriesFilter['before'] = null;
  let rowsSeen = 0;
  for (let p = 0; p < (c.pages ?? 1); p++) {
    const got = await searchPage(client, { tenant: 'tenant-7', status: c.status ?? null, search: { ...NO_SEARCH, ...c.search }, before, destinationIds: null });
    rowsSeen = got.rows;
    before = got.last;
    if (p < (c.pages ?? 1) - 1 && !before) throw new Error(`${c.name}: page ${p + 1} has no next page`);
  }
  return { ms: performance.now() - t, rows: rowsSeen };
}

/** The baseline: one scan of every attempt's response body for a text. */
async function scan(client: ClickHouseClient): Promise<{ ms: number; matches: number }> {
  const t = performance.now();
  const matches = await scalar(client, `SELECT count() FROM ${DATABASE}.deliveries WHERE positionCaseInsensitive(response_body, 'quota exceeded') > 0`);
  return { ms: performance.now() - t, matches };
}

async function main(): Promise<void> {
  const dataDir = process.env.SEARCH_DATA_DIR!;
  const client = openClickHouse({ url: undefined, user: 'default', password: '', dataDir });
  const without = withSettings(client, { ignore_data_skipping_indices: SEARCH_INDEXES.join(',') });
  try {
    await migrate(client, DATABASE);
    for (const statement of TRY_INDEXES) await client.command({ query: statement.replaceAll('{database}', DATABASE) });
    const endMs = Math.floor(Date.now() / 1000) * 1000;
    const t0 = performance.now();
    await fill(client, endMs);
    const fillMs = performance.now() - t0;
    await settle(client);
    const stored = { attempts: await scalar(client, `SELECT count() FROM ${DATABASE}.deliveries`), events: await scalar(client, `SELECT count() FROM ${DATABASE}.events`) };
    say(`filled ${stored.attempts.toLocaleString('en-US')} attempts and ${stored.events.toLocaleString('en-US')} events in ${(fillMs / 1000).toFixed(1)} s`);

    const all = cases(endMs);
    const times = new Map<string, { with: number[]; without: number[]; rows: number }>(all.map((c) => [c.name, { with: [], without: [], rows: 0 }]));
    const scans: number[] = [];
    let matches = 0;
    // round 0 warms caches and is not counted; within a round, with and without alternate first
    for (let r = 0; r <= reps; r++) {
      const s = await scan(client);
      matches = s.matches;
      if (r > 0) scans.push(s.ms);
      for (const c of all) {
        const t = times.get(c.name)!;
        for (const indexed of r % 2 === 0 ? [true, false] : [false, true]) {
          const got = await runCase(indexed ? client : without, c);
          t.rows = got.rows;
          if (r > 0) (indexed ? t.with : t.without).push(got.ms);
        }
      }
      say(`round ${r} of ${reps} done`);
    }
    const results = Object.fromEntries(all.map((c) => {
      const t = times.get(c.name)!;
      return [c.name, { with_indexes: timing(t.with), without_indexes: timing(t.without), rows: t.rows }];
    }));
    for (const [name, v] of Object.entries(results)) say(`${name}: median ${v.with_indexes.median_ms} ms (without skipping indexes ${v.without_indexes.median_ms} ms), ${v.rows} rows on the last page`);
    const baseline = { ...timing(scans), matches };
    say(`full scan: median ${baseline.median_ms} ms (${matches} matches)`);
    const sizes = await (await client.query({ query: `SELECT table, name, type_full, data_compressed_bytes AS bytes FROM system.data_skipping_indices WHERE database = '${DATABASE}'`, format: 'JSONEachRow' })).json();
    const result = { rows: stored.attempts, events: stored.events, tenants, destinations, days, reps, fill_s: round(fillMs / 1000, 1), baseline_scan: baseline, searches: results, index_sizes: sizes };
    writeFileSync(process.env.SEARCH_RESULTS!, JSON.stringify(result, null, 2));
  } finally {
    await client.close().catch(() => undefined);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
