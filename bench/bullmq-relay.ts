/**
 * The peer the service is compared to: the webhook relay a Node team would otherwise write on
 * BullMQ. A bare node:http handler reads the body, adds a job (Queue.add) and answers 202 once
 * Redis has it; a Worker in the same process POSTs each job's body to the target with undici,
 * and BullMQ retries a failed POST (attempts with exponential backoff). Completed jobs are
 * removed so that Redis does not grow. No validation, filtering, routing, signing, outcome
 * records or delivery log: the least such a relay does.
 *
 * Environment: RELAY_REDIS_URL, RELAY_TARGET (the URL every job is POSTed to),
 * RELAY_CONCURRENCY (jobs the Worker runs at once, default 32). It prints
 * `bullmq relay listening <url>` once both the HTTP server and the Worker are ready.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Queue, Worker, type ConnectionOptions, type Job } from 'bullmq';
import { Pool } from 'undici';

const env = (name: string) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};

interface RelayJob {
  body: string;
  contentType: string;
}

const QUEUE = 'webhooks';
/** Tries per job: the first POST and four retries, 1 s, 2 s, 4 s and 8 s after a failure. */
const ATTEMPTS = 5;
const BACKOFF_MS = 1_000;

async function main(): Promise<void> {
  const redis = new URL(env('RELAY_REDIS_URL'));
  const connection: ConnectionOptions = { host: redis.hostname, port: Number(redis.port), maxRetriesPerRequest: null };
  const target = new URL(env('RELAY_TARGET'));
  const concurrency = Number(process.env.RELAY_CONCURRENCY ?? 32);
  const targetPool = new Pool(target.origin, { connections: concurrency, pipelining: 1 });

  const queue = new Queue<RelayJob>(QUEUE, {
    connection,
    defaultJobOptions: { attempts: ATTEMPTS, backoff: { type: 'exponential', delay: BACKOFF_MS }, removeOnComplete: true, removeOnFail: 10_000 },
  });
  const worker = new Worker<RelayJob>(
    QUEUE,
    async (job: Job<RelayJob>) => {
      const res = await targetPool.request({ path: target.pathname, method: 'POST', headers: { 'content-type': job.data.contentType }, body: job.data.body });
      await res.body.dump();
      // a thrown error makes BullMQ schedule the next attempt
      if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`target answered ${res.statusCode}`);
    },
    { connection, concurrency },
  );
  worker.on('error', (err) => process.stderr.write(`worker error: ${err.message}\n`));
  await Promise.all([queue.waitUntilReady(), worker.waitUntilReady()]);

  const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    if (req.method !== 'POST') {
      req.resume();
      res.writeHead(405).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const data: RelayJob = { body: Buffer.concat(chunks).toString('utf8'), contentType: req.headers['content-type'] ?? 'application/json' };
      queue.add('deliver', data).then(
        (job) => {
          const answer = JSON.stringify({ id: job.id, status: 'queued' });
          res.writeHead(202, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(answer) }).end(answer);
        },
        (err: unknown) => {
          process.stderr.write(`add failed: ${err instanceof Error ? err.message : String(err)}\n`);
          res.writeHead(503).end();
        },
      );
    });
  });
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo;
    process.stdout.write(`bullmq relay listening http://127.0.0.1:${port} (worker concurrency ${concurrency})\n`);
  });

  const stop = async () => {
    server.closeAllConnections();
    server.close();
    await worker.close().catch(() => undefined);
    await queue.close().catch(() => undefined);
    await targetPool.close().catch(() => undefined);
    process.exit(0);
  };
  for (const s of ['SIGTERM', 'SIGINT'] as const) process.once(s, () => void stop());
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
