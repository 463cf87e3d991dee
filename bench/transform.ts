/**
 * The transformation sandbox's cost per run: `function transform(e){return {body:e.body}}` on a
 * 1 KiB JSON body, through the sandbox transformer (one worker), one run at a time and 16 at a
 * time (and 16 at a time on two workers), in µs per run as the caller sees it. Then where a run's time goes, the same steps timed
 * one by one on a QuickJS module in this thread: a fresh runtime and context with the driver
 * (the worker prepares it while it waits), the tenant's code, the call (the event parsed, the
 * transform, the body as JSON), the copy out, the disposal. A measure, not a test: nothing is
 * asserted. `npx tsx bench/transform.ts`; TRANSFORM_RUNS (default 2000) runs per figure.
 */
import { newQuickJSWASMModule, RELEASE_SYNC } from 'quickjs-emscripten';
import { createSandboxTransformer } from '../pipeline/deliver/transform/sandbox';
import { driverSource } from '../pipeline/deliver/transform/sandbox-driver';
import type { TransformInput } from '../pipeline/deliver/transform/transformer';
import { round } from './lib/stats';

const RUNS = Math.max(100, Number(process.env.TRANSFORM_RUNS ?? 2000));
const CODE = 'function transform(e){return {body:e.body}}';

function kibBody(): Record<string, string> {
  const body: Record<string, string> = {};
  for (let i = 0; JSON.stringify(body).length < 1000; i++) body[`key_${i}`] = `value ${i} ${'x'.repeat(32)}`;
  return body;
}

const input: TransformInput = { id: 'evt_1', delivery_id: 'dlv_1', destination_id: 'dst_1', attempt: 1, content_type: 'application/json', body: kibBody(), received_at: new Date().toISOString() };

async function throughTransformer(concurrency: number, workers = 1): Promise<number> {
  const transformer = createSandboxTransformer({ workers });
  try {
    // the worker's start and the first runs (the engine's and V8's warm-up) are not counted
    for (let i = 0; i < 50; i++) await transformer.run(CODE, input, 'ten_bench');
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async (_, lane) => {
        while (next < RUNS) {
          next++;
          const r = await transformer.run(CODE, input, `ten_${lane % 4}`);
          if (!r.ok) throw new Error(r.error);
        }
      }),
    );
    return ((performance.now() - started) * 1000) / RUNS;
  } finally {
    await transformer.close();
  }
}

/** µs per step of one run, on this thread (no worker, no messages). */
async function steps(): Promise<Record<string, number>> {
  const module = await newQuickJSWASMModule(RELEASE_SYNC);
  const driver = driverSource(1_048_576);
  const event = JSON.stringify(input);
  const spent = { context: 0, driver: 0, code: 0, call: 0, copyOut: 0, dispose: 0 };
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    const runtime = module.newRuntime();
    runtime.setMemoryLimit(16 << 20);
    runtime.setMaxStackSize(256 * 1024);
    runtime.setInterruptHandler(() => false);
    const context = runtime.newContext();
    const t1 = performance.now();
    const host = context.unwrapResult(context.evalCode(driver, 'driver.js', { type: 'global', strict: true }));
    const t2 = performance.now();
    context.unwrapResult(context.evalCode(CODE, 'transformation.js', { type: 'global' })).dispose();
    const t3 = performance.now();
    const op = context.newString('run');
    const arg = context.newString(event);
    const answer = context.unwrapResult(context.callFunction(host, context.undefined, op, arg));
    const t4 = performance.now();
    const meta = context.getProp(answer, 0);
    const body = context.getProp(answer, 1);
    JSON.parse(context.getString(meta));
    new TextEncoder().encode(context.getString(body));
    const t5 = performance.now();
    for (const h of [op, arg, answer, meta, body, host]) h.dispose();
    context.dispose();
    runtime.dispose();
    const t6 = performance.now();
    spent.context += t1 - t0;
    spent.driver += t2 - t1;
    spent.code += t3 - t2;
    spent.call += t4 - t3;
    spent.copyOut += t5 - t4;
    spent.dispose += t6 - t5;
  }
  return Object.fromEntries(Object.entries(spent).map(([k, ms]) => [k, round((ms * 1000) / RUNS, 1)]));
}

async function main(): Promise<void> {
  console.log(`body ${JSON.stringify(input.body).length} bytes of JSON, ${RUNS} runs per figure`);
  console.log(`sequential:     ${round(await throughTransformer(1), 1)} µs per run`);
  console.log(`concurrency 16: ${round(await throughTransformer(16), 1)} µs per run`);
  console.log(`concurrency 16, 2 workers: ${round(await throughTransformer(16, 2), 1)} µs per run`);
  console.log('one run, step by step on this thread (µs):', await steps());
}

void main();
