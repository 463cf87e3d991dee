import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { entryPointArgs } from '../../core/paths';
import { spawnTethered } from '../process/child';
import { freePort, waitFor } from '../process/ports';

export interface LocalClickHouse {
  url: string;
  /** Process group of the server, for reading its CPU time. */
  pid: number;
  stop(): Promise<void>;
}

export interface LocalClickHouseOptions {
  /** Default: a free port. A fixed port lets a restarted server be found where it was. */
  port?: number;
  /** Default `default`. */
  user?: string;
  /** Default empty. */
  password?: string;
}

const START_TIMEOUT_MS = 30_000;

/**
 * The ClickHouse HTTP interface over the embedded engine, as its own process on a loopback
 * port, so that several processes of the service share one ClickHouse. Tables and rows live
 * under `dataDir` and survive a stop and a start on the same directory.
 */
export async function startLocalClickHouse(dataDir: string, options: LocalClickHouseOptions = {}): Promise<LocalClickHouse> {
  mkdirSync(dataDir, { recursive: true });
  const port = options.port ?? (await freePort());
  const logFile = path.join(dataDir, 'server.log');
  const child = spawnTethered('clickhouse', process.execPath, [...entryPointArgs('infra/clickhouse/server-main.ts'), '--data-dir', path.join(dataDir, 'data'), '--port', String(port)], {
    logFile,
    // the password goes by environment, not argv, which any local user can read
    env: { ...process.env, CLICKHOUSE_SERVER_USER: options.user ?? 'default', CLICKHOUSE_SERVER_PASSWORD: options.password ?? '' },
  });
  const url = `http://127.0.0.1:${port}`;
  const ready = waitFor(
    'local ClickHouse',
    async () => {
      const res = await fetch(`${url}/ping`, { signal: AbortSignal.timeout(1_000) });
      const text = await res.text();
      if (text !== 'Ok.\n') throw new Error(`unexpected answer to /ping: ${res.status} ${text.trim()}`);
    },
    START_TIMEOUT_MS,
    100,
  );
  // an early exit (port taken, data dir locked) fails at once, with the reason from its log
  const died = child.exited.then(({ code, signal }) => {
    throw new Error(`local ClickHouse exited (${signal ?? code}) before answering: ${tail(logFile)}`);
  });
  try {
    await Promise.race([ready, died]);
  } catch (err) {
    await child.stop(2_000);
    throw err;
  } finally {
    died.catch(() => undefined);
    ready.catch(() => undefined);
  }
  return { url, pid: child.pid, stop: () => child.stop(15_000) };
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-5).join(' | ');
  } catch {
    return '(no log)';
  }
}
