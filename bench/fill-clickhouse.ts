/**
 * Fills the deliveries table of an embedded ClickHouse data dir with synthetic attempts (the
 * rows the sink writes, through the same @clickhouse/client), then measures the bare client
 * on them: insert rows/s, a read of one delivery by id, and the deliveries list query the API
 * runs. A process of its own because the embedded engine allows one process per data dir:
 * it exits before the service opens the same dir.
 *
 * Environment: FILL_DATA_DIR, FILL_DATABASE, FILL_ROWS, FILL_BATCH_ROWS, FILL_TENANT (the
 * tenant queried), FILL_TENANTS (rows spread round-robin over this many tenants), FILL_SAMPLES
 * (reads per round), FILL_ROUNDS (a p99 per round), FILL_END (epoch ms the attempts end at;
 * default now) and FILL_SINK_ROWS=1: insert every row the sink makes of an attempt (its log line
 * and `delivered` transition besides the attempt, `outcomeRows`), in the sink's table order.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { openClickHouse } from '../platform/clickhouse/client';
import { migrate } from '../platform/clickhouse/migrate';
import { deliveryRow, outcomeRows } from '../pipeline/sink/rows';
import { INSERT_COLUMNS, SINK_TABLES } from '../pipeline/sink/stage';
import { listDeliveriesSql } from '../platform/clickhouse/deliveries-list';
import { outcomeGenerator } from './lib/synthetic';
import { quantile, round, sleep, summary } from './lib/stats';

async function count(client: ClickHouseClient, query: string): Promise<number> {
  const rs = await client.query({ query, format: 'JSONEachRow' });
  return Number((await rs.json<{ n: string | number }>())[0]?.n ?? 0);
}

async function main(): Promise<void> {
  const dataDir = process.env.FILL_DATA_DIR!;
  const database = process.env.FILL_DATABASE ?? 'hookline';
  const rows = Number(process.env.FILL_ROWS ?? 10_000_000);
  const batchRows = Number(process.env.FILL_BATCH_ROWS ?? 200_000);
  const tenant = process.env.FILL_TENANT ?? 'demo';
  const tenantCount = Math.max(1, Number(process.env.FILL_TENANTS ?? 1));
  const samples = Number(process.env.FILL_SAMPLES ?? 100);
  const rounds = Math.max(1, Number(process.env.FILL_ROUNDS ?? 1));
  const tenants = [tenant, ...Array.from({ length: tenantCount - 1 }, (_, k) => `tenant-${k + 1}`)];
  // FILL_END: the time the attempts end at, so that another process can make the same rows
  const outcome = outcomeGenerator(rows, tenants, Number(process.env.FILL_END ?? Date.now()));

  const client = openClickHouse({ url: undefined, user: 'default', password: '', dataDir });
  try {
    await migrate(client, database);
    const table = `${database}.deliveries`;
    const t0 = performance.now();
    let insertMs = 0;
    const sinkRows = process.env.FILL_SINK_ROWS === '1';
    for (let from = 0; from < rows; from += batchRows) {
      const end = Math.min(rows, from + batchRows);
      const byTable = new Map<string, Record<string, unknown>[]>([['deliveries', []]]);
      for (let i = from; i < end; i++) {
        const o = outcome(i);
        if (!sinkRows) {
          byTable.get('deliveries')!.push(deliveryRow(o));
          continue;
        }
        for (const [t, row] of Object.entries(outcomeRows(o))) {
          if (!byTable.has(t)) byTable.set(t, []);
          byTable.get(t)!.push(row);
        }
      }
      const t = performance.now();
      for (const name of SINK_TABLES) {
        const values = byTable.get(name);
        if (values) await client.insert({ table: `${database}.${name}`, values, format: 'JSONEachRow', columns: INSERT_COLUMNS[name] as [string, ...string[]] | undefined });
      }
      insertMs += performance.now() - t;
      if (((from / batchRows) | 0) % 10 === 9) process.stdout.write(`filled ${end} of ${rows} rows\n`);
    }
    const fillMs = performance.now() - t0;

    // background merges run in this process: let them settle so the service does not inherit them
    const settleStart = performance.now();
    let quiet = 0;
    while (performance.now() - settleStart < 180_000 && quiet < 3) {
      const merging = await count(client, `SELECT count() AS n FROM system.merges WHERE database = '${database}'`);
      quiet = merging === 0 ? quiet + 1 : 0;
      await sleep(1_000);
    }
    const settleMs = performance.now() - settleStart;
    const parts = await count(client, `SELECT count() AS n FROM system.parts WHERE database = '${database}' AND table = 'deliveries' AND active`);
    const stored = await count(client, `SELECT count() AS n FROM ${table}`);

    // bare reads: one delivery by id, and the API's own list query
    const point: number[] = [];
    const list: number[] = [];
    const listRounds: number[] = [];
    const probe = outcome;
    for (let k = 0; k < Math.min(5, samples); k++) {
      await (await client.query({ ...listDeliveriesSql(database, { tenant, status: 'failed', before: null, destinationIds: null }, 101), format: 'JSONEachRow' })).json();
    }
    for (let k = 0; k < samples * rounds; k++) {
      const i = Math.floor(Math.random() * rows);
      const o = probe(i - (i % tenantCount));
      let t = performance.now();
      const rs = await client.query({
        query: `SELECT delivery_id, attempt_number, status FROM ${table} WHERE tenant_id = {tenant:String} AND delivery_id = {id:String}`,
        query_params: { tenant: o.tenant_id, id: o.delivery_id },
        format: 'JSONEachRow',
      });
      const found = await rs.json();
      point.push(performance.now() - t);
      if (found.length !== 1) throw new Error(`point read of ${o.delivery_id} found ${found.length} rows`);
      t = performance.now();
      const page = await (await client.query({ ...listDeliveriesSql(database, { tenant, status: 'failed', before: null, destinationIds: null }, 101), format: 'JSONEachRow' })).json();
      list.push(performance.now() - t);
      if (page.length === 0) throw new Error('the list query found no failed attempt');
      if ((k + 1) % samples === 0) listRounds.push(round(quantile(list.slice(-samples), 0.99)));
    }
    const result = {
      rows: stored,
      tenants: tenantCount,
      fill_ms: Math.round(fillMs),
      insert_ms: Math.round(insertMs),
      insert_rows_per_s: Math.round((rows / insertMs) * 1000),
      settle_ms: Math.round(settleMs),
      active_parts: parts,
      point_read_ms: summary(point),
      list_query_ms: summary(list),
      list_rounds_p99_ms: listRounds,
    };
    process.stdout.write(`fill result ${JSON.stringify(result)}\n`);
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
