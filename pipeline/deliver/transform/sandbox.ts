import { Worker } from 'node:worker_threads';
import { MAX_TRANSFORMATION_BYTES } from '../../../core/destination-types';
import { FairQueue } from './fair-queue';
import { acceptOutput, FAILURE_KINDS, failureMessage, type Failure, type FailureKind, type OutputLimits } from './output';
import { DESCRIBE_SOURCE, DRIVER_ANSWERS, driverSource } from './sandbox-driver';
import { WORKER_SOURCE, type WorkerReply, type WorkerRequest, type WorkerSettings } from './sandbox-worker';
import type { TransformInput, TransformResult, Transformer } from './transformer';

export { MAX_TRANSFORMATION_BYTES };

export interface SandboxOptions {
  /** Worker threads, each holding one QuickJS WebAssembly module; all tenants' runs take turns on them (default 1). */
  workers?: number;
  /** CPU time one run may take, in milliseconds of the worker thread's CPU (default 50). */
  timeoutMs?: number;
  /** Memory one run may use, in MiB (default 16): the sandbox's heap, with the event's copy and what the code builds. */
  memoryMb?: number;
  /** Largest body one run may return, in bytes of UTF-8 (default 1 MiB). */
  maxOutputBytes?: number;
  /** Runs of one tenant waiting for a worker; beyond it the tenant's next run fails at once (default 100). */
  maxWaitingPerTenant?: number;
}

/** Counters since the sandbox started, for metrics. */
export interface SandboxStats {
  /** Runs answered, failures included; checks (create and update) apart. */
  runs: number;
  checks: number;
  sent: number;
  dropped: number;
  /** Failed runs and checks, by why. */
  failures: Record<FailureKind, number>;
  /** Runs and checks waiting for a worker, and the tenants they belong to. */
  waiting: number;
  waitingTenants: number;
  running: number;
  /** Workers replaced: stuck past the watchdog, trapped, or exited. */
  workerRestarts: number;
  /** CPU time spent in the sandboxes by the code of answered runs and checks. */
  cpuMs: number;
}

export interface SandboxTransformer extends Transformer {
  stats(): SandboxStats;
}

/** The engine's stack limit: far deeper than transformations recurse, far below what the WebAssembly and the thread hold. */
const STACK_BYTES = 256 * 1024;
/** The WebAssembly memory beyond a run's own: the module's static data and its 5 MiB C stack, the runtime, the driver. */
const MODULE_BYTES = 6 * 1024 * 1024;
/** The smallest memory the module accepts (its declared minimum, 256 pages). */
const MIN_WASM_BYTES = 16 * 1024 * 1024;
/** After a worker failed to start, runs fail at once for this long before one is tried again: no spinning. */
const RESTART_DELAY_MS = 1000;
/** Checks (create and update of a destination) take their turns as one more tenant. */
const CHECK_LANE = '\u0000check';

/** A worker's answer to a job, or the failure the pool gave it instead. */
type Answer = Omit<Extract<WorkerReply, { seq: number }>, 'seq'>;

interface Job {
  request: Omit<WorkerRequest, 'seq'>;
  settle(answer: Answer): void;
}

interface Slot {
  worker: Worker;
  /** Starting, ready, or down: failed to start, and started again only when a run needs it. */
  state: 'starting' | 'ready' | 'down';
  job: Job | null;
  seq: number;
  watchdog: NodeJS.Timeout | null;
  startedAt: number;
}

/**
 * The transformer that runs tenants' code in QuickJS, compiled to WebAssembly, on worker
 * threads: never in this process's own V8, and never on its event loop, which a run held for
 * its whole CPU limit would stall for every other tenant. Each run gets a fresh context with no
 * I/O at all (no std or os module, no timers, no host functions), a CPU-time limit, a memory
 * limit and a stack limit. Runs wait per tenant, and the tenant served least recently goes
 * next (fair-queue.ts), so a tenant's backlog of slow code delays others by one run at most. A
 * wall-clock watchdog (ten times the CPU limit, plus a second) terminates and replaces a worker
 * that does not answer: the engine checks its limit between bytecodes, so one long native call
 * could otherwise hold the worker.
 */
