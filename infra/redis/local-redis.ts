import { mkdirSync } from 'node:fs';
import path from 'node:path';
import net from 'node:net';
import { spawnTethered } from '../process/child';
import { freePort, waitFor } from '../process/ports';
import { requireRedisServer } from '../prerequisites';

export interface LocalRedis {
  url: string;
  /** Process group of the redis-server, for reading its CPU time. */
  pid: number;
  stop(): Promise<void>;
}

/**
 * A redis-server on a free loopback port with its append-only file under `dataDir`, so
 * idempotency records survive a restart. Losing it never loses an event.
 */
export async function startLocalRedis(dataDir: string, options: { port?: number } = {}): Promise<LocalRedis> {
  requireRedisServer();
  mkdirSync(dataDir, { recursive: true });
  const port = options.port ?? (await freePort());
  const child = spawnTethered(
    'redis',
    'redis-server',
    ['--bind', '127.0.0.1', '--port', String(port), '--dir', dataDir, '--appendonly', 'yes', '--appendfsync', 'everysec', '--save', '', '--protected-mode', 'yes', '--logfile', path.join(dataDir, 'redis.log')],
    { logFile: path.join(dataDir, 'stdout.log') },
  );
  const url = `redis://127.0.0.1:${port}`;
  await waitFor('local Redis', () => ping(port), 20_000, 100);
  return { url, pid: child.pid, stop: () => child.stop(5_000) };
}

/** One PING over a plain socket: no client library, nothing left behind when it fails. */
function ping(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const fail = (err: Error) => {
      socket.destroy();
      reject(err);
    };
    socket.setTimeout(1_000, () => fail(new Error('no answer to PING')));
    socket.once('error', fail);
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => {
      socket.destroy();
      if (data.toString().startsWith('+PONG')) resolve();
      else reject(new Error(`unexpected answer to PING: ${data.toString().trim()}`));
    });
  });
}
