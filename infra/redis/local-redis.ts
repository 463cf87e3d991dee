import { existsSync, mkdirSync, readFileSync } from 'node:fs';
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
  // a free port can be taken by someone else before redis-server binds it: then another one
  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await freePort());
    try {
      return await startOn(dataDir, port);
    } catch (err) {
      if (options.port !== undefined || !(err instanceof RedisExited) || attempt >= 3) throw err;
    }
  }
}

/** redis-server ended before it answered (e.g. its port was taken meanwhile). */
class RedisExited extends Error {}

async function startOn(dataDir: string, port: number): Promise<LocalRedis> {
  const logFile = path.join(dataDir, 'redis.log');
  const child = spawnTethered(
    'redis',
    'redis-server',
    ['--bind', '127.0.0.1', '--port', String(port), '--dir', dataDir, '--appendonly', 'yes', '--appendfsync', 'everysec', '--save', '', '--protected-mode', 'yes', '--logfile', logFile],
    { logFile: path.join(dataDir, 'stdout.log') },
  );
  const url = `redis://127.0.0.1:${port}`;
  // an exit before the first answer is reported at once, with the end of its log, not after the timeout
  const ended = child.exited.then(({ code, signal }) => {
    const tail = existsSync(logFile) ? readFileSync(logFile, 'utf8').trim().split('\n').slice(-3).join(' | ') : '';
    throw new RedisExited(`local Redis on port ${port} exited (${signal ?? `code ${code}`}) before answering${tail ? `: ${tail}` : ''}`);
  });
  ended.catch(() => undefined);
  let ready = false;
  try {
    await Promise.race([waitFor('local Redis', () => ping(port), 20_000, 100), ended]);
    ready = true;
  } finally {
    if (!ready) await child.stop(1_000);
  }
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
