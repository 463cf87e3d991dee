import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { ClickHouseClient } from '@clickhouse/client';
import { sourceDir } from '../../core/paths';

const MIGRATIONS_DIR = path.join(sourceDir(__dirname), 'migrations');

/** Statements of one migration file, with `{database}` filled in. Comments are dropped. */
function statements(file: string, database: string): string[] {
  return readFileSync(path.join(MIGRATIONS_DIR, file), 'utf8')
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('--'))
    .join('\n')
    .split(';')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => s.replaceAll('{database}', database));
}

/**
 * Applies the migrations in file-name order. Each statement is idempotent (IF NOT EXISTS),
 * and applied versions are recorded, so running this at every start is safe.
 */
export async function migrate(client: ClickHouseClient, database: string): Promise<string[]> {
  await client.command({ query: `CREATE DATABASE IF NOT EXISTS ${database}` });
  await client.command({
    query: `CREATE TABLE IF NOT EXISTS ${database}.schema_migrations (version String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3)) ENGINE = ReplacingMergeTree ORDER BY version`,
  });
  const rs = await client.query({ query: `SELECT version FROM ${database}.schema_migrations FINAL`, format: 'JSONEachRow' });
  const applied = new Set((await rs.json<{ version: string }>()).map((r) => r.version));
  const files = readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.sql')).sort();
  const ran: string[] = [];
  for (const file of files) {
    if (applied.has(file)) continue;
    for (const query of statements(file, database)) await client.command({ query });
    await client.insert({ table: `${database}.schema_migrations`, values: [{ version: file }], format: 'JSONEachRow' });
    ran.push(file);
  }
  return ran;
}
