import { Counter, Gauge } from 'prom-client';
import { registry } from './metrics';

/** What the transformation sandbox counts (pipeline/deliver/transform/sandbox.ts's stats()). */
export interface TransformStatsSource {
  stats(): { runs: number; sent: number; dropped: number; failures: Record<string, number>; waiting: number; waitingTenants: number; running: number; workerRestarts: number; cpuMs: number };
}

const sources = new Set<TransformStatsSource>();

function totals() {
  const sum = { runs: 0, sent: 0, dropped: 0, failures: {} as Record<string, number>, waiting: 0, waitingTenants: 0, running: 0, workerRestarts: 0, cpuMs: 0 };
  for (const source of sources) {
    const s = source.stats();
    sum.runs += s.runs;
    sum.sent += s.sent;
    sum.dropped += s.dropped;
    sum.waiting += s.waiting;
    sum.waitingTenants += s.waitingTenants;
    sum.running += s.running;
    sum.workerRestarts += s.workerRestarts;
    sum.cpuMs += s.cpuMs;
    for (const [kind, n] of Object.entries(s.failures)) sum.failures[kind] = (sum.failures[kind] ?? 0) + n;
  }
  return sum;
}

/** Counters read from the sandbox when scraped: its runs keep their own counts, nothing is counted twice. */
new Counter({
  name: 'hookline_transform_runs_total',
  help: 'Transformation runs of this process by result: sent, dropped (null), or the failure (timeout, memory, stack, output, threw, compile, missing, busy, input, crash, closed; failures include the compile checks of create and update).',
  labelNames: ['result'] as const,
  registers: [registry],
  collect() {
    const t = totals();
    this.reset();
    this.inc({ result: 'sent' }, t.sent);
    this.inc({ result: 'dropped' }, t.dropped);
    for (const [kind, n] of Object.entries(t.failures)) this.inc({ result: kind }, n);
  },
});

new Counter({
  name: 'hookline_transform_cpu_seconds_total',
  help: 'CPU time tenants\' transformations took in the sandbox of this process.',
  registers: [registry],
  collect() {
    this.reset();
    this.inc(totals().cpuMs / 1000);
  },
});

new Gauge({
  name: 'hookline_transform_waiting',
  help: 'Transformation runs waiting for a sandbox worker, and (tenants) the tenants they belong to.',
  labelNames: ['of'] as const,
  registers: [registry],
  collect() {
    const t = totals();
    this.set({ of: 'runs' }, t.waiting);
    this.set({ of: 'tenants' }, t.waitingTenants);
  },
});

new Counter({
  name: 'hookline_transform_worker_restarts_total',
  help: 'Sandbox workers replaced: stuck past the watchdog, trapped, or exited.',
  registers: [registry],
  collect() {
    this.reset();
    this.inc(totals().workerRestarts);
  },
});

/** Shows the sandbox's counts in the transform metrics until the returned function is called. */
export function watchTransforms(source: TransformStatsSource): () => void {
  sources.add(source);
  return () => {
    sources.delete(source);
  };
}
