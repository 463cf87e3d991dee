/**
 * The benchmark's webhook receiver, a process of its own so that its CPU is counted apart
 * from the service's and the load generator's. It answers every request 200 at once, and
 * counts the first arrival of each tagged body (`{"r": run, "s": seq, "t": sent at}`) of
 * the current run: deliveries are at-least-once, so a redelivery counts once.
 *
 *   GET  /__bench/stats          counts of the current run
 *   GET  /__bench/detail         arrival times (epoch ms) and send -> arrival latencies (ms)
 *   POST /__bench/reset?run=ID   starts counting for run ID
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const MAX_SAMPLES = 2_000_000;
const now = () => performance.timeOrigin + performance.now();

let run = '';
let seen = new Set<number>();
let total = 0;
let duplicates = 0;
let untagged = 0;
let arrivals: number[] = [];
let latencies: number[] = [];

function record(body: Buffer): void {
  total++;
  let tag: { r?: unknown; s?: unknown; t?: unknown };
  try {
    tag = JSON.parse(body.toString('utf8')) as typeof tag;
  } catch {
    untagged++;
    return;
  }
  if (tag.r !== run || typeof tag.s !== 'number') {
    untagged++;
    return;
  }
  if (seen.has(tag.s)) {
    duplicates++;
    return;
  }
  seen.add(tag.s);
  const at = now();
  if (arrivals.length < MAX_SAMPLES) {
    arrivals.push(at);
    if (typeof tag.t === 'number') latencies.push(at - tag.t);
  }
}

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  const url = req.url ?? '/';
  if (url.startsWith('/__bench/')) {
    const u = new URL(url, 'http://x');
    let answer: unknown;
    if (u.pathname === '/__bench/reset') {
      run = u.searchParams.get('run') ?? '';
      seen = new Set();
      total = duplicates = untagged = 0;
      arrivals = [];
      latencies = [];
      answer = { run };
    } else if (u.pathname === '/__bench/stats') {
      answer = { run, distinct: seen.size, total, duplicates, untagged };
    } else {
      answer = { run, arrivals, latencies };
    }
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    record(Buffer.concat(chunks));
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  });
});

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`receiver listening http://127.0.0.1:${port}\n`);
});
for (const s of ['SIGTERM', 'SIGINT'] as const) {
  process.on(s, () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}
