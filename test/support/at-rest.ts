import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Redis } from 'ioredis';
import type { TestService } from './service';

/**
 * Searches of every copy of the data a run leaves at rest: files under directories (Kafka log
 * segments, ClickHouse parts, Redis dumps), every String column of the run's ClickHouse database,
 * and every key and value under the run's prefix in Redis.
 */

export const hex = (n = 12) => randomBytes(n).toString('hex');

/** Every regular file under `dir`, recursively. */
export function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(p));
    else if (entry.isFile() || lstatSync(p).isFile()) out.push(p);
  }
  return out;
}

/** Which of `needles` occur, byte for byte, in any file under the directories. */
export function foundInFiles(dirs: string[], needles: string[]): { found: Map<string, string>; files: number } {
  return foundInFileList(dirs.flatMap(filesUnder), needles);
}

/** Which of `needles` occur, byte for byte, in any of the files: text as UTF-8, named by itself; bytes named by their latin1 reading. */
export function foundInFileList(list: string[], needles: (string | Buffer)[]): { found: Map<string, string>; files: number } {
  const found = new Map<string, string>();
  const bufs = needles.map((n) => (typeof n === 'string' ? ([n, Buffer.from(n, 'utf8')] as const) : ([n.toString('latin1'), n] as const)));
  let files = 0;
  for (const file of list) {
    let content: Buffer;
    try {
      content = readFileSync(file);
    } catch {
      continue; // a file that vanished (segment roll, temp file) between listing and reading
    }
    files++;
    for (const [n, b] of bufs) if (!found.has(n) && content.includes(b)) found.set(n, file);
  }
  return { found, files };
}

/** Which of `needles` occur in any String-typed column (plain, nullable, arrays, maps) of the database. */
export async function foundInClickHouse(svc: TestService, needles: string[]): Promise<{ found: Set<string>; columns: number }> {
  const db = svc.config.clickhouseDatabase;
  const rs = await svc.clickhouse.query({
    query: `SELECT table, name FROM system.columns WHERE database = {db:String} AND type LIKE '%String%' AND default_kind NOT IN ('EPHEMERAL', 'ALIAS')`,
    query_params: { db },
    format: 'JSONEachRow',
  });
  const columns = await rs.json<{ table: string; name: string }>();
  const found = new Set<string>();
  for (const c of columns) {
    const r = await svc.clickhouse.query({
      query: `SELECT groupUniqArrayArray(arrayFilter(s -> position(toString(\`${c.name}\`), s) > 0, {needles:Array(String)})) AS hits FROM ${db}.\`${c.table}\``,
      query_params: { needles },
      format: 'JSONEachRow',
    });
    for (const row of await r.json<{ hits: string[] }>()) for (const h of row.hits) found.add(h);
  }
  return { found, columns: columns.length };
}

/** The text with every base64 run in it decoded as well: a value stored as base64 is still stored in clear. */
export function withBase64Decoded(text: string): string {
  const runs = text.match(/[A-Za-z0-9+/]{16,}={0,2}/g) ?? [];
  return [text, ...runs.map((r) => Buffer.from(r, 'base64').toString('latin1'))].join('\n');
}

/** Which of `needles` occur in a key or a value under the prefix in Redis. */
export async function foundInRedis(redis: Redis, prefix: string, needles: string[]): Promise<{ found: Set<string>; keys: string[] }> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  const found = new Set<string>();
  for (const key of keys) {
    const type = await redis.type(key);
    let text = key;
    if (type === 'string') text += `\n${(await redis.get(key)) ?? ''}`;
    else if (type === 'hash') text += `\n${JSON.stringify(await redis.hgetall(key))}`;
    else text += `\n${((await redis.dumpBuffer(key)) ?? Buffer.alloc(0)).toString('latin1')}`;
    const all = withBase64Decoded(text);
    for (const n of needles) if (all.includes(n)) found.add(n);
  }
  return { found, keys };
}
