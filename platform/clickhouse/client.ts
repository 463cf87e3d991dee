import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { createClient, type ClickHouseClient } from '@clickhouse/client';

export interface ClickHouseSettings {
  /** Unset: the embedded engine (chdb) with its data under `dataDir`. */
  url: string | undefined;
  user: string;
  password: string;
  dataDir: string;
}

/**
 * One @clickhouse/client for both a ClickHouse server and the embedded engine: with no URL,
 * chdb plugs in as the client's connection, so the SQL and the code are the same. The
 * embedded engine allows one data directory per process.
 */
export function openClickHouse(settings: ClickHouseSettings): ClickHouseClient {
  if (settings.url) {
    return createClient({
      url: settings.url,
      username: settings.user,
      password: settings.password,
      request_timeout: 30_000,
      clickhouse_settings: { date_time_input_format: 'best_effort' },
    });
  }
  const dir = path.join(settings.dataDir, 'clickhouse');
  mkdirSync(dir, { recursive: true });
  // loaded lazily: a deployment with a ClickHouse server never loads the native engine
  const { createChdbConnection } = require('chdb/connection') as typeof import('chdb/connection');
  return createClient({ connection: createChdbConnection({ path: dir }) } as unknown as Parameters<typeof createClient>[0]);
}
