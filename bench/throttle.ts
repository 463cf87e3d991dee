/**
 * The `throttle` scenario of the benchmark suite: one destination limited to THROTTLE_RATE (50)
 * deliveries/s gets a backlog larger than the limit lets through over the measured window, while
 * other destinations of the same service take the end-to-end scenario's closed-loop load. Counted
 * at two receiver processes: the limited destination's rate against its limit (target 1 ± 0.1),
 * and the unlimited destinations' delivered rate x hops against the raw pass-through (target 0.5).
 */
import path from 'node:path';
import type { Admin, Kafka } from 'kafkajs';
import { topicNames } from '../core/topics';
import { AvroCodec } from '../platform/avro/codec';
import { ConfigStore } from '../platform/config-store/config-store';
import { parseKeyring } from '../core/secrets/keyring';
import { closedLoop, epochMs, pool, post, taggedBody } from './lib/load';
import { spawnScript, type Child } from './lib/procs';
import { api, createFlows, ReceiverClient, RUN_KEK, startInstance, type Infra } from './lib/service';
import { round, sleep } from './lib/stats';

export interface ThrottleSettings {
  reps: number;
  warmupS: number;
  seconds: number;
  concurrency: number;
  e2eWindow: number;
  flows: number;
  logLevel: string;
  partitions: number;
  rate: number;
}

export interface ThrottleRep {
  /** Deliveries/s to the limited destination over the counted window. */
  limitedPerS: number;
  /** Most deliveries to it in any 1 s of the window. */
  limitedMaxPer1s: number;
  /** Deliveries/s to the unlimited destinations over the same window. */
  unlimitedPerS: number;
}

/** Writes the destination's rate limit through the config topic, as the API's write would. */
async function setRateLimit(kafka: Kafka, infra: Infra, prefix: string, destinationId: string, rate: number): Promise<void> {
  const codec = AvroCodec.connect(infra.registryUrl);
  const topic = topicNames(prefix).config;
  await codec.register({ [topic]: 'ConfigEntry' });
  const store = new ConfigStore(kafka, codec, topic, parseKeyring(RUN_KEK, 'SECRETS_KEK'));
  await store.start();
  try {
    const d = store.get('destination', 'demo', destinationId);
    if (!d) throw new Error(`destination ${destinationId} not found on the config topic`);
    if (!(await store.update({ ...d, rate_limit_per_s: rate, updated_at: new Date().toISOString() }))) throw new Error('the rate limit was not applied');
  } finally {
    await store.stop();
  }
}

function maxPerWindow(times: number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! >= windowMs) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

