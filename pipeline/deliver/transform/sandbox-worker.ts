import type { DRIVER_ANSWERS } from './sandbox-driver';
import type { FailureKind } from './output';

/** What the worker is started with (its `workerData`). */
export interface WorkerSettings {
  /** Absolute path of the quickjs-emscripten package's entry, resolved by the parent. */
  quickjs: string;
  /** See sandbox-driver.ts. */
  driver: string;
  describe: string;
  answers: typeof DRIVER_ANSWERS;
  timeoutMs: number;
  /** The engine's own limit, which refuses any single allocation beyond it. */
  memoryBytes: number;
  /** The WebAssembly memory, fixed at this size: the limit that holds for everything. */
  wasmBytes: number;
  stackBytes: number;
  maxOutputBytes: number;
}

export interface WorkerRequest {
  seq: number;
  op: 'run' | 'check';
  code: string;
  /** The event as JSON (run only). */
  input?: string;
}

/** A failure the worker found or was told of; `detail` may come from the tenant's code. */
export interface WorkerFailure {
  kind: FailureKind;
  detail?: string;
  line?: number;
  column?: number;
}

export type WorkerReply =
  | { ready: true }
  | {
      seq: number;
      /** The worker thread's CPU time on the run, in milliseconds (see spentSince in the source). */
      cpuMs: number;
      /** The run dropped the delivery (or, for a check, the code passed it). */
      done?: 'drop' | 'checked';
      /** The envelope the driver made, parsed but not checked: it is the tenant code's doing. */
      meta?: unknown;
      /** The body as UTF-8, its buffer transferred. */
      body?: Uint8Array;
      failure?: WorkerFailure;
      /** The worker's WebAssembly instance may be inconsistent: the worker is to be replaced. */
      fatal?: boolean;
    };

/**
 * The worker thread, as JavaScript source run with `new Worker(source, { eval: true })`: it
 * needs no file of its own, so it starts the same from TypeScript under jest and from the
 * compiled service, which copies nothing but compiled modules.
 *
 * It holds one QuickJS WebAssembly module, whose memory is a fixed-size WebAssembly.Memory:
 * the engine's own malloc limit does not hold in this build (emscripten reports no usable size,
 * so the engine counts 8 bytes per allocation whatever its size), a fixed memory does. Each
 * request gets a fresh runtime and context with the driver evaluated, prepared ahead while the
 * worker waits; the interrupt handler stops the run once the thread's CPU time passes the
 * limit. A trap of the WebAssembly itself (the thread's own stack exhausted by native recursion,
 * say) may leave the module's heap inconsistent: that reply says fatal, and the parent replaces
 * the worker rather than touch the module again.
 */
