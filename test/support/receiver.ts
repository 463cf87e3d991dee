import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  at: number;
}

export interface Receiver {
  url: string;
  requests: ReceivedRequest[];
  /** Answers the next requests with this status (default 200). */
  respondWith(status: number, headers?: Record<string, string>): void;
  waitForRequests(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

/** A real HTTP server on loopback that records what the delivery stage sends it. */
export async function startReceiver(): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  let status = 200;
  let extraHeaders: Record<string, string> = {};
  const waiters: { count: number; resolve: () => void }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks), at: Date.now() });
      res.writeHead(status, extraHeaders).end('ok');
      for (const w of waiters.filter((w) => requests.length >= w.count)) w.resolve();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    requests,
    respondWith(s, headers = {}) {
      status = s;
      extraHeaders = headers;
    },
    waitForRequests(count, timeoutMs = 30_000) {
      if (requests.length >= count) return Promise.resolve(requests);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`receiver got ${requests.length} of ${count} requests within ${timeoutMs} ms`)), timeoutMs);
        waiters.push({
          count,
          resolve: () => {
            clearTimeout(timer);
            resolve(requests);
          },
        });
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
