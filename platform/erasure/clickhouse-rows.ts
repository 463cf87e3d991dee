import type { ClickHouseClient } from '@clickhouse/client';

/**
 * The evidence log's tables stay: leaves are hashes and ids, nodes and checkpoints hashes, and
 * every proof handed out must go on verifying.
 */
const EVIDENCE_TABLES = new Set(['evidence_leaves', 'evidence_nodes', 'evidence_checkpoints']);

/** Longest wait for the parts a mutation replaced to leave the disk (migration 015 sets their lifetime to 10 s). */
export const PARTS_GONE_WITHIN_MS = 60_000;
const POLL_MS = 500;

export interface ClickHouseTarget {
  client: ClickHouseClient;
  database: string;
}

async function rows<T>(ch: ClickHouseTarget, query: string, params: Record<string, unknown> = {}): Promise<T[]> {
  const rs = await ch.client.query({ query, query_params: { db: ch.database, ...params }, format: 'JSONEachRow' });
  return rs.json<T>();
}

/** Every table of the database with a `tenant_id` column, but the evidence tables: found, not listed, so a table added later is not missed. */
export async function tenantTables(ch: ClickHouseTarget): Promise<string[]> {
  const found = await rows<{ table: string }>(
    ch,
    `SELECT c.table AS table FROM system.columns AS c INNER JOIN system.tables AS t ON t.database = c.database AND t.name = c.table
     WHERE c.database = {db:String} AND c.name = 'tenant_id' AND t.engine LIKE '%MergeTree' ORDER BY table`,
  );
  return found.map((r) => r.table).filter((t) => !EVIDENCE_TABLES.has(t));
}

const quoted = (name: string) => `\`${name.replaceAll('`', '``')}\``;

/** Rows of the tenant per table. */
export async function tenantRowCounts(ch: ClickHouseTarget, tenantId: string, tables: string[]): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of tables) {
    const [r] = await rows<{ n: string }>(ch, `SELECT count() AS n FROM ${ch.database}.${quoted(table)} WHERE tenant_id = {t:String}`, { t: tenantId });
    counts[table] = Number(r?.n ?? 0);
  }
  return counts;
}

/** Which of `ids` are deliveries, or dead letters, of the tenant (what Redis keys are named by). */
export async function ownedIds(ch: ClickHouseTarget, tenantId: string, table: 'deliveries' | 'dead_letters', ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const column = table === 'deliveries' ? 'delivery_id' : 'id';
  const found = await rows<{ id: string }>(ch, `SELECT DISTINCT ${column} AS id FROM ${ch.database}.${table} WHERE tenant_id = {t:String} AND ${column} IN {ids:Array(String)}`, { t: tenantId, ids });
  return new Set(found.map((r) => r.id));
}

/** Replaced parts kept at most this long (migration 015 sets it; a table added later gets it here). */
export const OLD_PARTS_LIFETIME_S = 10;

async function shortenPartLifetimes(ch: ClickHouseTarget, tables: string[]): Promise<void> {
  const defs = await rows<{ name: string; create_table_query: string }>(ch, `SELECT name, create_table_query FROM system.tables WHERE database = {db:String} AND name IN {tables:Array(String)}`, { tables });
  for (const d of defs) {
    if (/\bold_parts_lifetime = \d+\b/.test(d.create_table_query)) continue;
    await ch.client.command({ query: `ALTER TABLE ${ch.database}.${quoted(d.name)} MODIFY SETTING old_parts_lifetime = ${OLD_PARTS_LIFETIME_S}` });
  }
}

/** The parts on disk of the tables, active or not, by table. */
async function partsOf(ch: ClickHouseTarget, tables: string[]): Promise<{ table: string; name: string; active: number }[]> {
  return rows(ch, `SELECT table, name, active FROM system.parts WHERE database = {db:String} AND table IN {tables:Array(String)}`, { tables });
}

/**
 * Deletes the tenant's rows from `tables`, then waits until the parts that held them are off the
 * disk. A mutation rewrites each part without the rows and keeps the old part, inactive, for
 * the table's `old_parts_lifetime` ({@link OLD_PARTS_LIFETIME_S}, migration 015); the cleanup that removes it is
 * then started by `SYSTEM START CLEANUP` rather than left to the engine's idle back-off, which
 * can wait minutes. Every part present before the mutation is waited for, at most
 * {@link PARTS_GONE_WITHIN_MS}: past it the erasure fails, and is resumed by DELETE again.
 */
export async function eraseClickHouseRows(ch: ClickHouseTarget, tenantId: string, tables: string[], now = () => Date.now()): Promise<{ rows: Record<string, number>; parts: number }> {
  const before = await tenantRowCounts(ch, tenantId, tables);
  const touched = tables.filter((t) => (before[t] ?? 0) > 0);
  if (touched.length === 0) return { rows: before, parts: 0 };
  await shortenPartLifetimes(ch, touched);
  const old = new Set((await partsOf(ch, touched)).map((p) => `${p.table}/${p.name}`));
  for (const table of touched) {
    await ch.client.command({ query: `ALTER TABLE ${ch.database}.${quoted(table)} DELETE WHERE tenant_id = {t:String}`, query_params: { t: tenantId }, clickhouse_settings: { mutations_sync: '2' } });
  }
  const deadline = now() + PARTS_GONE_WITHIN_MS;
  for (;;) {
    const left = (await partsOf(ch, touched)).filter((p) => old.has(`${p.table}/${p.name}`) && p.active === 0);
    if (left.length === 0) break;
    if (now() > deadline) throw new Error(`the parts that held the tenant's rows are still on disk after ${PARTS_GONE_WITHIN_MS} ms (${left.map((p) => `${p.table}/${p.name}`).join(', ')})`);
    await new Promise((r) => setTimeout(r, POLL_MS));
    for (const table of new Set(left.map((p) => p.table))) await ch.client.command({ query: `SYSTEM START CLEANUP ${ch.database}.${quoted(table)}` });
  }
  return { rows: before, parts: old.size };
}

/**
 * The system log tables that keep query texts (query_log and its kin), where a copy of a body
 * would sit if one were sent inline in a query. The service sends rows in the request body
 * (@clickhouse/client insert) and search terms as query parameters, never in the text; this says
 * which of those tables exist, for the record of the erasure.
 */
export async function queryLogTables(ch: ClickHouseTarget): Promise<string[]> {
  const found = await rows<{ name: string }>(ch, `SELECT name FROM system.tables WHERE database = 'system' AND name LIKE '%\\_log' ORDER BY name`);
  return found.map((r) => r.name);
}