export const WORKER_SOURCE = String.raw`'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const { newQuickJSWASMModule, newVariant, RELEASE_SYNC } = require(workerData.quickjs);
const settings = workerData;
const PAGE = 65536;
// the thread's CPU time, for the limit: a run is not cut short because the machine is busy
// (the kernel brings it up to date about once a tick: close enough for a limit, too coarse to report)
const cpuNow = typeof process.threadCpuUsage === 'function'
  ? () => { const u = process.threadCpuUsage(); return (u.user + u.system) / 1000; }
  : () => performance.now();
/** The longest a kernel tick may be (100 Hz): how far the CPU time read can lag. */
const TICK_MS = 10;
/**
 * A run's CPU time as reported: its wall-clock time on this thread, precise, and the same as its
 * CPU time unless the thread waited for a core; never more than the coarse CPU count allows.
 */
const spentSince = (wallStart, cpuStart) => Math.min(performance.now() - wallStart, Math.max(0, cpuNow() - cpuStart) + TICK_MS);
const encoder = new TextEncoder();

let quickjs;
let spare;
let deadline = Infinity;
let interrupted = false;
/** Times malloc asked for more memory than the fixed WebAssembly memory has; and that count when the run started. */
let walls = 0;
let wallsAtStart = 0;
const heapFull = () => walls > wallsAtStart;

function open() {
  const runtime = quickjs.newRuntime();
  runtime.setMemoryLimit(settings.memoryBytes);
  runtime.setMaxStackSize(settings.stackBytes);
  runtime.setInterruptHandler(() => {
    if (cpuNow() < deadline) return false;
    interrupted = true;
    return true;
  });
  const context = runtime.newContext();
  const made = context.evalCode(settings.driver, 'driver.js', { type: 'global', strict: true });
  if (made.error) {
    made.error.dispose();
    context.dispose();
    runtime.dispose();
    throw new Error('the sandbox driver does not evaluate');
  }
  return { runtime, context, driver: made.value };
}

function close(s) {
  s.driver.dispose();
  s.context.dispose();
  s.runtime.dispose();
}

/** A thrown value as a failure, described in the sandbox by DESCRIBE_SOURCE. */
function describe(s, thrown) {
  const { context } = s;
  const unknown = () => interrupted ? { kind: 'timeout' } : heapFull() ? { kind: 'memory' } : { kind: 'threw', detail: 'a value that cannot be turned into text' };
  if (interrupted) return unknown();
  const made = context.evalCode(settings.describe, 'describe.js', { type: 'global' });
  if (made.error) {
    made.error.dispose();
    return unknown();
  }
  const called = context.callFunction(made.value, context.undefined, thrown);
  made.value.dispose();
  if (called.error) {
    called.error.dispose();
    return unknown();
  }
  try {
    if (context.typeof(called.value) !== 'string') return unknown();
    const d = JSON.parse(context.getString(called.value));
    const f = { kind: d.kind === 'memory' || d.kind === 'stack' ? d.kind : 'threw', detail: typeof d.detail === 'string' ? d.detail : '' };
    if (Number.isSafeInteger(d.line)) f.line = d.line;
    if (Number.isSafeInteger(d.column)) f.column = d.column;
    if (d.syntax === true) f.syntax = true;
    // the engine throws null when it cannot even allocate the error for running out of memory
    if (f.kind === 'threw' && f.detail === 'null' && heapFull()) return { kind: 'memory' };
    return f;
  } catch {
    return unknown();
  } finally {
    called.value.dispose();
  }
}

function answered(code) {
  const a = settings.answers[code];
  if (a === 'checked' || a === 'drop') return { done: a };
  return { failure: a ?? { kind: 'crash', detail: 'the sandbox driver gave an unknown answer' } };
}

/** What the driver answered with an array: a thrown value and where, a body too long, or what to send. */
function unpack(s, answer) {
  const { context } = s;
  const first = context.getProp(answer, 0);
  const second = context.getProp(answer, 1);
  try {
    if (context.typeof(second) === 'number') {
      const code = context.getNumber(second);
      if (code === 6) return { failure: { kind: 'output', detail: 'transform returned at least ' + context.getNumber(first) + ' bytes; at most ' + settings.maxOutputBytes } };
      const f = describe(s, first);
      if (code === 7 && f.kind === 'threw') return { failure: { ...f, kind: 'output', detail: 'the result cannot be read or turned into JSON: ' + f.detail } };
      return { failure: f };
    }
    if (context.typeof(first) !== 'string' || context.typeof(second) !== 'string') return answered(-1);
    const envelope = context.getString(first);
    const text = context.getString(second);
    let meta;
    try {
      meta = JSON.parse(envelope);
    } catch {
      meta = undefined;
    }
    // a string the engine could not copy out (no memory left for its UTF-8) comes out empty
    if (meta === null || typeof meta !== 'object' || meta.chars !== text.length) {
      return { failure: heapFull() ? { kind: 'memory' } : { kind: 'output', detail: 'the result could not be read out of the sandbox' } };
    }
    const body = encoder.encode(text);
    if (body.length > settings.maxOutputBytes) return { failure: { kind: 'output', detail: 'transform returned ' + body.length + ' bytes; at most ' + settings.maxOutputBytes } };
    return { meta, body };
  } finally {
    first.dispose();
    second.dispose();
  }
}

function perform(s, request) {
  const { context } = s;
  const loaded = context.evalCode(request.code, 'transformation.js', { type: 'global' });
  if (loaded.error) {
    try {
      const f = describe(s, loaded.error);
      if (f.syntax && f.kind === 'threw') f.kind = 'compile';
      delete f.syntax;
      return { failure: f };
    } finally {
      loaded.error.dispose();
    }
  }
  loaded.value.dispose();
  const op = context.newString(request.op);
  const input = context.newString(request.input ?? '');
  const called = context.callFunction(s.driver, context.undefined, op, input);
  op.dispose();
  input.dispose();
  // only what the driver cannot catch gets out of it: the interrupt, or no memory left to go on
  if (called.error) {
    try {
      const f = describe(s, called.error);
      delete f.syntax;
      return { failure: f };
    } finally {
      called.error.dispose();
    }
  }
  try {
    if (context.typeof(called.value) === 'number') return answered(context.getNumber(called.value));
    const r = unpack(s, called.value);
    if (r.failure) delete r.failure.syntax;
    return r;
  } finally {
    called.value.dispose();
  }
}

function handle(request) {
  const s = spare ?? open();
  spare = undefined;
  const startedAt = performance.now();
  const cpuStart = cpuNow();
  wallsAtStart = walls;
  interrupted = false;
  deadline = cpuStart + settings.timeoutMs;
  let reply;
  try {
    reply = perform(s, request);
  } catch (err) {
    // a trap of the WebAssembly, or the thread's own stack exhausted inside it: nothing in this
    // module can be trusted any more, not even to be freed
    deadline = Infinity;
    const stack = err instanceof RangeError && /call stack/i.test(String(err.message));
    return { seq: request.seq, cpuMs: spentSince(startedAt, cpuStart), failure: { kind: stack ? 'stack' : 'crash', detail: String(err && err.message) }, fatal: true };
  }
  deadline = Infinity;
  reply.seq = request.seq;
  reply.cpuMs = spentSince(startedAt, cpuStart);
  close(s);
  return reply;
}

function prepare() {
  if (spare !== undefined) return;
  try {
    spare = open();
  } catch {
    // made again, or its failure reported, when the next request needs one
  }
}

parentPort.on('message', (request) => {
  let reply;
  try {
    reply = handle(request);
  } catch (err) {
    reply = { seq: request.seq, cpuMs: 0, failure: { kind: 'crash', detail: String(err && err.message) }, fatal: true };
  }
  if (reply.body !== undefined) parentPort.postMessage(reply, [reply.body.buffer]);
  else parentPort.postMessage(reply);
  if (!reply.fatal) setImmediate(prepare);
});

(async () => {
  const pages = Math.ceil(settings.wasmBytes / PAGE);
  const memory = new WebAssembly.Memory({ initial: pages, maximum: pages });
  // emscripten's sbrk grows the memory it was given when malloc runs short; at its maximum from
  // the start, every attempt fails (and malloc returns NULL), and is counted
  const grow = memory.grow;
  memory.grow = (delta) => {
    walls++;
    return grow.call(memory, delta);
  };
  quickjs = await newQuickJSWASMModule(newVariant(RELEASE_SYNC, { wasmMemory: memory }));
  prepare();
  parentPort.postMessage({ ready: true });
})().catch((err) => {
  // a worker that cannot start ends with the error, for the parent to report
  setImmediate(() => { throw err; });
});
`;
