import { Pool } from 'undici';
import { sleep } from './stats';

/** Epoch milliseconds with sub-millisecond precision, comparable across processes. */
export const epochMs = () => performance.timeOrigin + performance.now();

const PAD = 'x'.repeat(2048);

/**
 * A JSON body of exactly `size` bytes tagged with the run, a sequence number and the time it
 * was (or was scheduled to be) sent, which the receiver reads back.
 */
export function taggedBody(run: string, seq: number, sentAt: number, size = 1024): string {
  const head = `{"r":"${run}","s":${seq},"t":${sentAt.toFixed(3)},"pad":"`;
  return `${head}${PAD.slice(0, Math.max(0, size - head.length - 2))}"}`;
}

/** A keep-alive connection pool without pipelining: one request at a time per connection. */
export function pool(origin: string, connections: number): Pool {
  return new Pool(origin, { connections, pipelining: 1, keepAliveTimeout: 60_000, keepAliveMaxTimeout: 600_000 });
}

export interface PostResult {
  ok: boolean;
  status: number;
}

export async function post(p: Pool, path: string, body: string, expect: number): Promise<PostResult> {
  try {
    const res = await p.request({ path, method: 'POST', headers: { 'content-type': 'application/json' }, body });
    await res.body.dump();
    return { ok: res.statusCode === expect, status: res.statusCode };
  } catch {
    return { ok: false, status: 0 };
  }
}

export interface ClosedLoopResult {
  /** Accepted requests completed inside the measured window, per second. */
  rate: number;
  okInWindow: number;
  /** Accepted over the whole run, warm-up included. */
  okTotal: number;
  errors: number;
  statuses: Record<string, number>;
}

/**
 * `concurrency` workers, each sending its next request when the previous one is answered,
 * for `warmupMs + measureMs`; only answers completed inside the measured window count.
 * `gate` (when given) holds a worker back, e.g. while too many events are in flight.
 */
export async function closedLoop(opts: {
  pool: Pool;
  paths: string[];
  concurrency: number;
  warmupMs: number;
  measureMs: number;
  body: (seq: number) => string;
  expect: number;
  gate?: (issued: number) => boolean;
  onAccepted?: () => void;
  /** Told each accepted request's time from sending to its answer, ms. */
  timed?: (ms: number) => void;
}): Promise<ClosedLoopResult> {
  const start = performance.now();
  const from = start + opts.warmupMs;
  const until = from + opts.measureMs;
  let seq = 0;
  let okInWindow = 0;
  let okTotal = 0;
  let errors = 0;
  const statuses: Record<string, number> = {};
  const worker = async () => {
    while (performance.now() < until) {
      if (opts.gate && !opts.gate(seq)) {
        await sleep(2);
        continue;
      }
      const s = seq++;
      const sentAt = performance.now();
      const r = await post(opts.pool, opts.paths[s % opts.paths.length]!, opts.body(s), opts.expect);
      const at = performance.now();
      if (r.ok) {
        okTotal++;
        opts.timed?.(at - sentAt);
        opts.onAccepted?.();
        if (at >= from && at < until) okInWindow++;
      } else {
        errors++;
        statuses[r.status] = (statuses[r.status] ?? 0) + 1;
        // a refused request must not turn into a busy loop
        await sleep(10);
      }
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, worker));
  return { rate: (okInWindow / opts.measureMs) * 1000, okInWindow, okTotal, errors, statuses };
}

/**
 * Open loop: request i is due at start + i / rate, whatever happened to the ones before
 * (requests beyond the pool's connections wait in its queue). `send` gets the due time, so
 * latency is measured from when a request should have left, not from when it could.
 */
export async function paced(opts: { rate: number; durationMs: number; send: (seq: number, dueAtEpochMs: number) => Promise<boolean>; maxOutstanding?: number }): Promise<{ sent: number; ok: number; errors: number; skipped: number }> {
  const startPerf = performance.now();
  const startEpoch = epochMs();
  const total = Math.floor((opts.rate * opts.durationMs) / 1000);
  const maxOutstanding = opts.maxOutstanding ?? 20_000;
  let next = 0;
  let ok = 0;
  let errors = 0;
  let skipped = 0;
  let outstanding = 0;
  const inflight = new Set<Promise<void>>();
  while (next < total && performance.now() - startPerf < opts.durationMs + 5_000) {
    const elapsed = performance.now() - startPerf;
    const due = Math.min(total, Math.floor((elapsed * opts.rate) / 1000) + 1);
    for (; next < due; next++) {
      if (outstanding >= maxOutstanding) {
        skipped++;
        continue;
      }
      outstanding++;
      const dueAt = startEpoch + (next * 1000) / opts.rate;
      const p: Promise<void> = opts.send(next, dueAt).then(
        (good) => {
          if (good) ok++;
          else errors++;
        },
        () => {
          errors++;
        },
      ).finally(() => {
        outstanding--;
        inflight.delete(p);
      });
      inflight.add(p);
    }
    await sleep(2);
  }
  await Promise.all(inflight);
  return { sent: next - skipped, ok, errors, skipped };
}
