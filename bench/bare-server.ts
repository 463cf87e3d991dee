/**
 * The ingest baseline: a bare node:http server that does the least a Hook URL must do (read
 * the whole body, answer 202 with a small JSON document), with the service's keep-alive.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

let n = 0;
const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.stringify({ event_id: `evt_${++n}`, bytes: Buffer.concat(chunks).length, status: 'received' });
    res.writeHead(202, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }).end(body);
  });
});

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`bare server listening http://127.0.0.1:${port}\n`);
});
for (const s of ['SIGTERM', 'SIGINT'] as const) {
  process.on(s, () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}