export function createSandboxTransformer(options: SandboxOptions = {}): SandboxTransformer {
  const limits: OutputLimits = { timeoutMs: options.timeoutMs ?? 50, memoryMb: options.memoryMb ?? 16, maxOutputBytes: options.maxOutputBytes ?? 1_048_576 };
  const workerCount = Math.max(1, options.workers ?? 1);
  const watchdogMs = 10 * limits.timeoutMs + 1000;
  const memoryBytes = limits.memoryMb * 1024 * 1024;
  const settings: WorkerSettings = {
    quickjs: require.resolve('quickjs-emscripten'),
    driver: driverSource(limits.maxOutputBytes),
    describe: DESCRIBE_SOURCE,
    answers: DRIVER_ANSWERS,
    timeoutMs: limits.timeoutMs,
    memoryBytes,
    wasmBytes: Math.max(MIN_WASM_BYTES, memoryBytes + MODULE_BYTES),
    stackBytes: STACK_BYTES,
    maxOutputBytes: limits.maxOutputBytes,
  };

  const queue = new FairQueue<Job>(options.maxWaitingPerTenant ?? 100);
  const counts = { runs: 0, checks: 0, sent: 0, dropped: 0, workerRestarts: 0, cpuMs: 0 };
  const failures = Object.fromEntries(FAILURE_KINDS.map((k) => [k, 0])) as Record<FailureKind, number>;
  const slots: Slot[] = [];
  let startFailure: { detail: string; at: number } | null = null;
  let closed = false;

  function spawn(slot?: Slot): Slot {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: settings });
    // an idle worker keeps no process alive; one with work in flight or waiting does (holdOpen)
    worker.unref();
    const s: Slot = slot ?? { worker, state: 'starting', job: null, seq: 0, watchdog: null, startedAt: 0 };
    s.worker = worker;
    s.state = 'starting';
    let lastError: Error | undefined;
    worker.on('message', (reply: WorkerReply) => {
      if (s.worker === worker) onReply(s, reply);
    });
    worker.on('error', (err) => {
      lastError = err;
    });
    worker.on('exit', () => {
      if (s.worker === worker && !closed) onExit(s, lastError);
    });
    return s;
  }

  function replace(slot: Slot): void {
    const old = slot.worker;
    counts.workerRestarts++;
    spawn(slot);
    void old.terminate();
  }

  function onReply(slot: Slot, reply: WorkerReply): void {
    if ('ready' in reply) {
      slot.state = 'ready';
      pump();
      return;
    }
    const job = slot.job;
    if (job === null || reply.seq !== slot.seq) return;
    finish(slot);
    if (reply.fatal) replace(slot);
    job.settle(reply);
    pump();
  }

  function onExit(slot: Slot, err: Error | undefined): void {
    const job = slot.job;
    const detail = err?.message ?? 'its worker exited';
    if (job !== null) {
      finish(slot);
      job.settle({ failure: { kind: 'crash', detail }, cpuMs: 0 });
    }
    if (slot.state === 'starting') {
      // it never started: what waits for it would wait for ever
      slot.state = 'down';
      startFailure = { detail: `cannot start: ${detail}`, at: performance.now() };
      if (slots.every((s) => s.state === 'down')) for (const waiting of queue.drain()) waiting.settle({ failure: { kind: 'crash', detail: startFailure.detail }, cpuMs: 0 });
      return;
    }
    replace(slot);
    pump();
  }

  function finish(slot: Slot): void {
    if (slot.watchdog) clearTimeout(slot.watchdog);
    slot.watchdog = null;
    slot.job = null;
    slot.worker.unref();
  }

  /** A run waiting for a worker that is still starting must keep the process alive until it is answered. */
  function holdOpen(): void {
    for (const slot of slots) {
      if (slot.job !== null || (slot.state === 'starting' && queue.size > 0)) slot.worker.ref();
      else slot.worker.unref();
    }
  }

  function start(slot: Slot, job: Job): void {
    slot.seq++;
    slot.job = job;
    slot.startedAt = performance.now();
    slot.watchdog = setTimeout(() => onStuck(slot), watchdogMs);
    slot.worker.postMessage({ seq: slot.seq, ...job.request } satisfies WorkerRequest);
  }

  function onStuck(slot: Slot): void {
    const job = slot.job;
    if (job === null) return;
    const wallMs = performance.now() - slot.startedAt;
    finish(slot);
    replace(slot);
    job.settle({ failure: { kind: 'timeout' }, cpuMs: wallMs });
    pump();
  }

  function pump(): void {
    for (const slot of slots) {
      if (queue.size === 0) break;
      if (slot.state !== 'ready' || slot.job !== null) continue;
      start(slot, queue.shift() as Job);
    }
    holdOpen();
  }

  function submit(tenant: string, request: Job['request'], settle: Job['settle']): void {
    if (closed) return settle({ failure: { kind: 'closed' }, cpuMs: 0 });
    if (startFailure !== null && slots.some((s) => s.state === 'down')) {
      if (performance.now() - startFailure.at >= RESTART_DELAY_MS) {
        for (const slot of slots) if (slot.state === 'down') replace(slot);
      } else if (slots.every((s) => s.state === 'down')) {
        return settle({ failure: { kind: 'crash', detail: startFailure.detail }, cpuMs: 0 });
      }
    }
    if (!queue.push(tenant, { request, settle })) return settle({ failure: { kind: 'busy' }, cpuMs: 0 });
    pump();
  }

  function failed(f: Failure, cpuMs: number): TransformResult {
    failures[f.kind]++;
    return { ok: false, error: failureMessage(f, limits, 'run'), cpuMs };
  }

  function resultOf(reply: Answer): TransformResult {
    counts.runs++;
    counts.cpuMs += reply.cpuMs;
    const cpuMs = Math.round(reply.cpuMs * 1000) / 1000;
    if (reply.failure) return failed(reply.failure, cpuMs);
    if (reply.done === 'drop') {
      counts.dropped++;
      return { ok: true, output: null, cpuMs };
    }
    const accepted = acceptOutput(reply.meta, reply.body ?? new Uint8Array(0), limits.maxOutputBytes);
    if ('error' in accepted) return failed({ kind: 'output', detail: accepted.error }, cpuMs);
    counts.sent++;
    return { ok: true, output: accepted.output, cpuMs };
  }

  for (let i = 0; i < workerCount; i++) slots.push(spawn());

  return {
    run(code: string, input: TransformInput, tenantId: string): Promise<TransformResult> {
      if (Buffer.byteLength(code, 'utf8') > MAX_TRANSFORMATION_BYTES) return Promise.resolve(failed({ kind: 'input', detail: `the transformation is larger than ${MAX_TRANSFORMATION_BYTES} bytes` }, 0));
      let event: string;
      try {
        event = JSON.stringify(input);
      } catch {
        // V8 gives up on a body nested deeper than its stack; the sandbox would too
        return Promise.resolve(failed({ kind: 'input', detail: 'the event is nested too deeply to be given to the transformation' }, 0));
      }
      return new Promise((resolve) => submit(tenantId, { op: 'run', code, input: event }, (reply) => resolve(resultOf(reply))));
    },

    check(code: string): Promise<string | undefined> {
      if (Buffer.byteLength(code, 'utf8') > MAX_TRANSFORMATION_BYTES) return Promise.resolve(`must be at most ${MAX_TRANSFORMATION_BYTES} bytes`);
      return new Promise((resolve) =>
        submit(CHECK_LANE, { op: 'check', code }, (reply) => {
          counts.checks++;
          counts.cpuMs += reply.cpuMs;
          const failure: Failure | undefined = reply.failure ?? (reply.done === 'checked' ? undefined : { kind: 'crash', detail: 'the check gave no answer' });
          if (failure) failures[failure.kind]++;
          resolve(failure ? failureMessage(failure, limits, 'check') : undefined);
        }),
      );
    },

    stats(): SandboxStats {
      return { ...counts, failures: { ...failures }, waiting: queue.size, waitingTenants: queue.keys, running: slots.filter((s) => s.job !== null).length };
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      for (const job of queue.drain()) job.settle({ failure: { kind: 'closed' }, cpuMs: 0 });
      await Promise.all(
        slots.map(async (slot) => {
          const job = slot.job;
          finish(slot);
          job?.settle({ failure: { kind: 'closed' }, cpuMs: 0 });
          await slot.worker.terminate();
        }),
      );
    },
  };
}
