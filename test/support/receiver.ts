import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  at: number;
}

/** An answer: its status, and how long to hold it back (to keep requests in flight at once). */
export interface Answer {
  status: number;
  headers?: Record<string, string>;
  delayMs?: number;
  /** The response body (default `ok`). */
  body?: string | Buffer;
}

export interface Receiver {
  url: string;
  requests: ReceivedRequest[];
  /** Requests open right now (arrived, not answered), and the most there ever were at once. */
  inFlight(): number;
  maxInFlight(): number;
  /** Answers the next requests with this status (default 200). */
  respondWith(status: number, headers?: Record<string, string>): void;
  /** Decides each answer from the request and how many came before it; `hang` never answers. */
  respondBy(fn: (req: ReceivedRequest, index: number) => Answer | 'hang'): void;
  waitForRequests(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

/** A real HTTP server on loopback that records what the delivery stage sends it. */
export async function startReceiver(): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  let status = 200;
  let extraHeaders: Record<string, string> = {};
  let decide: ((req: ReceivedRequest, index: number) => Answer | 'hang') | undefined;
  const waiters: { count: number; resolve: () => void }[] = [];
  let open = 0;
  let maxOpen = 0;
  // answers held back (delayMs), cleared on close: a timer left behind keeps the test process alive
  const held = new Set<NodeJS.Timeout>();
  const server = http.createServer((req, res) => {
    // open from the request's arrival until its answer is sent or the client goes away
    open++;
    maxOpen = Math.max(maxOpen, open);
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      open--;
    };
    res.once('finish', close);
    res.once('close', close);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks), at: Date.now() };
      requests.push(received);
      const answer: Answer | 'hang' = decide ? decide(received, requests.length - 1) : { status, headers: extraHeaders };
      if (answer !== 'hang') {
        const send = () => res.writeHead(answer.status, answer.headers ?? {}).end(answer.body ?? 'ok');
        if (answer.delayMs) {
          const timer = setTimeout(() => {
            held.delete(timer);
            send();
          }, answer.delayMs);
          held.add(timer);
        } else send();
      }
      for (const w of waiters.filter((w) => requests.length >= w.count)) w.resolve();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    requests,
    inFlight: () => open,
    maxInFlight: () => maxOpen,
    respondBy(fn) {
      decide = fn;
    },
    respondWith(s, headers = {}) {
      decide = undefined;
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
        for (const timer of held) clearTimeout(timer);
        held.clear();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Receivers a test file starts as it goes, all closed together in afterAll. */
export function receiverPool(): { next(): Promise<Receiver>; closeAll(): Promise<void> } {
  const started: Receiver[] = [];
  return {
    async next() {
      const r = await startReceiver();
      started.push(r);
      return r;
    },
    closeAll: async () => {
      await Promise.all(started.map((r) => r.close()));
    },
  };
}