/** Runs the repetitions; `between` runs after each (the suite's baseline, alternating). */
export async function runThrottle(opts: { root: string; infra: Infra; kafka: Kafka; admin: Admin; rec: ReceiverClient; say: (m: string) => void; settings: ThrottleSettings; between: () => Promise<void> }): Promise<ThrottleRep[]> {
  const S = opts.settings;
  const second: Child = spawnScript('receiver (limited destination)', 'bench/receiver.ts', [], process.env, path.join(opts.root, 'receiver-limited.log'));
  const [, base] = await second.waitForOutput(/receiver listening (\S+)/, 60_000);
  const limitedRec = new ReceiverClient(base!);
  const svc = await startInstance({ name: 'svc-throttle', root: opts.root, prefix: 'bench5.', stages: 'all', infra: opts.infra, logLevel: S.logLevel });
  const reps: ThrottleRep[] = [];
  try {
    const flows = await createFlows(svc, opts.rec.hookUrl, S.flows, S.partitions);
    const d = await api(svc, 'POST', '/v1/tenants/demo/destinations', { name: 'bench limited', url: limitedRec.hookUrl });
    if (d.status !== 201) throw new Error(`destination: ${d.status} ${JSON.stringify(d.body)}`);
    const ing = await api(svc, 'POST', '/v1/tenants/demo/ingesters', { name: 'bench limited in', provider: 'none', config: {}, destination_ids: [d.body.id] });
    if (ing.status !== 201) throw new Error(`ingester: ${ing.status} ${JSON.stringify(ing.body)}`);
    const limited = { destinationId: d.body.id as string, hookPath: `/v1/hooks/${ing.body.id as string}` };
    await setRateLimit(opts.kafka, opts.infra, svc.prefix, limited.destinationId, S.rate);
    const paths = flows.map((f) => f.hookPath);
    const hookPool = pool(svc.url, S.concurrency);
    const limitedPool = pool(svc.url, 8);
    try {
      // warm-up: every group joined, one event through each flow
      const warm = `w${Date.now()}`;
      await Promise.all([opts.rec.reset(warm), limitedRec.reset(warm)]);
      for (const [i, p] of [...paths, limited.hookPath].entries()) {
        const r = await post(p === limited.hookPath ? limitedPool : hookPool, p, taggedBody(warm, i, epochMs()), 202);
        if (!r.ok) throw new Error(`warm-up webhook answered ${r.status}`);
      }
      if ((await opts.rec.waitFor(paths.length, 120_000)) < paths.length || (await limitedRec.waitFor(1, 120_000)) < 1) throw new Error(`warm-up events were not delivered; see ${svc.proc.logFile}`);

      for (let rep = 0; rep < S.reps; rep++) {
        const run = `r${rep}-${Date.now()}`;
        await Promise.all([opts.rec.reset(run), limitedRec.reset(run)]);
        // the limited destination's backlog: more than the limit lets through until the window ends
        const backlog = Math.ceil(S.rate * (S.warmupS + S.seconds + 2));
        let nextSeq = 0;
        const feeding = Promise.all(Array.from({ length: 8 }, async () => {
          while (nextSeq < backlog) {
            const s = nextSeq++;
            const r = await post(limitedPool, limited.hookPath, taggedBody(run, s, epochMs()), 202);
            if (!r.ok) throw new Error(`limited hook answered ${r.status}`);
          }
        }));
        let delivered = 0;
        let accepted = 0;
        let polling = true;
        const poller = (async () => {
          while (polling) {
            delivered = (await opts.rec.stats()).distinct;
            await sleep(50);
          }
        })();
        const window = (async () => {
          await sleep(S.warmupS * 1000);
          const c0 = (await opts.rec.stats()).distinct;
          const t0 = epochMs();
          await sleep(S.seconds * 1000);
          const c1 = (await opts.rec.stats()).distinct;
          const t1 = epochMs();
          return { unlimited: c1 - c0, t0, t1 };
        })();
        await closedLoop({ pool: hookPool, paths, concurrency: S.concurrency, warmupMs: S.warmupS * 1000, measureMs: S.seconds * 1000, body: (s) => taggedBody(run, s, epochMs()), expect: 202, gate: (issued) => issued - delivered < S.e2eWindow, onAccepted: () => accepted++ });
        const w = await window;
        await feeding;
        const got = await opts.rec.waitFor(accepted, 120_000);
        polling = false;
        await poller;
        if (got < accepted) throw new Error(`${accepted - got} of ${accepted} accepted events were not delivered within 120 s after the load stopped`);
        // every limited delivery arrives, so that the next repetition starts with no backlog
        const limitedGot = await limitedRec.waitFor(backlog, 60_000 + (backlog / S.rate) * 1000);
        if (limitedGot < backlog) throw new Error(`${backlog - limitedGot} of ${backlog} deliveries to the limited destination did not arrive`);
        const arrivals = (await limitedRec.detail()).arrivals;
        const inWindow = arrivals.filter((a) => a >= w.t0 && a < w.t1);
        const seconds = (w.t1 - w.t0) / 1000;
        const r: ThrottleRep = { limitedPerS: round(inWindow.length / seconds, 2), limitedMaxPer1s: maxPerWindow(arrivals, 1_000), unlimitedPerS: round(w.unlimited / seconds, 1) };
        reps.push(r);
        opts.say(`throttle rep ${rep + 1}/${S.reps}: limited destination ${r.limitedPerS}/s (limit ${S.rate}, at most ${r.limitedMaxPer1s} in any 1 s), unlimited ${r.unlimitedPerS} delivered/s`);
        await opts.between();
      }
    } finally {
      await hookPool.close();
      await limitedPool.close();
    }
  } finally {
    await svc.proc.stop();
    await limitedRec.close().catch(() => undefined);
    await second.stop(5_000);
  }
  return reps;
}
