/**
 * The benchmark suite (`npm run bench`): starts Kafka, Redis and a schema registry, runs the
 * service as separate processes, and measures every scenario against a baseline taken in the
 * same run (the machine is shared, so only ratios are comparable between runs). Results go
 * to bench/results/latest.json and latest.md (quick mode: quick.json and quick.md).
 * docs/benchmarks.md lists the scenarios and every environment variable.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Admin, Kafka, Producer } from 'kafkajs';
import { loadConfig } from '../core/config';
import { groupIdOf, groupPrefixOf, topicNames } from '../core/topics';
import { startLocalKafka, type LocalKafka } from '../infra/kafka/local-kafka';
import { startLocalRedis, type LocalRedis } from '../infra/redis/local-redis';
import { startSchemaRegistry, type SchemaRegistryServer } from '../infra/registry/server';
import { AvroCodec } from '../platform/avro/codec';
import { BatchingProducer } from '../platform/kafka/batching-producer';
import { topology } from '../service/topology';
import { createKafka, ensureTopics, fetchTopicOffsets } from '../platform/kafka/client';
import { closedLoop, epochMs, paced, pool, post, taggedBody } from './lib/load';
import { rawLoop } from './raw-kafkajs';
import { kafkaRequests, requestsPerEvent, requestsText, type RequestsPerEvent } from './lib/kafka-requests';
import { cpuBetween, cpuSnapshot, killAllChildren, REPO_ROOT, rssBytes, spawnScript, tail, type Child, type OtherTree } from './lib/procs';
import { chart, markdown, met, type Entry, type Results } from './lib/report';
import { createFlows, ReceiverClient, RUN_KEK, startInstance, type Flow, type Infra, type ServiceInstance } from './lib/service';
import { median, overReps, quantile, round, sleep, slope, summary } from './lib/stats';
import { outcomeGenerator } from './lib/synthetic';
import { runThrottle } from './throttle';
import { backlogRate, produceDeliveryTasks } from './lib/tasks';
import { BROKER_TYPES, runBrokerDelivery, runTransform, type DestinationBenchCtx } from './destinations';
import { runAnalytics } from './analytics';
import { formatCosts, sealingsPerEvent, sealOpenCost } from './sealing';

// ---------------------------------------------------------------------------------------------
// settings

const QUICK = process.env.BENCH_QUICK === '1';
function int(name: string, full: number, quick: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return QUICK ? quick : full;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name}: expected a non-negative number, got "${raw}"`);
  return n;
}

const S = {
  reps: Math.max(1, int('BENCH_REPS', 5, 2)),
  warmupS: int('BENCH_WARMUP_SECONDS', 5, 2),
  warmWebhooks: int('BENCH_WARM_WEBHOOKS', 20_000, 2_000),
  seconds: Math.max(1, int('BENCH_SECONDS', 15, 4)),
  concurrency: Math.max(1, int('BENCH_CONCURRENCY', 32, 32)),
  e2eWindow: Math.max(1, int('E2E_WINDOW', 2_000, 2_000)),
  flows: Math.max(1, int('E2E_FLOWS', 3, 3)),
  peerFlows: Math.max(1, int('PEER_FLOWS', 1, 1)),
  passMessages: Math.max(100, int('PASS_MESSAGES', 30_000, 5_000)),
  brokerWarmup: int('BROKER_WARMUP_MESSAGES', 100_000, 30_000),
  deliveryTasks: Math.max(100, int('DELIVERY_TASKS', 10_000, 3_000)),
  latencyS: Math.max(1, int('LATENCY_SECONDS', 30, 5)),
  soakS: Math.max(3, int('SOAK_SECONDS', 300, 20)),
  soakWarmupS: int('SOAK_WARMUP_SECONDS', 15, 3),
  soakFraction: int('SOAK_RATE_PERCENT', 50, 50) / 100,
  sinkRows: Math.max(1_000, int('SINK_BENCH_ROWS', 300_000, 60_000)),
  queryRows: Math.max(1_000, int('QUERY_ROWS', 10_000_000, 100_000)),
  queryBatchRows: Math.max(1_000, int('QUERY_BATCH_ROWS', 200_000, 50_000)),
  queryTenants: Math.max(1, int('QUERY_TENANTS', 1, 1)),
  querySamples: Math.max(5, int('QUERY_SAMPLES', 100, 20)),
  queryRounds: Math.max(1, int('QUERY_ROUNDS', 3, 2)),
  evidenceLeaves: Math.max(1_000, int('EVIDENCE_LEAVES', 1_000_000, 100_000)),
  evidenceSealOutcomes: Math.max(100, int('EVIDENCE_SEAL_OUTCOMES', 20_000, 5_000)),
  clientRecords: Math.max(1_000, int('KAFKA_CLIENT_RECORDS', 100_000, 10_000)),
  clientBatch: Math.max(1, int('KAFKA_CLIENT_BATCH', 500, 500)),
  clientInflight: Math.max(1, int('KAFKA_CLIENT_INFLIGHT', 4, 4)),
  searchRows: Math.max(10_000, int('SEARCH_ROWS', 10_000_000, 1_000_000)),
  searchReps: Math.max(1, int('SEARCH_REPS', 5, 3)),
  analyticsRows: Math.max(10_000, int('ANALYTICS_ROWS', 10_000_000, 1_000_000)),
  analyticsTenantRows: Math.max(1_000, int('ANALYTICS_TENANT_ROWS', 1_000_000, 100_000)),
  analyticsReps: Math.max(5, int('ANALYTICS_REPS', 30, 10)),
  analyticsRawReps: Math.max(1, int('ANALYTICS_RAW_REPS', 5, 3)),
  timeoutMin: int('BENCH_TIMEOUT_MINUTES', 60, 20),
  logLevel: process.env.BENCH_LOG_LEVEL ?? 'info',
  throttleRate: Math.max(1, int('THROTTLE_RATE', 50, 50)),
};
const ALL_SCENARIOS = ['ingest', 'delivery', 'end_to_end', 'memory', 'peer_bullmq', 'before_after', 'kafka_client', 'sink', 'query', 'evidence', 'search', 'throttle', 'broker_delivery', 'transform', 'analytics', 'sealing'] as const;
type Scenario = (typeof ALL_SCENARIOS)[number];
const SELECTED = new Set<string>((process.env.BENCH_SCENARIOS ?? ALL_SCENARIOS.join(',')).split(',').map((s) => s.trim()).filter(Boolean));
for (const s of SELECTED) if (!(ALL_SCENARIOS as readonly string[]).includes(s)) throw new Error(`BENCH_SCENARIOS: unknown scenario ${s}; known: ${ALL_SCENARIOS.join(', ')}`);
const wants = (s: Scenario) => SELECTED.has(s);

/** Kafka hops of one event: consume -> produce passes between received and deliveries.completed. */
const HOPS = 4;
/** Jobs the BullMQ relay's Worker runs at once: the deliver stage's default concurrency per destination. */
const RELAY_CONCURRENCY = 32;
/** How often consumer lag is sampled during a measured window. */
const LAG_EVERY_MS = 1_000;
const PARTITIONS = 3;

// ---------------------------------------------------------------------------------------------
// output

const say = (msg: string) => process.stdout.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const entries: Entry[] = [];
const failures: { scenario: string; error: string }[] = [];
const durations: Record<string, number> = {};
const runTag = () => randomBytes(4).toString('hex');

/** One scenario's result; `met` decides for an entry whose target is more than its ratio (else the ratio against the target). */
function entry(e: Omit<Entry, 'met'> & { met?: boolean }): Entry {
  const full = { ...e, met: e.met ?? met(e.ratio, e.target, e.better) };
  entries.push(full);
  say(`${e.name}: ${e.value} ${e.unit} (baseline ${e.baseline.value} ${e.baseline.unit}), ratio ${e.ratio}, target ${e.better === 'higher' ? '>=' : '<='} ${e.target}: ${full.met ? 'met' : 'NOT met'}`);
  return full;
}

/**
 * A throughput scenario: the median of `values` against the median of `baseline.values`,
 * measured alternately in the same run; ratio = value / baseline, target 0.5.
 */
function rateEntry(e: { name: string; metric: string; unit: string; values: number[]; baseline: { name: string; values: number[]; unit: string }; notes: string; details: Record<string, unknown> }): Entry {
  const v = overReps(e.values, 0);
  const b = overReps(e.baseline.values, 0);
  return entry({ name: e.name, metric: e.metric, unit: e.unit, ...v, repetitions: e.values.length, baseline: { name: e.baseline.name, ...b, unit: e.baseline.unit }, ratio: round(v.value / b.value), target: 0.5, better: 'higher', notes: e.notes, details: e.details });
}

// ---------------------------------------------------------------------------------------------
// Kafka helpers

interface GroupLag {
  lag: number;
  /** Sum of the end offsets of the group's topics: how much has been written to its input. */
  end: number;
}

/**
 * Lag and input end offsets of every consumer group whose id starts with `prefix`. The groups
 * and their topics are looked up once per tracker, so a sample costs one offsets request per
 * group and one per topic: sampling must not load the broker it measures.
 */
/** High-water mark summed over the partitions of each topic under a prefix: records ever written there. */
async function recordsOnTopics(admin: Admin, prefix: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const topic of (await admin.listTopics()).filter((t) => t.startsWith(prefix))) {
    out.set(topic, (await admin.fetchTopicOffsets(topic)).reduce((n, p) => n + Number(p.high), 0));
  }
  return out;
}

function lagTracker(admin: Admin, prefix: string): () => Promise<Record<string, GroupLag>> {
  let layout: { groupId: string; topics: string[] }[] | undefined;
  return async () => {
    if (!layout) {
      const { groups } = await admin.listGroups();
      layout = [];
      for (const g of groups.filter((x) => x.groupId.startsWith(prefix))) {
        const offsets = await admin.fetchOffsets({ groupId: g.groupId });
        layout.push({ groupId: g.groupId, topics: offsets.map((t) => t.topic) });
      }
    }
    const ends = new Map<string, { partition: number; high: string; low: string }[]>();
    for (const topic of new Set(layout.flatMap((g) => g.topics))) ends.set(topic, await admin.fetchTopicOffsets(topic));
    const out: Record<string, GroupLag> = {};
    for (const g of layout) {
      const offsets = await admin.fetchOffsets({ groupId: g.groupId, topics: g.topics });
      let lag = 0;
      let end = 0;
      for (const t of offsets) {
        for (const p of ends.get(t.topic) ?? []) {
          const committed = Number(t.partitions.find((x) => x.partition === p.partition)?.offset ?? -1);
          const high = Number(p.high);
          lag += high - (committed < 0 ? Number(p.low) : committed);
          end += high;
        }
      }
      out[g.groupId.slice(prefix.length)] = { lag, end };
    }
    return out;
  };
}

/**
 * Per group: lag at the start and end of a window, its least-squares growth per second, and
 * whether it is flat: over the window the backlog grew by less than 5% of the records that
 * arrived, or by less than its own peak in the first half of the window (batching consumers
 * such as the sink have a saw-tooth backlog that a few samples cannot fit).
 */
function lagVerdict(samples: { at: number; groups: Record<string, GroupLag> }[]) {
  const first = samples[0];
  const last = samples[samples.length - 1];
  const out: Record<string, { start: number; end: number; max: number; growth_per_s: number; input_per_s: number; flat: boolean }> = {};
  if (!first || !last) return { groups: out, flat: false };
  const seconds = Math.max(1e-3, last.at - first.at);
  for (const name of Object.keys(last.groups)) {
    const points = samples.filter((s) => s.groups[name]).map((s) => ({ x: s.at, y: s.groups[name]!.lag }));
    const growth = slope(points);
    const input = ((last.groups[name]?.end ?? 0) - (first.groups[name]?.end ?? 0)) / seconds;
    const firstHalfPeak = Math.max(0, ...points.filter((p) => p.x <= seconds / 2).map((p) => p.y));
    const grew = growth * seconds;
    out[name] = { start: first.groups[name]?.lag ?? 0, end: last.groups[name]!.lag, max: Math.max(...points.map((p) => p.y)), growth_per_s: round(growth, 1), input_per_s: round(input, 1), flat: grew <= Math.max(0.05 * input * seconds, firstHalfPeak, 50) };
  }
  return { groups: out, flat: Object.values(out).every((g) => g.flat) };
}

async function produceFiller(producer: Producer, topic: string, count: number, size: number): Promise<void> {
  const value = randomBytes(size);
  for (let i = 0; i < count; i += 1_000) {
    const n = Math.min(1_000, count - i);
    await producer.sendBatch({ acks: -1, topicMessages: [{ topic, messages: Array.from({ length: n }, (_, j) => ({ key: `k${(i + j) % 64}`, value })) }] });
  }
}

// ---------------------------------------------------------------------------------------------
// the run

interface Ctx {
  root: string;
  infra: Infra;
  kafka: Kafka;
  admin: Admin;
  producer: Producer;
  registry: SchemaRegistryServer;
  receiver: Child;
  rec: ReceiverClient;
  /** Filled by the end-to-end scenario, used by the soak. */
  e2eRate?: number;
  /** Filled by the end-to-end scenario: Kafka records written per delivered event (median). */
  recordsPerDeliveredEvent?: number;
}

const groupsOf = (ctx: Ctx, extra: Record<string, number>) => ({ receiver: ctx.receiver.pid, ...extra });

/** CPU microseconds per item, per part of the run. */
const perItem = (cpu: { totalUs: number; byPart: Record<string, number> }, items: number): Record<string, number> =>
  Object.fromEntries([...Object.entries(cpu.byPart), ['total', cpu.totalUs] as [string, number]].map(([k, us]) => [k, us / Math.max(1, items)]));

function medianParts(parts: Record<string, number>[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of new Set(parts.flatMap((p) => Object.keys(p)))) out[k] = round(median(parts.map((p) => p[k] ?? 0)), 0);
  return out;
}

/** Raw pass-through of `count` prefilled records in its own process; rate and CPU per record. */
async function passThroughRep(ctx: Ctx, from: string, to: string, count: number): Promise<{ perS: number; cpuUsPerMsg: number; byPart: Record<string, number> }> {
  const child = spawnScript('passthrough', 'bench/passthrough.ts', [], { ...process.env, PASS_BROKERS: ctx.infra.brokers.join(','), PASS_FROM: from, PASS_TO: to, PASS_GROUP: `bench-pass-${runTag()}`, PASS_COUNT: String(count) }, path.join(ctx.root, `passthrough-${runTag()}.log`));
  try {
    await child.waitForOutput(/passthrough joined/, 60_000);
    const before = cpuSnapshot({ passthrough: child.pid });
    const [, json] = await child.waitForOutput(/passthrough result (\{.*\})/, 300_000);
    const after = cpuSnapshot({ passthrough: child.pid });
    const r = JSON.parse(json!) as { count: number; per_s: number };
    const cpu = cpuBetween(before, after);
    const us = (cpu.byPart.passthrough ?? 0) + (cpu.byPart['broker JVM'] ?? 0);
    return { perS: r.per_s, cpuUsPerMsg: us / r.count, byPart: cpu.byPart };
  } finally {
    await child.stop(5_000);
  }
}

/**
 * A fresh broker spends its first minute or so compiling its hot paths (the JVM's JIT threads
 * are part of the broker's CPU), which would be charged to whichever scenario runs first and to
 * the Kafka side only, as the HTTP baselines never touch the broker. So the broker first moves
 * BROKER_WARMUP_MESSAGES records through a raw pass-through, as a long-running broker would have.
 */
async function warmBroker(ctx: Ctx): Promise<void> {
  if (S.brokerWarmup <= 0) return;
  const from = 'bench.warmup.in';
  const to = 'bench.warmup.out';
  await ensureTopics(ctx.kafka, [from, to].map((topic) => ({ topic, partitions: PARTITIONS })), 1);
  await produceFiller(ctx.producer, from, S.brokerWarmup, 1_300);
  const r = await passThroughRep(ctx, from, to, S.brokerWarmup);
  say(`broker warmed up: ${S.brokerWarmup} records produced and passed through (${Math.round(r.perS)}/s)`);
}

async function scenarioIngestAndDelivery(ctx: Ctx): Promise<void> {
  const bare = spawnScript('bare server', 'bench/bare-server.ts', [], process.env, path.join(ctx.root, 'bare-server.log'));
  const [, bareUrl] = await bare.waitForOutput(/bare server listening (\S+)/, 60_000);
  say('starting the service (STAGES=api,deliver) for ingest and delivery');
  const svc = await startInstance({ name: 'svc-ingest', root: ctx.root, prefix: 'bench1.', stages: 'api,deliver', infra: ctx.infra, logLevel: S.logLevel });
  try {
    const [flow] = await createFlows(svc, ctx.rec.hookUrl, 1, PARTITIONS);
    if (wants('ingest')) await timed('ingest', () => ingest(ctx, svc, flow!, bareUrl!));
    await bare.stop(5_000);
    if (wants('delivery')) await timed('delivery', () => delivery(ctx, svc, flow!));
  } finally {
    await svc.proc.stop();
    await bare.stop(5_000);
  }
}

async function ingest(ctx: Ctx, svc: ServiceInstance, flow: Flow, bareUrl: string): Promise<void> {
  const svcPool = pool(svc.url, S.concurrency);
  const barePool = pool(bareUrl, S.concurrency);
  const run = runTag();
  const body = (s: number) => taggedBody(run, s, epochMs());
  const svcRates: number[] = [];
  const bareRates: number[] = [];
  const errors: Record<string, number> = {};
  const cpuParts: Record<string, number>[] = [];
  const latency: Record<string, unknown> = {};
  try {
    for (let rep = 0; rep < S.reps; rep++) {
      // alternate, so that a slow moment of the shared machine hits both sides alike
      const cpu0 = cpuSnapshot(groupsOf(ctx, { service: svc.proc.pid }));
      const a = await closedLoop({ pool: svcPool, paths: [flow.hookPath], concurrency: S.concurrency, warmupMs: S.warmupS * 1000, measureMs: S.seconds * 1000, body, expect: 202 });
      cpuParts.push(perItem(cpuBetween(cpu0, cpuSnapshot(groupsOf(ctx, { service: svc.proc.pid }))), a.okTotal));
      const b = await closedLoop({ pool: barePool, paths: ['/v1/hooks/bare'], concurrency: S.concurrency, warmupMs: S.warmupS * 1000, measureMs: S.seconds * 1000, body, expect: 202 });
      for (const [k, v] of Object.entries(a.statuses)) errors[`service ${k}`] = (errors[`service ${k}`] ?? 0) + v;
      for (const [k, v] of Object.entries(b.statuses)) errors[`bare ${k}`] = (errors[`bare ${k}`] ?? 0) + v;
      svcRates.push(a.rate);
      bareRates.push(b.rate);
      say(`ingest rep ${rep + 1}/${S.reps}: service ${Math.round(a.rate)}/s, bare node:http ${Math.round(b.rate)}/s`);
    }
    // the Hook URL's own latency, request to 202 (after acks=all), paced and at saturation; and
    // how busy the service process was at saturation (CPU time over wall time, all its threads)
    for (const rate of [200, 1_000]) {
      const ms: number[] = [];
      await paced({ rate, durationMs: 3_000, send: (q) => post(svcPool, flow.hookPath, body(q), 202).then((r) => r.ok) });
      const sent = await paced({ rate, durationMs: Math.min(20, S.seconds) * 1000, send: async (q) => {
        const t0 = performance.now();
        const r = await post(svcPool, flow.hookPath, body(q), 202);
        if (r.ok) ms.push(performance.now() - t0);
        return r.ok;
      } });
      latency[`at_${rate}_per_s`] = { ...summary(ms), accepted: sent.ok, refused: sent.errors };
    }
    const ms: number[] = [];
    const cpu0 = cpuSnapshot(groupsOf(ctx, { service: svc.proc.pid }));
    const t0 = performance.now();
    const sat = await closedLoop({ pool: svcPool, paths: [flow.hookPath], concurrency: S.concurrency, warmupMs: 0, measureMs: S.seconds * 1000, body, expect: 202, timed: (elapsed) => ms.push(elapsed) });
    const wallUs = (performance.now() - t0) * 1000;
    const busy = cpuBetween(cpu0, cpuSnapshot(groupsOf(ctx, { service: svc.proc.pid }))).byPart.service ?? 0;
    latency.saturation = { ...summary(ms), accepted_per_s: Math.round(sat.rate), service_cpu_share_of_one_core: round(busy / wallUs) };
  } finally {
    await Promise.all([svcPool.close(), barePool.close()]);
  }
  const lat = (k: string) => latency[k] as { p50: number; p99: number } | undefined;
  const latText = ['at_200_per_s', 'at_1000_per_s', 'saturation'].map((k) => `${k.replace(/_/g, ' ')} p50 ${round(lat(k)?.p50 ?? NaN)} ms / p99 ${round(lat(k)?.p99 ?? NaN)} ms`).join('; ');
  rateEntry({
    name: 'ingest',
    metric: 'accepted webhooks per second at the Hook URL',
    unit: 'req/s',
    values: svcRates,
    baseline: { name: 'bare node:http 202', values: bareRates, unit: 'req/s' },
    notes: `POST /v1/hooks/{ingester_id} with a 1 KB JSON body, ${S.concurrency} keep-alive connections without pipelining (undici Pool), closed loop, ${S.warmupS} s warm-up then ${S.seconds} s counted per repetition; 202 only after Kafka acknowledged the event (acks=all). The service process runs STAGES=api,deliver (nothing downstream consumes, so the figure is the Hook URL itself). Its ingest rate limits are set far above the load: the limiter still leases tokens from Redis as in production, but never refuses. Baseline: a bare node:http server in its own process that reads the body and answers 202 with a small JSON document, same load generator, alternating repetitions. ratio = value / baseline. CPU per accepted webhook (us, median): ${partsText(medianParts(cpuParts))}. The Hook URL's latency from request to 202, paced (open loop, 20 s after 3 s at the rate) and at saturation (the closed loop, ${S.seconds} s): ${latText}; at saturation the service process used ${(latency.saturation as { service_cpu_share_of_one_core: number }).service_cpu_share_of_one_core} of one core's time (all its threads).`,
    details: { per_rep: { service: svcRates.map((x) => Math.round(x)), bare: bareRates.map((x) => Math.round(x)) }, errors, cpu_us_per_request_median: medianParts(cpuParts), latency_ms: latency },
  });
}

async function delivery(ctx: Ctx, svc: ServiceInstance, flow: Flow): Promise<void> {
  const topics = topicNames(svc.prefix);
  const codec = AvroCodec.connect(ctx.infra.registryUrl);
  await codec.register({ [topics.deliveryRequested]: 'DeliveryTask' });
  const n = S.deliveryTasks;
  const receiverPool = pool(new URL(ctx.rec.base).origin, S.concurrency);
  const stageRates: number[] = [];
  const rawRates: number[] = [];
  const cpuParts: Record<string, number>[] = [];
  let overlapNote = '';
  /** Rate over arrivals from `from` (epoch ms) up to the 95th percentile arrival. */
  const rateOf = (arrivals: number[], from: number) => {
    const { rate, overlapped } = backlogRate(arrivals, from);
    if (overlapped) overlapNote = ' In some repetition the tasks were produced for most of the run, so the deliver stage was not backlogged throughout.';
    return rate;
  };
  try {
    for (let rep = 0; rep < S.reps; rep++) {
      // the deliver stage: a backlog of tasks on deliveries.requested, counted at the receiver
      let run = runTag();
      await ctx.rec.reset(run);
      const producedAt = await produceDeliveryTasks(ctx.producer, codec, topics.deliveryRequested, flow, n, run, () => flow.destinationId);
      const cpu0 = cpuSnapshot(groupsOf(ctx, { service: svc.proc.pid }));
      const got = await ctx.rec.waitFor(n, Math.max(120_000, (n / 20) * 1000));
      if (got < n) throw new Error(`the deliver stage delivered ${got} of ${n} tasks in time; see ${svc.proc.logFile}`);
      const arrivals = (await ctx.rec.detail()).arrivals;
      cpuParts.push(perItem(cpuBetween(cpu0, cpuSnapshot(groupsOf(ctx, { service: svc.proc.pid }))), arrivals.filter((a) => a >= producedAt).length));
      stageRates.push(rateOf(arrivals, producedAt));

      // raw undici, same receiver, same concurrency, for the same measured time as ingest
      run = runTag();
      await ctx.rec.reset(run);
      const raw = await closedLoop({ pool: receiverPool, paths: ['/hook'], concurrency: S.concurrency, warmupMs: S.warmupS * 1000, measureMs: S.seconds * 1000, body: (s) => taggedBody(run, s, epochMs()), expect: 200 });
      if (raw.errors > 0) throw new Error(`raw undici: ${raw.errors} requests failed`);
      rawRates.push(raw.rate);
      say(`delivery rep ${rep + 1}/${S.reps}: deliver stage ${Math.round(stageRates[rep]!)}/s, raw undici ${Math.round(rawRates[rep]!)}/s`);
    }
  } finally {
    await receiverPool.close();
  }
  rateEntry({
    name: 'delivery',
    metric: 'deliveries per second from the deliver stage to a local receiver',
    unit: 'deliveries/s',
    values: stageRates,
    baseline: { name: 'raw undici POST', values: rawRates, unit: 'req/s' },
    notes: `Isolated: ${n} DeliveryTask records (1 KB JSON body, one destination) produced onto deliveries.requested while the service runs STAGES=api,deliver; counted at the receiver process from the moment the backlog is fully produced up to the 95th-percentile arrival. The stage's concurrency is DELIVERY_PER_DESTINATION (32) for the one destination; each delivery is signed (Standard Webhooks), sent through the SSRF-guarded agent, and its outcome (the record of its delivered state) is produced (acks=all) before its offset may be committed. Baseline: 1 KB POSTs from an undici Pool with ${S.concurrency} connections (no pipelining, closed loop) to the same receiver, ${S.warmupS} s warm-up then ${S.seconds} s counted. ratio = value / baseline. CPU per delivery (us, median): ${partsText(medianParts(cpuParts))}.${overlapNote}`,
    details: { per_rep: { deliver_stage: stageRates.map((x) => Math.round(x)), raw_undici: rawRates.map((x) => Math.round(x)) }, cpu_us_per_delivery_median: medianParts(cpuParts) },
  });
}

async function scenarioEndToEnd(ctx: Ctx): Promise<void> {
  // the baseline's topics, prefilled once; each repetition reads them with a new group
  const passIn = 'bench.pass.in';
  const passOut = 'bench.pass.out';
  const latIn = 'bench.lat.in';
  const latOut = 'bench.lat.out';
  await ensureTopics(ctx.kafka, [passIn, passOut, latIn, latOut].map((topic) => ({ topic, partitions: PARTITIONS })), 1);
  await produceFiller(ctx.producer, passIn, S.passMessages, 1_300);

  say('starting the service (all stages) for end to end, CPU, latency and memory');
  const svc = await startInstance({ name: 'svc-pipeline', root: ctx.root, prefix: 'bench2.', stages: 'all', infra: ctx.infra, logLevel: S.logLevel });
  const svcPid = svc.proc.pid;
  try {
    const flows = await createFlows(svc, ctx.rec.hookUrl, S.flows, PARTITIONS);
    const paths = flows.map((f) => f.hookPath);
    const groupPrefix = groupPrefixOf(svc.prefix);
    const hookPool = pool(svc.url, S.concurrency);
    try {
      // warm-up: every group joined, one event through, then BENCH_WARM_WEBHOOKS through the closed loop
      await warmUp(ctx, { name: `service (see ${svc.proc.logFile})`, pool: hookPool, paths });

      if (wants('end_to_end')) await timed('end_to_end', () => endToEnd(ctx, svc, hookPool, paths, groupPrefix));
      if (wants('memory')) await timed('memory', () => memory(ctx, svcPid, hookPool, paths, groupPrefix));
    } finally {
      await hookPool.close();
    }
  } finally {
    await svc.proc.stop();
  }

  async function endToEnd(ctx: Ctx, svc: ServiceInstance, hookPool: ReturnType<typeof pool>, paths: string[], groupPrefix: string): Promise<void> {
    const rates: number[] = [];
    const cpuPerEvent: number[] = [];
    const parts: Record<string, number>[] = [];
    const passRates: number[] = [];
    const passCpu: number[] = [];
    const lags: ReturnType<typeof lagVerdict>[] = [];
    const lagOf = lagTracker(ctx.admin, groupPrefix);
    const recordsPerEvent: number[] = [];
    const recordsByTopic: Record<string, number>[] = [];
    const requests: RequestsPerEvent[] = [];
    // what the run costs with no traffic: consumers polling, the broker answering them
    const idle0 = cpuSnapshot(groupsOf(ctx, { service: svc.proc.pid }));
    const idleT = performance.now();
    await sleep(Math.max(2_000, S.warmupS * 1000));
    const idleCpu = cpuBetween(idle0, cpuSnapshot(groupsOf(ctx, { service: svc.proc.pid })));
    const idleS = (performance.now() - idleT) / 1000;
    const idlePerS = Object.fromEntries(Object.entries(idleCpu.byPart).map(([k, us]) => [k, round(us / idleS / 1000, 1)]));
    for (let rep = 0; rep < S.reps; rep++) {
      const run = runTag();
      await ctx.rec.reset(run);
      const records0 = await recordsOnTopics(ctx.admin, svc.prefix);
      const delivered = deliveredCount(ctx);
      let accepted = 0;
      const warmupMs = S.warmupS * 1000;
      const measureMs = S.seconds * 1000;
      const window = (async () => {
        await sleep(warmupMs);
        const req0 = await kafkaRequests(svc.url);
        const c0 = (await ctx.rec.stats()).distinct;
        const cpu0 = cpuSnapshot(groupsOf(ctx, { service: svc.proc.pid }));
        const t0 = performance.now();
        const samples: { at: number; groups: Record<string, GroupLag> }[] = [{ at: 0, groups: await lagOf() }];
        for (let k = 1; k * LAG_EVERY_MS < measureMs; k++) {
          await sleep(Math.max(0, t0 + k * LAG_EVERY_MS - performance.now()));
          samples.push({ at: (performance.now() - t0) / 1000, groups: await lagOf() });
        }
        await sleep(Math.max(0, t0 + measureMs - performance.now()));
        const c1 = (await ctx.rec.stats()).distinct;
        const cpu1 = cpuSnapshot(groupsOf(ctx, { service: svc.proc.pid }));
        const ms = performance.now() - t0;
        const req1 = await kafkaRequests(svc.url);
        return { events: c1 - c0, ms, cpu: cpuBetween(cpu0, cpu1), samples, requests: requestsPerEvent(req0, req1, c1 - c0) };
      })();
      const load = await closedLoop({ pool: hookPool, paths, concurrency: S.concurrency, warmupMs, measureMs, body: (s) => taggedBody(run, s, epochMs()), expect: 202, gate: (issued) => issued - delivered.value() < S.e2eWindow, onAccepted: () => accepted++ });
      const w = await window;
      // drain, so that the next repetition starts from an empty pipeline
      const got = await ctx.rec.waitFor(accepted, 120_000);
      await delivered.stop();
      if (got < accepted) throw new Error(`${accepted - got} of ${accepted} accepted events were not delivered within 120 s after the load stopped`);
      if (w.events <= 0) throw new Error('no event was delivered in the measured window');
      // every record the repetition wrote, once the evidence batch and the log lines behind the last delivery are out
      await sleep(2_000);
      const records1 = await recordsOnTopics(ctx.admin, svc.prefix);
      const byTopic: Record<string, number> = {};
      for (const [topic, n] of records1) {
        const d = n - (records0.get(topic) ?? 0);
        if (d > 0) byTopic[topic.slice(svc.prefix.length)] = round(d / got, 2);
      }
      recordsByTopic.push(byTopic);
      recordsPerEvent.push(Object.values(byTopic).reduce((a, b) => a + b, 0));
      const rate = (w.events / w.ms) * 1000;
      rates.push(rate);
      cpuPerEvent.push(w.cpu.totalUs / w.events);
      parts.push(Object.fromEntries(Object.entries(w.cpu.byPart).map(([k, us]) => [k, round(us / w.events, 0)])));
      lags.push(lagVerdict(w.samples));
      requests.push(w.requests);
      const pass = await passThroughRep(ctx, passIn, passOut, S.passMessages);
      passRates.push(pass.perS);
      passCpu.push(pass.cpuUsPerMsg);
      say(`end-to-end rep ${rep + 1}/${S.reps}: ${Math.round(rate)} delivered/s (x${HOPS} hops = ${Math.round(rate * HOPS)}), lag flat: ${lags[rep]!.flat}, ${Math.round(cpuPerEvent[rep]!)} CPU us/event, ${w.requests.total} Kafka requests/event, ${load.errors} refused; raw pass-through ${Math.round(pass.perS)}/s, ${Math.round(pass.cpuUsPerMsg)} CPU us/msg`);
    }
    const v = overReps(rates, 0);
    const b = overReps(passRates, 0);
    const allFlat = lags.every((l) => l.flat);
    ctx.e2eRate = v.value;
    entry({
      name: 'end_to_end',
      metric: `delivered events per second x ${HOPS} Kafka hops`,
      unit: 'hop-records/s',
      value: round(v.value * HOPS, 0),
      spread: { min: round(v.spread.min * HOPS, 0), max: round(v.spread.max * HOPS, 0) },
      repetitions: S.reps,
      baseline: { name: 'raw kafkajs consume -> produce pass-through', ...b, unit: 'msg/s' },
      ratio: round((v.value * HOPS) / b.value),
      target: 0.5,
      better: 'higher',
      notes: `Delivered events/s (median ${v.value}, min ${v.spread.min}, max ${v.spread.max}) counted at the receiver process, ingest -> validate -> filter -> route -> deliver, all stages in one service process (sink and evidence included, LOG_LEVEL=${S.logLevel}). ${HOPS} hops: the records the stages decide per event (validated, filtered, deliveries.requested, deliveries.completed), each one hop of the baseline's unit (one record consumed, one produced); validate, filter and route run as one chain, so the first three come from one consume of webhooks.received, and deliver consumes deliveries.requested for the fourth; the Hook URL's produce to received has no consume and is not counted (it is the ingest scenario). Load: ${S.concurrency} connections over ${paths.length} ingester -> destination flows on different partitions, closed over the whole pipeline: at most ${S.e2eWindow} events sent and not yet delivered, so consumer lag is bounded by construction; lag of every service consumer group sampled each second, flat in ${lags.filter((l) => l.flat).length} of ${lags.length} repetitions (flat: over the window a group's backlog grew by less than 5% of what arrived, or less than its own peak in the first half); largest backlogs (median of each window's peak, records): ${topBacklogs(lags)}. ${S.warmupS} s warm-up, ${S.seconds} s counted. Baseline: raw kafkajs in its own process consuming ${S.passMessages} prefilled 1.3 KB records and producing each fetched batch in one request with acks=all, committing per batch, the stages' consumer settings. ratio = value x hops / baseline.${allFlat ? '' : ' NOTE: lag was not flat in every repetition (see details).'}`,
      details: { delivered_per_s: rates.map((x) => Math.round(x)), pass_through_per_s: passRates.map((x) => Math.round(x)), lag: lags },
    });
    const r = overReps(recordsPerEvent, 2);
    ctx.recordsPerDeliveredEvent = r.value;
    const bareRecords = HOPS + 1;
    entry({
      name: 'records_per_event',
      metric: 'Kafka records written per delivered event, all topics',
      unit: 'records/event',
      ...r,
      repetitions: S.reps,
      baseline: { name: `a bare pipeline: the accepted record and one per hop (${HOPS})`, value: bareRecords, spread: { min: bareRecords, max: bareRecords }, unit: 'records/event' },
      ratio: round(bareRecords / r.value),
      target: 1,
      better: 'higher',
      notes: `Sum over every topic of the deployment of the high-water marks' growth over a whole end-to-end repetition (load, then drain until every accepted event was delivered, then 2 s for the evidence batch and log lines behind it), divided by the events delivered in it. Per topic (median repetition): ${Object.entries(recordsByTopic[recordsPerEvent.indexOf([...recordsPerEvent].sort((a, b) => a - b)[Math.floor((recordsPerEvent.length - 1) / 2)]!)] ?? {}).map(([t, n]) => `${t} ${n}`).join(', ')}. Target: at most ${bareRecords} records per delivered event (ratio = ${bareRecords} / value >= 1).`,
      details: { per_rep: recordsPerEvent, by_topic: recordsByTopic },
    });
    const c = overReps(cpuPerEvent, 0);
    const cb = overReps(passCpu.map((x) => x * HOPS), 0);
    const partMedians = medianParts(parts);
    entry({
      name: 'cpu_per_event',
      metric: 'CPU time per delivered event, all processes',
      unit: 'us/event',
      ...c,
      repetitions: S.reps,
      baseline: { name: `raw pass-through CPU per message x ${HOPS} hops`, ...cb, unit: 'us/event' },
      ratio: round(cb.value / c.value),
      target: 0.5,
      better: 'higher',
      notes: `utime+stime from /proc/<pid>/stat (CLK_TCK ticks) of every process of the run (this load generator, its children and every member of their process groups: service, broker JVM, Redis, receiver) read at the start and end of each end-to-end window, divided by the events delivered in it. Median per part (us/event): ${partsText(partMedians)}. With no traffic the run spends (ms of CPU per second): ${partsText(idlePerS)}, mostly consumers polling the broker; that fixed cost is part of the figure. Baseline: CPU of the pass-through process and the broker over a pass-through run, per message, times ${HOPS}; it has no HTTP, Avro, transitions, logs, sink or evidence. Target (this suite's own): ratio = baseline / value >= 0.5.`,
      details: { per_rep: cpuPerEvent.map((x) => Math.round(x)), per_part_median: partMedians, idle_cpu_ms_per_s: idlePerS },
    });

    // latency at 80% of the measured rate, against the raw pass-through at the same rate
    const rate = Math.max(1, Math.round(0.8 * v.value));
    const warmMs = Math.min(3_000, S.latencyS * 1000);
    const warmRun = runTag();
    await ctx.rec.reset(warmRun);
    await paced({ rate, durationMs: warmMs, send: (s, due) => post(hookPool, paths[s % paths.length]!, taggedBody(warmRun, s, due), 202).then((r) => r.ok) });
    const run = runTag();
    await ctx.rec.reset(run);
    const sent = await paced({ rate, durationMs: S.latencyS * 1000, send: (s, due) => post(hookPool, paths[s % paths.length]!, taggedBody(run, s, due), 202).then((r) => r.ok) });
    const got = await ctx.rec.waitFor(sent.ok, 120_000);
    const lat = (await ctx.rec.detail()).latencies;
    const raw = await rawLatency(ctx, latIn, latOut, rate, S.latencyS * 1000, warmMs);
    const e2eP99 = quantile(lat, 0.99);
    const rawP99 = quantile(raw, 0.99);
    entry({
      name: 'end_to_end_latency',
      metric: `ingest -> delivered latency p99 at ${rate} events/s (80% of the end-to-end rate)`,
      unit: 'ms',
      value: round(e2eP99),
      spread: { min: round(quantile(lat, 0.5)), max: round(Math.max(...lat)) },
      repetitions: 1,
      baseline: { name: 'raw pass-through p99 (one hop) at the same rate', value: round(rawP99), spread: { min: round(quantile(raw, 0.5)), max: round(Math.max(...raw)) }, unit: 'ms' },
      ratio: round((HOPS * rawP99) / e2eP99),
      target: 0.5,
      better: 'higher',
      notes: `One paced (open-loop) run of ${S.latencyS} s after ${warmMs / 1000} s of warm-up; latency from the time each webhook was due to be sent until the receiver got it, so a stall counts in full. p50 ${round(quantile(lat, 0.5))} ms, p99 ${round(e2eP99)} ms over ${lat.length} events (${got} of ${sent.ok} accepted delivered${sent.errors ? `, ${sent.errors} refused` : ''}); here spread is {p50, max}, not min/max over repetitions. Beside it the raw pass-through at the same rate, produced through the Hook URL's batching (BatchingProducer, acks=all), one consume -> produce, consumed back: p50 ${round(quantile(raw, 0.5))} ms, p99 ${round(rawP99)} ms over ${raw.length} records. Target (this suite's own): ratio = ${HOPS} x raw p99 / end-to-end p99 >= 0.5.`,
      details: { rate_per_s: rate, end_to_end_ms: summary(lat), raw_pass_through_ms: summary(raw) },
    });

    // broker requests per delivered event at two steady rates, beside the closed loop's (saturation)
    const atRates: { rate: number; requests: RequestsPerEvent; cpuUsPerEvent: number; cpuByPart: Record<string, number>; delivered: number }[] = [];
    for (const steady of REQUEST_RATES) {
      const tag = runTag();
      await ctx.rec.reset(tag);
      const req0 = await kafkaRequests(svc.url);
      const cpu0 = cpuSnapshot(groupsOf(ctx, { service: svc.proc.pid }));
      const sentAt = await paced({ rate: steady, durationMs: S.seconds * 1000, send: (s, due) => post(hookPool, paths[s % paths.length]!, taggedBody(tag, s, due), 202).then((r) => r.ok) });
      const delivered = await ctx.rec.waitFor(sentAt.ok, 120_000);
      const cpu1 = cpuSnapshot(groupsOf(ctx, { service: svc.proc.pid }));
      const req1 = await kafkaRequests(svc.url);
      if (delivered < sentAt.ok) throw new Error(`${sentAt.ok - delivered} of ${sentAt.ok} webhooks accepted at ${steady}/s were not delivered within 120 s`);
      const cpu = cpuBetween(cpu0, cpu1);
      atRates.push({ rate: steady, requests: requestsPerEvent(req0, req1, delivered), cpuUsPerEvent: round(cpu.totalUs / delivered, 0), cpuByPart: Object.fromEntries(Object.entries(cpu.byPart).map(([k, us]) => [k, round(us / delivered, 0)])), delivered });
      say(`at ${steady}/s: ${requestsText(atRates.at(-1)!.requests)} Kafka requests per delivered event, ${atRates.at(-1)!.cpuUsPerEvent} CPU us/event`);
    }
    const totals = requests.map((r) => r.total);
    const rq = overReps(totals, 3);
    const medianRep = requests[totals.indexOf([...totals].sort((a, b) => a - b)[Math.floor((totals.length - 1) / 2)]!)]!;
    entry({
      name: 'broker_requests',
      metric: 'Kafka requests per delivered event at saturation, every client of the service process',
      unit: 'requests/event',
      ...rq,
      repetitions: S.reps,
      baseline: { name: 'one request per delivered event', value: 1, spread: { min: 1, max: 1 }, unit: 'requests/event' },
      ratio: round(1 / rq.value),
      target: 1,
      better: 'higher',
      notes: `Requests the service process's Kafka clients had answered (hookline_kafka_requests_total, counted in the client, read from /metrics) over each counted window of the end-to-end closed loop, divided by the events delivered in it. Median repetition: ${requestsText(medianRep)}; per API: ${Object.entries(medianRep.by_api).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(', ')}; CPU ${round(median(cpuPerEvent), 0)} us/event. At steady rates (paced ${S.seconds} s, then until every accepted webhook was delivered; counted from the first send to the last delivery): ${atRates.map((a) => `${a.rate}/s: ${requestsText(a.requests)}, ${a.cpuUsPerEvent} CPU us/event (service ${a.cpuByPart.service ?? '?'}, broker ${a.cpuByPart['broker JVM'] ?? '?'})`).join('; ')}. The broker's cost follows its request count more than its record count: consumers idle-polling (fetches with a 500 ms wait), heartbeats and commits are a fixed cost per second that a low rate shares among few events. Target (this suite's own): at most 1 request per delivered event at saturation (ratio = 1 / value >= 1).`,
      details: { per_rep: requests, at_rates: atRates },
    });
  }
}

/** Steady rates (webhooks/s) at which broker requests per delivered event are counted, beside saturation. */
const REQUEST_RATES = [200, 1_000];

/** One pass-through hop at `rate` records/s: produce (batched as the Hook URL does) -> pass-through process -> consume. */
async function rawLatency(ctx: Ctx, from: string, to: string, rate: number, durationMs: number, warmMs: number): Promise<number[]> {
  const child = spawnScript('passthrough (latency)', 'bench/passthrough.ts', [], { ...process.env, PASS_BROKERS: ctx.infra.brokers.join(','), PASS_FROM: from, PASS_TO: to, PASS_GROUP: `bench-lat-${runTag()}`, PASS_COUNT: '0' }, path.join(ctx.root, 'passthrough-latency.log'));
  const consumer = ctx.kafka.consumer({ groupId: `bench-lat-read-${runTag()}`, maxWaitTimeInMs: 50 });
  try {
    await child.waitForOutput(/passthrough joined/, 60_000);
    await consumer.connect();
    await consumer.subscribe({ topics: [to], fromBeginning: false });
    const joined = new Promise<void>((resolve) => consumer.on(consumer.events.GROUP_JOIN, () => resolve()));
    let measureFrom = Number.POSITIVE_INFINITY;
    const latencies: number[] = [];
    let seen = 0;
    await rawLoop(consumer, {
      commit: false,
      fetched: (messages) => {
        const at = epochMs();
        for (const m of messages) {
          seen++;
          const due = m.value!.readDoubleBE(0);
          if (due >= measureFrom) latencies.push(at - due);
        }
      },
    });
    await joined;
    await sleep(1_000);
    const batching = new BatchingProducer(ctx.producer);
    const filler = randomBytes(1_300);
    const send = (_s: number, due: number) => {
      const value = Buffer.from(filler);
      value.writeDoubleBE(due, 0);
      return batching.send([{ topic: from, messages: [{ key: `k${_s % 64}`, value }] }]).then(() => true);
    };
    await paced({ rate, durationMs: warmMs, send });
    measureFrom = epochMs();
    const r = await paced({ rate, durationMs, send });
    const expected = Math.floor((rate * warmMs) / 1000) + r.ok;
    const deadline = Date.now() + 60_000;
    while (seen < expected && Date.now() < deadline) await sleep(50);
    return latencies;
  } finally {
    await consumer.disconnect().catch(() => undefined);
    await child.stop(5_000);
  }
}

async function memory(ctx: Ctx, pid: number, hookPool: ReturnType<typeof pool>, paths: string[], groupPrefix: string): Promise<void> {
  const rate = Math.max(1, Math.round((ctx.e2eRate ?? 400) * S.soakFraction));
  const warm = runTag();
  await ctx.rec.reset(warm);
  await paced({ rate, durationMs: S.soakWarmupS * 1000, send: (s, due) => post(hookPool, paths[s % paths.length]!, taggedBody(warm, s, due), 202).then((r) => r.ok) });
  const run = runTag();
  await ctx.rec.reset(run);
  const samples: number[] = [];
  const lagOf = lagTracker(ctx.admin, groupPrefix);
  const lagStart = await lagOf();
  const t0 = performance.now();
  const timer = setInterval(() => {
    const rss = rssBytes(pid);
    if (rss !== undefined) samples.push(rss / 2 ** 20);
  }, 1_000);
  let sent: Awaited<ReturnType<typeof paced>>;
  try {
    sent = await paced({ rate, durationMs: S.soakS * 1000, send: (s, due) => post(hookPool, paths[s % paths.length]!, taggedBody(run, s, due), 202).then((r) => r.ok) });
  } finally {
    clearInterval(timer);
  }
  const seconds = (performance.now() - t0) / 1000;
  const lagEnd = await lagOf();
  const got = await ctx.rec.waitFor(sent.ok, 120_000);
  if (samples.length < 3) throw new Error('too few RSS samples');
  const windowN = Math.max(1, Math.min(60, Math.floor(samples.length / 3)));
  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const first = avg(samples.slice(0, windowN));
  const last = avg(samples.slice(-windowN));
  const peak = Math.max(...samples);
  const ratio = last / first;
  entry({
    name: 'memory',
    metric: 'peak RSS of the service process over a sustained run',
    unit: 'MiB',
    value: round(peak, 1),
    spread: { min: round(Math.min(...samples), 1), max: round(peak, 1) },
    repetitions: 1,
    baseline: { name: `first-${windowN} s average RSS`, value: round(first, 1), spread: { min: round(Math.min(...samples.slice(0, windowN)), 1), max: round(Math.max(...samples.slice(0, windowN)), 1) }, unit: 'MiB' },
    ratio: round(ratio, 3),
    target: 1.1,
    better: 'lower',
    notes: `VmRSS of the service's node process (all stages) sampled every second for ${Math.round(seconds)} s at a steady ${rate} webhooks/s (${Math.round(S.soakFraction * 100)}% of the end-to-end rate), after ${S.soakWarmupS} s of warm-up at that rate and the end-to-end runs before it. Peak ${round(peak, 1)} MiB; first-${windowN} s average ${round(first, 1)} MiB, last-${windowN} s average ${round(last, 1)} MiB; spread is the min/max sample. Flat: ratio = last / first average <= 1.1. ${got} of ${sent.ok} accepted delivered${sent.errors ? `, ${sent.errors} refused` : ''}.`,
    details: { rate_per_s: rate, first_avg_mib: round(first, 1), last_avg_mib: round(last, 1), peak_mib: round(peak, 1), samples_mib: samples.map((x) => round(x, 1)), lag_start: lagStart, lag_end: lagEnd },
  });
}

/**
 * The peer: what a Node team would otherwise write, a BullMQ relay (bench/bullmq-relay.ts) on a
 * redis-server of its own, against this service with all stages, through the same load
 * generator to the same receiver, alternating repetitions.
 */
async function scenarioPeerBullmq(ctx: Ctx): Promise<void> {
  const relayRedis = await startLocalRedis(path.join(ctx.root, 'relay-redis'));
  const relay = spawnScript('bullmq relay', 'bench/bullmq-relay.ts', [], { ...process.env, RELAY_REDIS_URL: relayRedis.url, RELAY_TARGET: ctx.rec.hookUrl, RELAY_CONCURRENCY: String(RELAY_CONCURRENCY) }, path.join(ctx.root, 'bullmq-relay.log'));
  let svc: ServiceInstance | undefined;
  const pools: ReturnType<typeof pool>[] = [];
  try {
    const [, relayUrl] = await relay.waitForOutput(/bullmq relay listening (\S+)/, 60_000);
    say('starting the service (all stages) for the BullMQ peer comparison');
    svc = await startInstance({ name: 'svc-peer', root: ctx.root, prefix: 'bench6.', stages: 'all', infra: ctx.infra, logLevel: S.logLevel });
    const flows = await createFlows(svc, ctx.rec.hookUrl, S.peerFlows, PARTITIONS);
    // every process of the run, named, so that each side is charged for its own processes only
    const groups = groupsOf(ctx, { service: svc.proc.pid, relay: relay.pid, 'relay redis': relayRedis.pid });
    const relayParts = new Set(['relay', 'relay redis', 'receiver', 'load generator']);
    const sides = [
      { name: 'service', pool: pool(svc.url, S.concurrency), paths: flows.map((f) => f.hookPath), counts: (part: string) => part !== 'relay' && part !== 'relay redis' },
      { name: 'relay', pool: pool(relayUrl!, S.concurrency), paths: ['/v1/hooks/relay'], counts: (part: string) => relayParts.has(part) },
    ];
    pools.push(...sides.map((x) => x.pool));
    for (const side of sides) await warmUp(ctx, side);
    const reps = sides.map(() => [] as Awaited<ReturnType<typeof closedLoopThrough>>[]);
    for (let rep = 0; rep < S.reps; rep++) {
      // alternate, so that a slow moment of the shared machine hits both sides alike
      for (const [i, side] of sides.entries()) reps[i]!.push(await closedLoopThrough(ctx, { ...side, groups }));
      const [a, b] = [reps[0]![rep]!, reps[1]![rep]!];
      say(`peer rep ${rep + 1}/${S.reps}: service ${Math.round(a.ingestPerS)} ingested/s, ${Math.round(a.deliveredPerS)} delivered/s, ${Math.round(a.cpuUsPerEvent)} CPU us/event; BullMQ relay ${Math.round(b.ingestPerS)} ingested/s, ${Math.round(b.deliveredPerS)} delivered/s, ${Math.round(b.cpuUsPerEvent)} CPU us/event`);
    }
    const [svcReps, relayReps] = [reps[0]!, reps[1]!];
    const med = (xs: { deliveredPerS: number }[]) => median(xs.map((x) => x.deliveredPerS));

    // latency at one paced rate both sustain: 80% of the slower side's delivered rate
    const rate = Math.max(1, Math.round(0.8 * Math.min(med(svcReps), med(relayReps))));
    const warmMs = Math.min(3_000, S.latencyS * 1000);
    const lat: { sent: number; got: number; ms: number[] }[] = [];
    for (const side of sides) {
      const warmRun = runTag();
      await ctx.rec.reset(warmRun);
      await paced({ rate, durationMs: warmMs, send: (s, due) => post(side.pool, side.paths[s % side.paths.length]!, taggedBody(warmRun, s, due), 202).then((r) => r.ok) });
      const run = runTag();
      await ctx.rec.reset(run);
      const sent = await paced({ rate, durationMs: S.latencyS * 1000, send: (s, due) => post(side.pool, side.paths[s % side.paths.length]!, taggedBody(run, s, due), 202).then((r) => r.ok) });
      const got = await ctx.rec.waitFor(sent.ok, 120_000);
      lat.push({ sent: sent.ok, got, ms: (await ctx.rec.detail()).latencies });
    }
    const [svcLat, relayLat] = [lat[0]!, lat[1]!];

    const figures = (xs: Awaited<ReturnType<typeof closedLoopThrough>>[], l: (typeof lat)[number]) => ({
      ingest_per_s: round(median(xs.map((x) => x.ingestPerS)), 0),
      delivered_per_s: round(median(xs.map((x) => x.deliveredPerS)), 0),
      latency_p50_ms: round(quantile(l.ms, 0.5)),
      latency_p99_ms: round(quantile(l.ms, 0.99)),
      cpu_us_per_event: round(median(xs.map((x) => x.cpuUsPerEvent)), 0),
    });
    const service = figures(svcReps, svcLat);
    const peer = figures(relayReps, relayLat);
    const ratios = Object.fromEntries(Object.keys(service).map((k) => [k, round(service[k as keyof typeof service] / peer[k as keyof typeof peer])])) as Record<keyof typeof service, number>;
    const sideText = (f: typeof service) => `${f.ingest_per_s} ingested/s, ${f.delivered_per_s} delivered/s, latency p50 ${f.latency_p50_ms} ms / p99 ${f.latency_p99_ms} ms, ${f.cpu_us_per_event} CPU us/event`;
    const v = overReps(svcReps.map((x) => x.deliveredPerS), 0);
    const b = overReps(relayReps.map((x) => x.deliveredPerS), 0);
    const refused = { service: svcReps.reduce((n, x) => n + x.refused, 0), relay: relayReps.reduce((n, x) => n + x.refused, 0) };
    entry({
      name: 'peer_bullmq',
      metric: 'delivered events per second, this service against a BullMQ relay',
      unit: 'events/s',
      ...v,
      repetitions: S.reps,
      baseline: { name: `BullMQ relay (node:http, Queue.add, Worker concurrency ${RELAY_CONCURRENCY}, undici)`, ...b, unit: 'events/s' },
      ratio: round(v.value / b.value),
      target: 1,
      better: 'higher',
      notes: `The peer is the relay a Node team would otherwise write (bench/bullmq-relay.ts, BullMQ ${bullmqVersion()}, its own process): a bare node:http handler reads the body, Queue.add, and answers 202 once the add resolved; a Worker in the same process (concurrency ${RELAY_CONCURRENCY}, the service's default per destination; the service's load goes to ${S.peerFlows === 1 ? 'one Hook URL feeding one destination, as the relay\'s one path feeds its Worker' : `${S.peerFlows} Hook URLs each feeding one destination`}) POSTs each job's body to the receiver with undici, retries a failed POST (5 attempts, exponential backoff from 1 s) and removes completed jobs. Its redis-server is its own, started by the bench with --appendonly yes --appendfsync everysec: an accepted job may be lost in the last second before a crash, the closest a single Redis comes to Kafka's acks=all (which this service waits for before its 202, with one broker here). It does not validate, filter, route, sign, produce outcome records or log deliveries to ClickHouse, all of which the service does (all stages in one process, sink and evidence included, LOG_LEVEL=${S.logLevel}). Same load for both: the end-to-end scenario's closed loop, ${S.concurrency} connections, 1 KB JSON bodies, at most ${S.e2eWindow} events sent and not yet delivered (so ingest follows delivery), ${S.warmupS} s warm-up then ${S.seconds} s counted, alternating service and relay each repetition, the same receiver process counting first arrivals. Service: ${sideText(service)}. BullMQ relay: ${sideText(peer)}. Ratios service / relay: ingest ${ratios.ingest_per_s}, delivered ${ratios.delivered_per_s}, p50 ${ratios.latency_p50_ms}, p99 ${ratios.latency_p99_ms}, CPU per event ${ratios.cpu_us_per_event} (for latency and CPU, above 1 means the service needs more). Latency: one paced (open-loop) run per side of ${S.latencyS} s after ${warmMs / 1000} s of warm-up at ${rate} events/s (80% of the slower side's delivered rate, so that both sustain it), from when each webhook was due until the receiver got it (service ${svcLat.got} of ${svcLat.sent}, relay ${relayLat.got} of ${relayLat.sent} accepted delivered). CPU: utime+stime from /proc/<pid>/stat over each counted window divided by the events delivered in it; the relay is charged for the relay process, its redis-server, the receiver and the load generator; the service for every other process of the run (service, broker JVM, its Redis, receiver, load generator), as cpu_per_event. The side not being measured stays up and idle (the service's consumers keep polling the broker), on the same 2 shared cores. Median CPU per part (us/event): service ${partsText(medianParts(svcReps.map((x) => x.byPart)))}; relay ${partsText(medianParts(relayReps.map((x) => x.byPart)))}.${refused.service + refused.relay > 0 ? ` Refused requests: service ${refused.service}, relay ${refused.relay}.` : ''} ratio = value / baseline; target (this suite's own): 1.`,
      details: {
        service,
        bullmq_relay: peer,
        ratio_service_to_relay: ratios,
        latency_rate_per_s: rate,
        latency_ms: { service: summary(svcLat.ms), bullmq_relay: summary(relayLat.ms) },
        per_rep: {
          service: { ingest_per_s: svcReps.map((x) => Math.round(x.ingestPerS)), delivered_per_s: svcReps.map((x) => Math.round(x.deliveredPerS)), cpu_us_per_event: svcReps.map((x) => Math.round(x.cpuUsPerEvent)) },
          bullmq_relay: { ingest_per_s: relayReps.map((x) => Math.round(x.ingestPerS)), delivered_per_s: relayReps.map((x) => Math.round(x.deliveredPerS)), cpu_us_per_event: relayReps.map((x) => Math.round(x.cpuUsPerEvent)) },
        },
        cpu_us_per_event_by_part_median: { service: medianParts(svcReps.map((x) => x.byPart)), bullmq_relay: medianParts(relayReps.map((x) => x.byPart)) },
        refused,
        relay_worker_concurrency: RELAY_CONCURRENCY,
      },
    });
  } finally {
    await Promise.all(pools.map((p) => p.close().catch(() => undefined)));
    await svc?.proc.stop();
    await relay.stop(5_000);
    await relayRedis.stop().catch(() => undefined);
  }
}

/**
 * An earlier commit of the service (BENCH_BEFORE_TREE: a checkout with its own node_modules, run
 * through tsx on BENCH_BEFORE_NODE, as its `npm start` did) against this one, under the
 * end-to-end closed loop, alternating; CPU of each service process per delivered event.
 */
const BEFORE: OtherTree | undefined = process.env.BENCH_BEFORE_TREE ? { dir: path.resolve(process.env.BENCH_BEFORE_TREE), node: process.env.BENCH_BEFORE_NODE ?? process.execPath } : undefined;

async function scenarioBeforeAfter(ctx: Ctx, before: OtherTree): Promise<void> {
  const commit = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: before.dir, encoding: 'utf8' }).trim();
  const nodeVersion = execFileSync(before.node, ['--version'], { encoding: 'utf8' }).trim();
  say(`starting this service and the one at ${commit} (${before.dir}, node ${nodeVersion}) for before/after`);
  const now = await startInstance({ name: 'svc-now', root: ctx.root, prefix: 'bench7.', stages: 'all', infra: ctx.infra, logLevel: S.logLevel });
  const then = await startInstance({ name: 'svc-before', root: ctx.root, prefix: 'bench8.', stages: 'all', infra: ctx.infra, logLevel: S.logLevel, from: before });
  const pools: ReturnType<typeof pool>[] = [];
  try {
    const groups = groupsOf(ctx, { service: now.proc.pid, 'service before': then.proc.pid });
    const sides = [];
    for (const [name, svc, own, other] of [['now', now, 'service', 'service before'], ['before', then, 'service before', 'service']] as const) {
      const flows = await createFlows(svc, ctx.rec.hookUrl, S.flows, PARTITIONS);
      const p = pool(svc.url, S.concurrency);
      pools.push(p);
      sides.push({ name, svc, own, pool: p, paths: flows.map((f) => f.hookPath), counts: (part: string) => part !== other });
    }
    for (const side of sides) await warmUp(ctx, side);
    const reps = sides.map(() => [] as Awaited<ReturnType<typeof closedLoopThrough>>[]);
    for (let rep = 0; rep < S.reps; rep++) {
      for (const [i, side] of sides.entries()) reps[i]!.push(await closedLoopThrough(ctx, { ...side, groups }));
      const [a, b] = [reps[0]![rep]!, reps[1]![rep]!];
      say(`before/after rep ${rep + 1}/${S.reps}: now ${Math.round(a.deliveredPerS)} delivered/s, service ${a.byPart.service} CPU us/event (all ${Math.round(a.cpuUsPerEvent)}); before ${Math.round(b.deliveredPerS)} delivered/s, service ${b.byPart['service before']} CPU us/event (all ${Math.round(b.cpuUsPerEvent)})`);
    }
    const serviceCpu = (xs: Awaited<ReturnType<typeof closedLoopThrough>>[], part: string) => xs.map((x) => x.byPart[part] ?? NaN);
    const v = overReps(serviceCpu(reps[0]!, 'service'), 0);
    const b = overReps(serviceCpu(reps[1]!, 'service before'), 0);
    const rate = (xs: Awaited<ReturnType<typeof closedLoopThrough>>[]) => round(median(xs.map((x) => x.deliveredPerS)), 0);
    const all = (xs: Awaited<ReturnType<typeof closedLoopThrough>>[]) => round(median(xs.map((x) => x.cpuUsPerEvent)), 0);
    entry({
      name: 'before_after',
      metric: `service process CPU per delivered event, this commit against ${commit}`,
      unit: 'us/event',
      ...v,
      repetitions: S.reps,
      baseline: { name: `the service at ${commit} (node ${nodeVersion}, through tsx)`, ...b, unit: 'us/event' },
      ratio: round(b.value / v.value),
      target: 2,
      better: 'higher',
      notes: `Both services run all stages in their own process on the same broker, Redis and receiver (their own topic prefixes), under the end-to-end scenario's closed loop (${S.concurrency} connections over ${S.flows} flows, at most ${S.e2eWindow} events in flight, ${S.warmupS} s warm-up, ${S.seconds} s counted), alternating each repetition; the idle one keeps polling. The earlier commit runs from ${before.dir} through tsx on node ${nodeVersion}, this one compiled on node ${process.version}. Delivered/s: now ${rate(reps[0]!)}, before ${rate(reps[1]!)}; CPU of every process per delivered event (the idle service excluded): now ${all(reps[0]!)}, before ${all(reps[1]!)} us. Median per part (us/event): now ${partsText(medianParts(reps[0]!.map((x) => x.byPart)))}; before ${partsText(medianParts(reps[1]!.map((x) => x.byPart)))}. ratio = before / now; target: half the earlier commit's service CPU per event (ratio >= 2).`,
      details: { before: { commit, node: nodeVersion, per_rep: reps[1] }, now: { node: process.version, per_rep: reps[0] } },
    });
  } finally {
    await Promise.all(pools.map((p) => p.close().catch(() => undefined)));
    await now.proc.stop();
    await then.proc.stop();
  }
}

/**
 * What sealing bodies on Kafka costs a delivered event, measured where it happens: the seconds the
 * service's sealer took (`hookline_body_sealing_seconds_total`: every seal, open and look-up
 * among its kept bodies, timed around that synchronous work) per accepted event under the
 * end-to-end closed loop, against the service process's CPU per delivered event in the same
 * repetition (as before_after reads it). Beside it, what the same work costs in isolation
 * (bench/sealing.ts): µs per seal and per open of a 1 KiB body times the seals and opens an event
 * takes, which leaves out what a seal costs among everything else the process does. And the two
 * formats side by side by body size, which places the sealer's switch between them.
 */
async function scenarioSealing(ctx: Ctx): Promise<void> {
  const formats = formatCosts();
  for (const f of formats) say(`sealing ${f.bytes} B: XChaCha20-Poly1305 ${f.xchacha_seal_us} us to seal, ${f.xchacha_open_us} to open; AES-256-GCM ${f.gcm_seal_us} and ${f.gcm_open_us}; sealed as format ${f.sealed_as}`);
  const cost = sealOpenCost();
  const counts = await sealingsPerEvent({ infra: ctx.infra, root: ctx.root, rec: ctx.rec, events: 1_000, logLevel: S.logLevel });
  const isolated = counts.seals * cost.sealUs + counts.opens * cost.openUs;
  say(`sealing in isolation: ${cost.sealUs} us per seal, ${cost.openUs} us per open of 1 KiB; per delivered event ${counts.seals} seals and ${counts.opens} opens = ${round(isolated, 1)} us`);
  const svc = await startInstance({ name: 'svc-sealing', root: ctx.root, prefix: 'bench10.', stages: 'all', infra: ctx.infra, logLevel: S.logLevel });
  const p = pool(svc.url, S.concurrency);
  const sealingSeconds = async () => {
    const m = /^hookline_body_sealing_seconds_total (\S+)$/m.exec(await (await fetch(`${svc.url}/metrics`)).text());
    if (!m) throw new Error('the service exposes no hookline_body_sealing_seconds_total');
    return Number(m[1]);
  };
  try {
    const flows = await createFlows(svc, ctx.rec.hookUrl, S.flows, PARTITIONS);
    const side = { name: 'sealing', pool: p, paths: flows.map((f) => f.hookPath), groups: groupsOf(ctx, { service: svc.proc.pid }), counts: () => true };
    await warmUp(ctx, side);
    const cpu: number[] = [];
    const sealing: number[] = [];
    const shares: number[] = [];
    for (let rep = 0; rep < S.reps; rep++) {
      const s0 = await sealingSeconds();
      const r = await closedLoopThrough(ctx, side);
      const us = ((await sealingSeconds()) - s0) * 1e6 / r.accepted;
      cpu.push(r.byPart.service ?? NaN);
      sealing.push(us);
      shares.push(us / (r.byPart.service ?? NaN));
      say(`sealing rep ${rep + 1}/${S.reps}: ${Math.round(r.deliveredPerS)} delivered/s, service ${r.byPart.service} CPU us/event, of which sealing ${round(us, 1)} us (${round((us / (r.byPart.service ?? NaN)) * 100, 2)}%)`);
    }
    const b = overReps(cpu, 0);
    const v = overReps(sealing, 1);
    const share = median(shares);
    entry({
      name: 'sealing',
      metric: 'service CPU that sealing bodies on Kafka takes per delivered event, measured in the service',
      unit: 'us/event',
      ...v,
      repetitions: S.reps,
      baseline: { name: 'service process CPU per delivered event (end-to-end closed loop)', ...b, unit: 'us/event' },
      ratio: round(share, 4),
      target: 0.03,
      better: 'lower',
      notes: `The service's sealer took ${v.value} us per event (hookline_body_sealing_seconds_total over the events accepted in a repetition: every seal, open and look-up among the kept bodies, timed around that synchronous work) = ${round(share * 100, 2)}% of the service process's CPU per delivered event (${b.value} us, under the end-to-end closed loop: ${S.concurrency} connections over ${S.flows} flows, ${S.warmupS} s warm-up, ${S.seconds} s counted; medians of ${S.reps}). It leaves out the garbage collection sealing adds. In isolation the same work costs ${round(isolated, 1)} us per event: ${counts.seals} seals x ${cost.sealUs} us + ${counts.opens} opens x ${cost.openUs} us (1 KiB bodies; XChaCha20-Poly1305 (libsodium) with the day's HKDF subkey of the tenant's data key, through the codec's sealer on this thread, CPU time, median of 5 rounds of 20,000), seals and opens counted over 1,000 webhooks through a service running every stage in the bench process: ingest seals once, every output carries the sealed bytes it was decided from, and the validate -> filter -> route chain, deliver and the sink find the body among the latest the process sealed or opened instead of opening it. Where they run in processes of their own, each opens once: ${round(cost.sealUs + 3 * cost.openUs, 1)} us in isolation. By body size (details.formats, sealBody and openBody alone, medians of 5 rounds): ${formats.map((f) => `${f.bytes} B ${f.xchacha_seal_us}/${f.xchacha_open_us} us XChaCha20-Poly1305 against ${f.gcm_seal_us}/${f.gcm_open_us} us AES-256-GCM`).join('; ')} (seal/open); the sealer uses XChaCha20-Poly1305 up to 8 KiB and AES-256-GCM above. ratio = sealing / CPU per event (median of the repetitions' ratios); target <= 3%.`,
      details: { per_rep_us: sealing.map((x) => round(x, 1)), per_rep_share: shares.map((x) => round(x, 4)), service_cpu_per_rep: cpu, isolated_us: round(isolated, 1), seal_us: cost.sealUs, open_us: cost.openUs, seals_per_event: counts.seals, opens_per_event: counts.opens, separate_processes_isolated_us: round(cost.sealUs + 3 * cost.openUs, 1), formats },
    });
  } finally {
    await p.close().catch(() => undefined);
    await svc.proc.stop();
  }
}

/** One event through each path of a side, so that every consumer group (or the relay's Worker) is running before it is measured. */
async function warmUp(ctx: Ctx, side: { name: string; pool: ReturnType<typeof pool>; paths: string[] }): Promise<void> {
  const warm = runTag();
  await ctx.rec.reset(warm);
  for (let i = 0; i < side.paths.length; i++) {
    const r = await post(side.pool, side.paths[i]!, taggedBody(warm, i, epochMs()), 202);
    if (!r.ok) throw new Error(`${side.name} warm-up webhook answered ${r.status}`);
  }
  if ((await ctx.rec.waitFor(side.paths.length, 120_000)) < side.paths.length) throw new Error(`${side.name} warm-up events were not delivered`);
  await warmLoad(ctx, side, S.warmWebhooks);
}

/**
 * `n` webhooks through a side under the closed loop's load (S.concurrency connections, at most
 * E2E_WINDOW not yet delivered), all of them delivered: a cold broker spends much of its CPU
 * compiling, and a cold service takes its first seconds to settle, so a measurement starts warm.
 */
async function warmLoad(ctx: Ctx, side: { name: string; pool: ReturnType<typeof pool>; paths: string[] }, n: number): Promise<void> {
  if (n <= 0) return;
  const started = performance.now();
  const run = runTag();
  await ctx.rec.reset(run);
  const delivered = deliveredCount(ctx);
  let issued = 0;
  let accepted = 0;
  try {
    await Promise.all(Array.from({ length: S.concurrency }, async () => {
      while (issued < n) {
        if (issued - delivered.value() >= S.e2eWindow) {
          await sleep(5);
          continue;
        }
        const s = issued++;
        const r = await post(side.pool, side.paths[s % side.paths.length]!, taggedBody(run, s, epochMs()), 202);
        if (r.ok) accepted++;
      }
    }));
    const got = await ctx.rec.waitFor(accepted, 120_000);
    if (got < accepted) throw new Error(`${side.name}: ${accepted - got} of ${accepted} warm-up webhooks were not delivered`);
  } finally {
    await delivered.stop();
  }
  say(`${side.name} warmed up: ${accepted} of ${n} webhooks accepted and delivered in ${Math.round((performance.now() - started) / 1000)} s`);
}

function bullmqVersion(): string {
  try {
    return (JSON.parse(readFileSync(path.join(REPO_ROOT, 'node_modules/bullmq/package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

/** The receiver's count of distinct events, read every 50 ms, for a closed loop that gates on what is in flight. */
function deliveredCount(ctx: Ctx): { value(): number; stop(): Promise<void> } {
  let delivered = 0;
  let polling = true;
  const poller = (async () => {
    while (polling) {
      delivered = (await ctx.rec.stats()).distinct;
      await sleep(50);
    }
  })();
  return {
    value: () => delivered,
    async stop() {
      polling = false;
      await poller;
    },
  };
}

/**
 * One closed-loop repetition through a whole system, the end-to-end scenario's load: accepted
 * (202) and delivered (counted at the receiver) per second over the counted window, and the CPU
 * of the parts `counts` picks per event delivered in it; then the pipeline is drained.
 */
async function closedLoopThrough(ctx: Ctx, side: { name: string; pool: ReturnType<typeof pool>; paths: string[]; groups: Record<string, number>; counts: (part: string) => boolean }): Promise<{ ingestPerS: number; deliveredPerS: number; cpuUsPerEvent: number; byPart: Record<string, number>; refused: number; accepted: number }> {
  const run = runTag();
  await ctx.rec.reset(run);
  const delivered = deliveredCount(ctx);
  let accepted = 0;
  const warmupMs = S.warmupS * 1000;
  const measureMs = S.seconds * 1000;
  const window = (async () => {
    await sleep(warmupMs);
    const c0 = (await ctx.rec.stats()).distinct;
    const cpu0 = cpuSnapshot(side.groups);
    const t0 = performance.now();
    await sleep(measureMs);
    const c1 = (await ctx.rec.stats()).distinct;
    const cpu1 = cpuSnapshot(side.groups);
    return { events: c1 - c0, ms: performance.now() - t0, cpu: cpuBetween(cpu0, cpu1) };
  })();
  const load = await closedLoop({ pool: side.pool, paths: side.paths, concurrency: S.concurrency, warmupMs, measureMs, body: (s) => taggedBody(run, s, epochMs()), expect: 202, gate: (issued) => issued - delivered.value() < S.e2eWindow, onAccepted: () => accepted++ });
  const w = await window;
  const got = await ctx.rec.waitFor(accepted, 120_000);
  await delivered.stop();
  if (got < accepted) throw new Error(`${side.name}: ${accepted - got} of ${accepted} accepted events were not delivered within 120 s after the load stopped`);
  if (w.events <= 0) throw new Error(`${side.name}: no event was delivered in the measured window`);
  const byPart = Object.fromEntries(Object.entries(w.cpu.byPart).filter(([part]) => side.counts(part)).map(([part, us]) => [part, round(us / w.events, 0)]));
  const us = Object.entries(w.cpu.byPart).filter(([part]) => side.counts(part)).reduce((n, [, x]) => n + x, 0);
  return { ingestPerS: load.rate, deliveredPerS: (w.events / w.ms) * 1000, cpuUsPerEvent: us / w.events, byPart, refused: load.errors, accepted };
}

/**
 * The sink: delivery attempts waiting on deliveries.completed, written into the embedded
 * ClickHouse by a service that runs the sink alone (STAGES=api,sink), against the same rows
 * inserted by the bare @clickhouse/client in the sink's batch size, in a process of its own.
 */
// ---------------------------------------------------------------------------------------------
// the Kafka client

const CLIENTS = ['kafkajs', 'platformatic'] as const;
type Client = (typeof CLIENTS)[number];
const CLIENT_NAMES: Record<Client, string> = { kafkajs: 'kafkajs', platformatic: '@platformatic/kafka' };
type ClientTask = 'produce' | 'consume' | 'pass';
interface ClientRun {
  perS: number;
  cpuUsPerRecord: number;
  brokerUsPerRecord: number;
  commits?: number;
  /** Requests the broker answered per record over the measured span: Produce, Fetch, OffsetCommit, other. */
  requestsPerRecord: Record<string, number>;
}

function packageVersion(name: string): string {
  return (JSON.parse(readFileSync(path.join(REPO_ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
}

/** Records in a topic: the sum of its partitions' end offsets (the topics here are fresh). */
async function recordsIn(ctx: Ctx, topic: string): Promise<number> {
  return (await ctx.admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
}

/** One task of one client in a process of its own (bench/kafka-clients.ts); its figures and the broker's CPU over the same span. */
async function clientRun(ctx: Ctx, client: Client, task: ClientTask, topic: string, to?: string): Promise<ClientRun> {
  const tag = runTag();
  const child = spawnScript(`${client} ${task}`, 'bench/kafka-clients.ts', [], { ...process.env, KC_CLIENT: client, KC_MODE: task, KC_BROKERS: ctx.infra.brokers.join(','), KC_TOPIC: topic, KC_TO: to ?? '', KC_GROUP: `bench-kc-${tag}`, KC_COUNT: String(S.clientRecords), KC_BATCH: String(S.clientBatch), KC_INFLIGHT: String(S.clientInflight) }, path.join(ctx.root, `kc-${client}-${task}-${tag}.log`));
  try {
    await child.waitForOutput(/kclient started/, 120_000);
    const before = cpuSnapshot({ client: child.pid });
    const [, json] = await child.waitForOutput(/kclient result (\{.*\})/, 600_000);
    const after = cpuSnapshot({ client: child.pid });
    const exit = await child.exited;
    const r = JSON.parse(json!) as { count: number; per_s: number; cpu_us_per_record: number; commits?: number; ok?: boolean; requests: Record<string, number> };
    if (exit.code !== 0 || r.ok === false) throw new Error(`${CLIENT_NAMES[client]} ${task} of ${topic} failed (exit ${exit.code ?? exit.signal}): ${tail(child.logFile, 1500)}`);
    const broker = cpuBetween(before, after).byPart['broker JVM'] ?? 0;
    const requestsPerRecord = Object.fromEntries(Object.entries(r.requests).map(([api, n]) => [api, n / r.count]));
    return { perS: r.per_s, cpuUsPerRecord: r.cpu_us_per_record, brokerUsPerRecord: broker / r.count, requestsPerRecord, ...(r.commits === undefined ? {} : { commits: r.commits }) };
  } finally {
    await child.stop(5_000);
  }
}

/**
 * kafkajs (the service's client) against @platformatic/kafka, each in a process of its own,
 * alternating which goes first in each repetition: produce to a fresh topic, consume a prefilled
 * topic with a new group, and consume -> produce (a stage's hop). Every read checks each record
 * and a checksum, every written topic is counted, and the last topics each client wrote are read
 * back by the other client: a figure only counts if the records are exactly right.
 */
async function scenarioKafkaClient(ctx: Ctx): Promise<void> {
  const n = S.clientRecords;
  const run = runTag();
  const topicOf = (what: string) => `bench.kc.${run}.${what}`;
  const source = topicOf('source');
  await ensureTopics(ctx.kafka, [{ topic: source, partitions: PARTITIONS }], 1);
  await clientRun(ctx, 'kafkajs', 'produce', source);
  if ((await recordsIn(ctx, source)) !== n) throw new Error(`the source topic holds ${await recordsIn(ctx, source)} records, not ${n}`);
  const runs: Record<Client, Record<ClientTask, ClientRun[]>> = { kafkajs: { produce: [], consume: [], pass: [] }, platformatic: { produce: [], consume: [], pass: [] } };
  const written: Record<Client, string[]> = { kafkajs: [], platformatic: [] };
  for (let rep = 0; rep < S.reps; rep++) {
    const order = rep % 2 === 0 ? CLIENTS : ([...CLIENTS].reverse() as Client[]);
    for (const task of ['produce', 'consume', 'pass'] as const) {
      for (const client of order) {
        const out = topicOf(`${task}.${client}.${rep}`);
        if (task !== 'consume') await ensureTopics(ctx.kafka, [{ topic: out, partitions: PARTITIONS }], 1);
        const r = task === 'produce' ? await clientRun(ctx, client, task, out) : await clientRun(ctx, client, task, source, task === 'pass' ? out : undefined);
        if (task !== 'consume') {
          const got = await recordsIn(ctx, out);
          if (got !== n) throw new Error(`${CLIENT_NAMES[client]} ${task}: ${out} holds ${got} records, not ${n}`);
          written[client].push(out);
        }
        runs[client][task].push(r);
      }
    }
    const line = (t: ClientTask) => CLIENTS.map((c) => `${CLIENT_NAMES[c]} ${Math.round(runs[c][t][rep]!.perS)}/s ${round(runs[c][t][rep]!.cpuUsPerRecord, 1)} us`).join(', ');
    say(`kafka_client rep ${rep + 1}/${S.reps}: produce ${line('produce')}; consume ${line('consume')}; pass ${line('pass')}`);
  }
  // what each client wrote, read back and checked by the other one
  for (const client of CLIENTS) {
    const reader: Client = client === 'kafkajs' ? 'platformatic' : 'kafkajs';
    for (const topic of written[client].slice(-2)) await clientRun(ctx, reader, 'consume', topic);
  }

  const kjs = packageVersion('kafkajs');
  const pk = packageVersion('@platformatic/kafka');
  const med = (c: Client, t: ClientTask, f: (r: ClientRun) => number) => round(median(runs[c][t].map(f)), 1);
  const perRep = (t: ClientTask) => Object.fromEntries(CLIENTS.map((c) => [CLIENT_NAMES[c], runs[c][t].map((r) => ({ per_s: Math.round(r.perS), cpu_us_per_record: round(r.cpuUsPerRecord, 1), broker_us_per_record: round(r.brokerUsPerRecord, 1), requests_per_1000_records: Object.fromEntries(Object.entries(r.requestsPerRecord).map(([api, v]) => [api, round(v * 1000, 2)])), ...(r.commits === undefined ? {} : { commits: r.commits }) }))]));
  const common = `${n.toLocaleString('en-US')} records of 1.3 KB (key r<i>, the value carrying i), ${PARTITIONS} partitions, one process per client and task, ${S.reps} repetitions alternating which client goes first; kafkajs ${kjs} (with this repository's encoder patch) as the service configures it (its murmur2 partitioner included), @platformatic/kafka ${pk}, on Node ${process.versions.node}. CPU: the client process's own user+system time (process.cpuUsage) over the measured span, per record; the broker JVM's CPU over the same span (read from /proc around it, so approximate) is in details. Every read checks each record's key against its value, counts duplicates and a CRC-32 checksum against the expected one; every written topic must hold exactly ${n.toLocaleString('en-US')} records, and the last two topics each client wrote are read back by the other client; any miss fails the scenario.`;
  const tasks: { task: ClientTask; metric: string; how: string }[] = [
    { task: 'produce', metric: 'records produced per second (acks=all, idempotent)', how: `Produce: ${S.clientBatch} records per send to a fresh topic, idempotent producer, acks=all, from the first send until the last is acknowledged. Both get ${S.clientInflight} sends in flight, and both send one produce request at a time per broker (kafkajs from building to answer; @platformatic/kafka 2.x keeps one in flight per connection when idempotent and numbers each request's records when building it).` },
    { task: 'consume', metric: 'records consumed per second (new group, commit per batch)', how: `Consume: the prefilled topic from the beginning with a new consumer group, offsets committed after each batch, from the first record to the last commit. kafkajs: eachBatch, partitionsConsumedConcurrently 4, maxWaitTimeInMs 50, a commit per fetched partition batch. @platformatic/kafka: its record stream ('data' events), maxWaitTime 50, the same fetch byte limits (10 MB, 1 MB per partition), a commit whenever ${S.clientBatch} records are pending or the stream holds no more fetched records.` },
    { task: 'pass', metric: 'records passed through per second (consume -> produce -> commit)', how: `Pass-through, what a stage does: each batch consumed as above is produced to a fresh topic in one send (idempotent, acks=all), then its offsets are committed. kafkajs handles up to 4 partitions' batches at once; @platformatic/kafka's stream is handled one batch at a time.` },
  ];
  for (const t of tasks) {
    const values = runs.platformatic[t.task].map((r) => r.perS);
    const base = runs.kafkajs[t.task].map((r) => r.perS);
    const v = overReps(values, 0);
    const b = overReps(base, 0);
    const cpuText = CLIENTS.map((c) => `${CLIENT_NAMES[c]} ${med(c, t.task, (r) => r.cpuUsPerRecord)} us (broker ${med(c, t.task, (r) => r.brokerUsPerRecord)} us)`).join(', ');
    const requestsText = CLIENTS.map((c) => `${CLIENT_NAMES[c]} ${['Produce', 'Fetch', 'OffsetCommit', 'other'].map((api) => `${api} ${round(median(runs[c][t.task].map((r) => (r.requestsPerRecord[api] ?? 0) * 1000)), 2)}`).join(', ')}`).join('; ');
    entry({ name: `kafka_client_${t.task}`, metric: t.metric, unit: 'records/s', ...v, repetitions: S.reps, baseline: { name: `kafkajs ${kjs}`, ...b, unit: 'records/s' }, ratio: round(v.value / b.value), target: 1, better: 'higher', notes: `${t.how} CPU per record (median): ${cpuText}. Requests answered per 1,000 records (median): ${requestsText}. ${common} ratio = @platformatic/kafka / kafkajs; target (this suite's own): 1, the candidate at least as fast as the client in use.`, details: { per_rep: perRep(t.task) } });
    const c = overReps(runs.platformatic[t.task].map((r) => r.cpuUsPerRecord), 1);
    const cb = overReps(runs.kafkajs[t.task].map((r) => r.cpuUsPerRecord), 1);
    entry({ name: `kafka_client_${t.task}_cpu`, metric: `client CPU per record, ${t.task}`, unit: 'us/record', ...c, repetitions: S.reps, baseline: { name: `kafkajs ${kjs}`, ...cb, unit: 'us/record' }, ratio: round(cb.value / c.value), target: 1, better: 'higher', notes: `The client process's own CPU (process.cpuUsage, user+system) per record over the ${t.task} runs of kafka_client_${t.task}; broker JVM per record (median): ${CLIENTS.map((x) => `${CLIENT_NAMES[x]} ${med(x, t.task, (r) => r.brokerUsPerRecord)} us`).join(', ')}. ratio = kafkajs / @platformatic/kafka, above 1: @platformatic/kafka needs less; target (this suite's own): 1.` });
  }
}

async function scenarioSink(ctx: Ctx): Promise<void> {
  const n = S.sinkRows;
  // the sink's insert size, as the service reads it (SINK_BATCH_ROWS)
  const batch = loadConfig({ SECRETS_KEK: RUN_KEK, ...process.env }).sinkBatchRows;
  const sinkRates: number[] = [];
  const rawRates: number[] = [];
  const cpuParts: Record<string, number>[] = [];
  for (let rep = 0; rep < S.reps; rep++) {
    const end = Date.now();
    const outcome = outcomeGenerator(n, ['demo'], end);
    // the baseline: the same rows, the bare client, the sink's batch size
    const rawDir = path.join(ctx.root, `sink-raw-${rep}`);
    mkdirSync(rawDir, { recursive: true });
    const fill = spawnScript('clickhouse insert baseline', 'bench/fill-clickhouse.ts', [], { ...process.env, FILL_DATA_DIR: rawDir, FILL_DATABASE: 'hookline', FILL_ROWS: String(n), FILL_BATCH_ROWS: String(Math.ceil(batch / 2)), FILL_TENANT: 'demo', FILL_TENANTS: '1', FILL_SAMPLES: '5', FILL_ROUNDS: '1', FILL_END: String(end), FILL_SINK_ROWS: '1' }, path.join(ctx.root, `sink-raw-${rep}.log`));
    const exit = await fill.exited;
    await fill.stop(1_000);
    if (exit.code !== 0) throw new Error(`the insert baseline failed (${exit.code ?? exit.signal}): ${tail(fill.logFile, 2000)}`);
    const m = /fill result (\{.*\})/.exec(readFileSync(fill.logFile, 'utf8'));
    if (!m) throw new Error('the insert baseline printed no result');
    rawRates.push((JSON.parse(m[1]!) as { insert_rows_per_s: number }).insert_rows_per_s);
    rmSync(rawDir, { recursive: true, force: true });

    // the sink: the topics made and the backlog produced before the service starts
    const prefix = `bench5${rep}.`;
    const topics = topicNames(prefix);
    const { specs, records } = topology(topics, PARTITIONS);
    await ensureTopics(ctx.kafka, specs, 1);
    const codec = AvroCodec.connect(ctx.infra.registryUrl);
    await codec.register(records);
    for (let from = 0; from < n; from += 1_000) {
      const values = await Promise.all(Array.from({ length: Math.min(1_000, n - from) }, (_, k) => outcome(from + k)).map(async (o) => ({ key: o.destination_id, value: await codec.encode(topics.deliveryCompleted, 'DeliveryOutcome', o) })));
      await ctx.producer.sendBatch({ acks: -1, topicMessages: [{ topic: topics.deliveryCompleted, messages: values }] });
    }
    // committed offsets of the sink's group, sampled from before the service starts: a commit
    // follows each insert, so the rate is taken from the first commit to the last
    const groupId = groupIdOf(groupPrefixOf(prefix), 'sink');
    const samples: { at: number; committed: number }[] = [];
    let sampling = true;
    let cpuFirst: ReturnType<typeof cpuSnapshot> | undefined;
    let cpuLast: ReturnType<typeof cpuSnapshot> | undefined;
    let svcPid = 0;
    const sampler = (async () => {
      while (sampling) {
        const offsets = await ctx.admin.fetchOffsets({ groupId, topics: [topics.deliveryCompleted] }).catch(() => []);
        const committed = offsets.flatMap((t) => t.partitions).reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
        const at = performance.now();
        if (committed > 0 && samples.length === 0 && svcPid) cpuFirst = cpuSnapshot(groupsOf(ctx, { service: svcPid }));
        if (committed > 0) samples.push({ at, committed });
        if (committed >= n && svcPid) {
          cpuLast = cpuSnapshot(groupsOf(ctx, { service: svcPid }));
          return;
        }
        await sleep(50);
      }
    })();
    const svc = await startInstance({ name: `svc-sink-${rep}`, root: ctx.root, prefix, stages: 'api,sink', infra: ctx.infra, logLevel: S.logLevel });
    svcPid = svc.proc.pid;
    try {
      const deadline = Date.now() + 300_000;
      while (!cpuLast && Date.now() < deadline) await sleep(100);
      sampling = false;
      await sampler;
      const first = samples[0];
      const last = samples[samples.length - 1];
      if (!first || !last || last.committed < n) throw new Error(`the sink stored ${last?.committed ?? 0} of ${n} rows within 300 s; see ${svc.proc.logFile}`);
      if (last.committed - first.committed < 0.5 * n) throw new Error(`the sink's first commit already covered ${first.committed} of ${n} rows: raise SINK_BENCH_ROWS`);
      sinkRates.push(((last.committed - first.committed) / (last.at - first.at)) * 1000);
      if (cpuFirst && cpuLast) cpuParts.push(perItem(cpuBetween(cpuFirst, cpuLast), last.committed - first.committed));
    } finally {
      await svc.proc.stop();
    }
    say(`sink rep ${rep + 1}/${S.reps}: sink ${Math.round(sinkRates[rep]!)} rows/s, bare @clickhouse/client ${Math.round(rawRates[rep]!)} rows/s`);
  }
  rateEntry({
    name: 'sink',
    metric: 'delivery attempts per second from deliveries.completed into ClickHouse',
    unit: 'rows/s',
    values: sinkRates,
    baseline: { name: '@clickhouse/client inserts of the same rows', values: rawRates, unit: 'rows/s' },
    notes: `${n.toLocaleString('en-US')} DeliveryOutcome records (synthetic attempts, the query scenario's shape) produced onto deliveries.completed before a service running STAGES=api,sink starts; the sink reads them (Avro), builds the rows and inserts them into the embedded engine (SINK_BATCH_ROWS ${batch}, JSONEachRow), committing offsets after each insert; rows/s from its first commit to its last (committed offsets sampled every 50 ms). Baseline: the same rows (the same generator and end time; per attempt the rows the sink makes of it: the attempt, its log line and, when delivered, its transition) inserted by the bare @clickhouse/client in batches of ${Math.ceil(batch / 2)} attempts (the sink counts an attempt as two rows toward SINK_BATCH_ROWS), table by table in the sink's order, into a fresh embedded engine in a process of its own, insert time only; both count attempts per second. Alternating, a fresh topic prefix and data dir each repetition. CPU per row over the sink's window (us, median): ${partsText(medianParts(cpuParts))}. Target (this suite's own): ratio = value / baseline >= 0.5.`,
    details: { per_rep: { sink: sinkRates.map((x) => Math.round(x)), bare_insert: rawRates.map((x) => Math.round(x)) }, cpu_us_per_row_median: medianParts(cpuParts) },
  });
}

async function scenarioQuery(ctx: Ctx): Promise<void> {
  const name = 'svc-query';
  const dataDir = path.join(ctx.root, name);
  mkdirSync(dataDir, { recursive: true });
  say(`filling ClickHouse with ${S.queryRows.toLocaleString('en-US')} delivery rows`);
  const fill = spawnScript('clickhouse fill', 'bench/fill-clickhouse.ts', [], { ...process.env, FILL_DATA_DIR: dataDir, FILL_DATABASE: 'hookline', FILL_ROWS: String(S.queryRows), FILL_BATCH_ROWS: String(S.queryBatchRows), FILL_TENANT: 'demo', FILL_TENANTS: String(S.queryTenants), FILL_SAMPLES: String(S.querySamples), FILL_ROUNDS: String(S.queryRounds) }, path.join(ctx.root, 'fill.log'));
  const exit = await fill.exited;
  await fill.stop(1_000);
  if (exit.code !== 0) throw new Error(`the fill failed (${exit.code ?? exit.signal}): ${tail(fill.logFile, 2000)}`);
  const m = /fill result (\{.*\})/.exec(readFileSync(fill.logFile, 'utf8'));
  if (!m) throw new Error('the fill printed no result');
  const f = JSON.parse(m[1]!) as { rows: number; fill_ms: number; insert_rows_per_s: number; settle_ms: number; active_parts: number; point_read_ms: ReturnType<typeof summary>; list_query_ms: ReturnType<typeof summary> & { by_round?: number[] }; list_rounds_p99_ms: number[] };
  say(`fill took ${(f.fill_ms / 1000).toFixed(1)} s (${f.insert_rows_per_s.toLocaleString('en-US')} rows/s inserted, ${f.rows.toLocaleString('en-US')} rows stored, merges settled in ${(f.settle_ms / 1000).toFixed(1)} s)`);

  const svc = await startInstance({ name, root: ctx.root, prefix: 'bench4.', stages: 'api', infra: ctx.infra, logLevel: S.logLevel });
  const p = pool(svc.url, 1);
  try {
    const pathname = '/v1/tenants/demo/deliveries?status=failed&limit=100';
    const get = async () => {
      const t = performance.now();
      const res = await p.request({ path: pathname, method: 'GET', headers: { authorization: `Bearer ${svc.key}` } });
      const body = (await res.body.json()) as { deliveries?: unknown[] };
      const ms = performance.now() - t;
      if (res.statusCode !== 200 || body.deliveries?.length !== 100) throw new Error(`GET deliveries answered ${res.statusCode} with ${body.deliveries?.length} items`);
      return ms;
    };
    for (let i = 0; i < 5; i++) await get();
    const rounds: number[] = [];
    const all: number[] = [];
    for (let r = 0; r < S.queryRounds; r++) {
      const xs: number[] = [];
      for (let i = 0; i < S.querySamples; i++) xs.push(await get());
      rounds.push(quantile(xs, 0.99));
      all.push(...xs);
    }
    const v = overReps(rounds);
    const b = overReps(f.list_rounds_p99_ms);
    entry({
      name: 'query',
      metric: `GET /v1/tenants/{t}/deliveries?status=failed&limit=100 p99 with ${f.rows.toLocaleString('en-US')} delivery rows`,
      unit: 'ms',
      ...v,
      repetitions: S.queryRounds,
      baseline: { name: 'same SQL through @clickhouse/client', ...b, unit: 'ms' },
      ratio: round(b.value / v.value),
      target: 0.5,
      better: 'higher',
      notes: `${f.rows.toLocaleString('en-US')} synthetic attempts (the sink's row shape; 5% failed, 5% retrying, over 90 days, ${S.queryTenants === 1 ? 'all of the queried tenant: the worst case' : `spread over ${S.queryTenants} tenants`}) inserted with @clickhouse/client in batches of ${S.queryBatchRows.toLocaleString('en-US')} rows into the embedded engine by a separate process before the service opened the data dir: fill took ${(f.fill_ms / 1000).toFixed(1)} s, baseline insert ${f.insert_rows_per_s.toLocaleString('en-US')} rows/s, ${f.active_parts} active parts after merges settled. Value: p99 of ${S.querySamples} sequential GETs per round over HTTP (auth, rate limiter, JSON), median of ${S.queryRounds} rounds; overall p50 ${round(quantile(all, 0.5))} ms. Baseline: the route's own SQL (listDeliveriesSql: status filter, ORDER BY attempted_at DESC, LIMIT 101, read in the table's key order without FINAL) through the bare client on the same rows, p99 per round of ${S.querySamples}; a bare read of one delivery by id (bloom filter index) has p99 ${f.point_read_ms.p99} ms (p50 ${f.point_read_ms.p50}). Target (this suite's own): ratio = baseline / value >= 0.5.`,
      details: { fill_seconds: round(f.fill_ms / 1000, 1), insert_rows_per_s: f.insert_rows_per_s, rows: f.rows, api_ms: summary(all), api_p99_by_round: rounds.map((x) => round(x)), sql_p99_by_round: f.list_rounds_p99_ms, bare_point_read_ms: f.point_read_ms, bare_list_query_ms: f.list_query_ms },
    });
  } finally {
    await p.close();
    await svc.proc.stop();
  }
}

/**
 * One destination limited to THROTTLE_RATE/s beside unlimited ones in the same service
 * (bench/throttle.ts): the limited one's delivered rate against its limit, and the unlimited
 * ones' delivered rate x hops against the raw pass-through, as end_to_end has it.
 */
function destinationCtx(ctx: Ctx): DestinationBenchCtx {
  return { root: ctx.root, infra: ctx.infra, producer: ctx.producer, rec: ctx.rec, receiverPid: ctx.receiver.pid, receiverHookUrl: ctx.rec.hookUrl, say, reps: S.reps, tasks: S.deliveryTasks, logLevel: S.logLevel };
}

async function scenarioBrokerDelivery(ctx: Ctx): Promise<void> {
  const reps = await runBrokerDelivery(destinationCtx(ctx));
  for (const type of BROKER_TYPES) {
    const mine = reps.filter((r) => r.type === type);
    rateEntry({
      name: `broker_delivery_${type}`,
      metric: `deliveries per second to a ${type} destination, acknowledged by the broker`,
      unit: 'deliveries/s',
      values: mine.map((r) => r.service),
      baseline: { name: `the broker's own client publishing (${type})`, values: mine.map((r) => r.baseline), unit: 'msg/s' },
      notes: `Isolated: ${S.deliveryTasks} DeliveryTask records (1 KB JSON body) for one ${type} destination produced onto deliveries.requested while the service runs STAGES=api,deliver; counted by the broker's own client consuming them (${type === 'amqp' ? 'amqplib on a durable queue, through the default exchange' : type === 'nats' ? 'a JetStream consumer of the stream capturing the subject' : type === 'mqtt' ? 'mqtt.js subscribed at QoS 1 to the topic (Mosquitto)' : 'kafkajs consuming a topic of 3 partitions on a second local Kafka cluster, not the service\'s own'}) from the moment the backlog is fully produced up to the 95th-percentile arrival. Each delivery is signed (Standard Webhooks headers travel with the message), published through the destination's pooled connection and acknowledged (${type === 'amqp' ? 'persistent, mandatory, publisher confirm' : type === 'nats' ? 'JetStream publish ack, Nats-Msg-Id the delivery id' : type === 'mqtt' ? 'QoS 1, PUBACK' : 'acks=all'}), and its outcome record produced before its offset may be committed. Baseline: the broker's own client publishing the same number of 1 KB messages with the same headers and acknowledgement, ${32} in flight (the deliver stage's DELIVERY_PER_DESTINATION), publishes/s over the 5th to 95th percentile acknowledgement, after the service's side in each repetition. Service CPU per delivery (us, median): ${round(median(mine.map((r) => r.serviceCpuUs)), 0)}. ratio = value / baseline; target >= 0.5.`,
      details: { per_rep: mine.map((r) => ({ service: Math.round(r.service), own_client: Math.round(r.baseline), service_cpu_us: Math.round(r.serviceCpuUs), own_client_messages_read_back: r.baselineArrived })) },
    });
  }
}

async function scenarioTransform(ctx: Ctx): Promise<void> {
  const reps = await runTransform(destinationCtx(ctx));
  const added = reps.map((r) => r.transformedCpuUs - r.plainCpuUs);
  rateEntry({
    name: 'transform',
    metric: 'deliveries per second to a webhook destination with a trivial transformation',
    unit: 'deliveries/s',
    values: reps.map((r) => r.transformed),
    baseline: { name: 'the same destination without a transformation', values: reps.map((r) => r.plain), unit: 'deliveries/s' },
    notes: `The delivery scenario's backlog (${S.deliveryTasks} tasks, 1 KB JSON bodies, STAGES=api,deliver) to two webhook destinations of the same service and receiver, one with \`function transform(event) { return { body: event.body }; }\` (run in the QuickJS sandbox on a worker thread: the body parsed, copied in, the result copied out as JSON and sent), one without, alternating which goes first. Service CPU per delivery (us, median): without ${round(median(reps.map((r) => r.plainCpuUs)), 0)}, with ${round(median(reps.map((r) => r.transformedCpuUs)), 0)}; the transformation adds ${round(median(added), 0)} us per delivery (median of the per-repetition differences; the worker thread's CPU is the service process's). ratio = value / baseline; target >= 0.5 (a transformation costs only where configured).`,
    details: { per_rep: reps.map((r) => ({ without: Math.round(r.plain), with: Math.round(r.transformed), cpu_us_without: Math.round(r.plainCpuUs), cpu_us_with: Math.round(r.transformedCpuUs) })), added_cpu_us_per_delivery: round(median(added), 0) },
  });
}

async function scenarioThrottle(ctx: Ctx): Promise<void> {
  const passIn = 'bench.pass.in';
  const passOut = 'bench.pass.out';
  await ensureTopics(ctx.kafka, [passIn, passOut].map((topic) => ({ topic, partitions: PARTITIONS })), 1);
  // a topic just made may not have its leaders yet: the offsets are asked for until it has
  const filled = (await fetchTopicOffsets(ctx.admin, passIn)).reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
  if (filled < S.passMessages) await produceFiller(ctx.producer, passIn, S.passMessages, 1_300);
  const passRates: number[] = [];
  const reps = await runThrottle({
    root: ctx.root, infra: ctx.infra, kafka: ctx.kafka, admin: ctx.admin, rec: ctx.rec, say,
    settings: { reps: S.reps, warmupS: S.warmupS, seconds: S.seconds, concurrency: S.concurrency, e2eWindow: S.e2eWindow, flows: S.flows, logLevel: S.logLevel, partitions: PARTITIONS, rate: S.throttleRate },
    between: async () => {
      const pass = await passThroughRep(ctx, passIn, passOut, S.passMessages);
      passRates.push(pass.perS);
      say(`throttle baseline: raw pass-through ${Math.round(pass.perS)}/s`);
    },
  });
  const limited = overReps(reps.map((r) => r.limitedPerS), 2);
  const maxPer1s = Math.max(...reps.map((r) => r.limitedMaxPer1s));
  const limitedEntry = entry({
    name: 'throttle_limited',
    metric: 'deliveries per second to a destination with rate_limit_per_s',
    unit: 'deliveries/s',
    ...limited,
    repetitions: reps.length,
    baseline: { name: 'its rate_limit_per_s', value: S.throttleRate, spread: { min: S.throttleRate, max: S.throttleRate }, unit: 'deliveries/s' },
    ratio: round(limited.value / S.throttleRate),
    target: 0.9,
    better: 'higher',
    notes: `One destination with rate_limit_per_s ${S.throttleRate} (written on the config topic), given a backlog of ${S.throttleRate} x (warm-up + window + 2 s) webhooks through its own ingester at the start of each repetition, beside the end-to-end closed loop on ${S.flows} unlimited flows of the same service process (all stages). Its deliveries counted at a receiver process of their own over the ${S.seconds} s window after ${S.warmupS} s of warm-up. Target: ratio = value / limit within 0.9..1.1 (the met flag is two-sided). Most deliveries in any 1 s of a repetition (all of its arrivals): ${maxPer1s}.`,
    details: { per_rep: reps, max_per_1s: maxPer1s },
  });
  limitedEntry.met = limitedEntry.ratio >= 0.9 && limitedEntry.ratio <= 1.1;
  say(`throttle_limited: ratio ${limitedEntry.ratio} to the limit, within 0.9..1.1: ${limitedEntry.met ? 'met' : 'NOT met'}`);
  const unlimited = overReps(reps.map((r) => r.unlimitedPerS), 0);
  const b = overReps(passRates, 0);
  entry({
    name: 'throttle_unlimited',
    metric: `delivered events per second x ${HOPS} Kafka hops to unlimited destinations beside a limited one`,
    unit: 'hop-records/s',
    value: round(unlimited.value * HOPS, 0),
    spread: { min: round(unlimited.spread.min * HOPS, 0), max: round(unlimited.spread.max * HOPS, 0) },
    repetitions: reps.length,
    baseline: { name: 'raw kafkajs consume -> produce pass-through', ...b, unit: 'msg/s' },
    ratio: round((unlimited.value * HOPS) / b.value),
    target: 0.5,
    better: 'higher',
    notes: `The end_to_end scenario's load and figure (delivered events/s median ${unlimited.value}, x ${HOPS} hops, against the raw pass-through alternating with each repetition) while a destination of the same service is held to ${S.throttleRate}/s with a backlog waiting on the delay topics. ratio = value x hops / baseline.`,
    details: { per_rep: reps.map((r) => r.unlimitedPerS), pass_through: passRates },
  });
}

async function scenarioEvidence(root: string): Promise<void> {
  const out = path.join(root, 'evidence.json');
  say(`evidence log benchmark (${S.evidenceLeaves.toLocaleString('en-US')} leaves; it starts its own Kafka)`);
  const child = spawnScript('evidence bench', 'bench/evidence.ts', [], { ...process.env, LEAVES: String(S.evidenceLeaves), SEAL_OUTCOMES: String(S.evidenceSealOutcomes), EVIDENCE_RESULTS: out }, path.join(root, 'evidence.log'));
  const timer = setTimeout(() => void child.stop(5_000), 30 * 60_000);
  const exit = await child.exited;
  clearTimeout(timer);
  await child.stop(1_000);
  if (exit.code !== 0) throw new Error(`bench/evidence.ts failed (${exit.code ?? exit.signal}): ${tail(child.logFile, 2000)}`);
  const r = JSON.parse(readFileSync(out, 'utf8')) as {
    leaves_at_proof_time: number;
    seal: { leaves_per_s: number; baseline_pass_through_per_s: number; ratio: number };
    proofs: { inclusion_ms: ReturnType<typeof summary>; baseline_point_read_ms: ReturnType<typeof summary>; consistency_ms: ReturnType<typeof summary> };
  };
  const v = r.proofs.inclusion_ms;
  const b = r.proofs.baseline_point_read_ms;
  entry({
    name: 'evidence_proof',
    metric: `inclusion proof read p99 at ${r.leaves_at_proof_time.toLocaleString('en-US')} leaves`,
    unit: 'ms',
    value: v.p99,
    spread: { min: v.p50, max: v.max },
    repetitions: 1,
    baseline: { name: 'bare ClickHouse point read p99', value: b.p99, spread: { min: b.p50, max: b.max }, unit: 'ms' },
    ratio: round(b.p99 / v.p99),
    target: 0.5,
    better: 'higher',
    notes: `From bench/evidence.ts (npm run bench:evidence), run as part of this suite: EvidenceStore.inclusionProof, the read GET /v1/tenants/{t}/evidence/{delivery_id} makes for a sealed delivery, over ${v.n} random leaves of a ${r.leaves_at_proof_time.toLocaleString('en-US')}-leaf tree stored as subtree hashes (the HTTP layer is not included); spread is {p50, max}. Baseline: a bare primary-key read of one stored node. Consistency proofs p99 ${r.proofs.consistency_ms.p99} ms. Sealing in the same run: ${r.seal.leaves_per_s} leaves/s against ${r.seal.baseline_pass_through_per_s} msg/s raw pass-through (ratio ${r.seal.ratio}). Target (this suite's own): ratio = baseline / value >= 0.5.`,
    details: r as unknown as Record<string, unknown>,
  });
}

/**
 * Searches over delivery attempts (bench/search.ts, a process of its own on a fresh embedded
 * engine): one entry per search, its median against one full scan of the attempts in the same run.
 */
async function scenarioSearch(root: string): Promise<void> {
  const out = path.join(root, 'search.json');
  say(`search benchmark: filling ${S.searchRows.toLocaleString('en-US')} attempts`);
  const child = spawnScript('search bench', 'bench/search.ts', [], { ...process.env, SEARCH_DATA_DIR: path.join(root, 'search'), SEARCH_ROWS: String(S.searchRows), SEARCH_REPS: String(S.searchReps), SEARCH_RESULTS: out }, path.join(root, 'search.log'));
  const timer = setTimeout(() => void child.stop(5_000), 40 * 60_000);
  const exit = await child.exited;
  clearTimeout(timer);
  await child.stop(1_000);
  if (exit.code !== 0) throw new Error(`bench/search.ts failed (${exit.code ?? exit.signal}): ${tail(child.logFile, 2000)}`);
  type Timing = { median_ms: number; min_ms: number; max_ms: number };
  const r = JSON.parse(readFileSync(out, 'utf8')) as { rows: number; events: number; tenants: number; destinations: number; days: number; reps: number; fill_s: number; baseline_scan: Timing & { matches: number }; searches: Record<string, { with_indexes: Timing; without_indexes: Timing; rows: number }> };
  const b = r.baseline_scan;
  const what: Record<string, string> = {
    tenant: 'by tenant only',
    status_failed: 'status=failed',
    destination: 'one destination',
    event_type: 'one event type (of 20)',
    one_day: 'one day of 30 (from, to)',
    response_5xx: 'response_code=5xx',
    text_response_body: 'q found in the response body of a few attempts',
    text_request_body: 'q found in the request body of a few events',
    page_5: 'page 5, by cursors (five pages)',
  };
  for (const [name, v] of Object.entries(r.searches)) {
    const x = v.with_indexes;
    entry({
      name: `search_${name}`,
      metric: `search ${what[name] ?? name}: first page of 50 at ${r.rows.toLocaleString('en-US')} attempts`,
      unit: 'ms',
      value: x.median_ms,
      spread: { min: x.min_ms, max: x.max_ms },
      repetitions: r.reps,
      baseline: { name: 'full scan of the attempts for a text', value: b.median_ms, spread: { min: b.min_ms, max: b.max_ms }, unit: 'ms' },
      ratio: round(b.median_ms / x.median_ms),
      target: 1,
      better: 'higher',
      notes: `${r.rows.toLocaleString('en-US')} synthetic attempts (two per event, ${r.events.toLocaleString('en-US')} events with JSON bodies) over ${r.tenants} tenants, ${r.destinations} destinations and ${r.days} days, generated inside ClickHouse (INSERT ... SELECT FROM numbers) in ${r.fill_s} s into a fresh embedded engine; the searches of one tenant (${Math.round(r.rows / r.tenants).toLocaleString('en-US')} attempts) through the API's query code (listDeliveries and the page's event types, 51 rows asked), median of ${r.reps} runs after a warm-up; ${v.rows} rows on the last page. Without the data-skipping indexes it may use (the same runs alternated with ignore_data_skipping_indices; SEARCH_TRY_INDEXES adds candidates): median ${v.without_indexes.median_ms} ms. Baseline: SELECT count() of all attempts whose response body contains a text (positionCaseInsensitive), ${b.matches} matches, timed in the same rounds. Target (this suite's own): ratio = baseline / value >= 1, a search no slower than one scan of the table.`,
      details: v as unknown as Record<string, unknown>,
    });
  }
}

/** The consumer groups with the largest backlog peaks, for the notes: where records wait. */
function topBacklogs(lags: ReturnType<typeof lagVerdict>[]): string {
  const names = new Set(lags.flatMap((l) => Object.keys(l.groups)));
  return [...names]
    .map((n) => [n, median(lags.map((l) => l.groups[n]?.max ?? 0))] as const)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 4)
    .map(([n, x]) => `${n} ${Math.round(x)}`)
    .join(', ');
}

const partsText = (parts: Record<string, number>) => Object.entries(parts).map(([k, x]) => `${k} ${x}`).join(', ');

function fail(scenario: string, err: unknown): void {
  const error = err instanceof Error ? err.stack ?? err.message : String(err);
  failures.push({ scenario, error });
  say(`scenario ${scenario} FAILED: ${error.split('\n').slice(0, 3).join(' | ')}`);
}

/** Runs one scenario, records how long it took, and records its failure instead of throwing. */
async function timed(scenario: string, run: () => Promise<void>): Promise<void> {
  const t = performance.now();
  try {
    await run();
  } catch (err) {
    fail(scenario, err);
  }
  durations[scenario] = (performance.now() - t) / 1000;
}

function gitInfo(): { commit: string; dirty: boolean } {
  try {
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim().length > 0;
    return { commit, dirty };
  } catch {
    return { commit: 'unknown', dirty: false };
  }
}

async function main(): Promise<number> {
  const startedAt = new Date();
  const t0 = performance.now();
  const root = mkdtempSync(path.join(os.tmpdir(), 'hookline-bench-'));
  say(`${QUICK ? 'quick mode; ' : ''}scenarios: ${[...SELECTED].join(', ')}; work dir ${root}`);
  let kafkaServer: LocalKafka | undefined;
  let redis: LocalRedis | undefined;
  let ctx: Ctx | undefined;
  let ok = false;
  try {
    const needsInfra = ['ingest', 'delivery', 'end_to_end', 'memory', 'peer_bullmq', 'before_after', 'kafka_client', 'sink', 'query', 'throttle', 'broker_delivery', 'transform', 'sealing'].some((s) => wants(s as Scenario));
    if (needsInfra) {
      const t = performance.now();
      [kafkaServer, redis] = await Promise.all([startLocalKafka(path.join(root, 'kafka')), startLocalRedis(path.join(root, 'redis'))]);
      const kafka = createKafka(kafkaServer.brokers, 'bench');
      const registry = await startSchemaRegistry({ kafka, topic: 'bench._schemas' });
      const admin = kafka.admin();
      await admin.connect();
      const producer = kafka.producer({ allowAutoTopicCreation: false });
      await producer.connect();
      const receiver = spawnScript('receiver', 'bench/receiver.ts', [], process.env, path.join(root, 'receiver.log'));
      const [, receiverBase] = await receiver.waitForOutput(/receiver listening (\S+)/, 60_000);
      ctx = { root, infra: { brokers: kafkaServer.brokers, redisUrl: redis.url, registryUrl: registry.url }, kafka, admin, producer, registry, receiver, rec: new ReceiverClient(receiverBase!) };
      durations.infrastructure = (performance.now() - t) / 1000;
      say(`Kafka ${kafkaServer.brokers.join(',')}, Redis ${redis.url}, registry ${registry.url}, receiver ${receiverBase}`);
      const w = performance.now();
      await warmBroker(ctx);
      durations.broker_warmup = (performance.now() - w) / 1000;
    }
    if (ctx && (wants('ingest') || wants('delivery'))) {
      try {
        await scenarioIngestAndDelivery(ctx);
      } catch (err) {
        fail('ingest/delivery', err);
      }
    }
    if (ctx && (wants('end_to_end') || wants('memory'))) {
      if (!wants('end_to_end')) ctx.e2eRate = Number(process.env.SOAK_RATE ?? 400) / S.soakFraction;
      try {
        await scenarioEndToEnd(ctx);
      } catch (err) {
        fail('end_to_end', err);
      }
    }
    const infra = ctx;
    if (infra && wants('peer_bullmq')) await timed('peer_bullmq', () => scenarioPeerBullmq(infra));
    if (infra && wants('before_after') && BEFORE) await timed('before_after', () => scenarioBeforeAfter(infra, BEFORE));
    if (infra && wants('kafka_client')) await timed('kafka_client', () => scenarioKafkaClient(infra));
    if (infra && wants('sink')) await timed('sink', () => scenarioSink(infra));
    if (infra && wants('query')) await timed('query', () => scenarioQuery(infra));
    if (infra && wants('throttle')) await timed('throttle', () => scenarioThrottle(infra));
    if (infra && wants('broker_delivery')) await timed('broker_delivery', () => scenarioBrokerDelivery(infra));
    if (infra && wants('transform')) await timed('transform', () => scenarioTransform(infra));
    if (infra && wants('sealing')) await timed('sealing', () => scenarioSealing(infra));
    if (ctx) {
      await ctx.rec.close().catch(() => undefined);
      await ctx.receiver.stop(5_000);
      await ctx.producer.disconnect().catch(() => undefined);
      await ctx.admin.disconnect().catch(() => undefined);
      await ctx.registry.close().catch(() => undefined);
    }
    await redis?.stop().catch(() => undefined);
    await kafkaServer?.stop().catch(() => undefined);
    kafkaServer = undefined;
    redis = undefined;
    if (wants('evidence')) await timed('evidence', () => scenarioEvidence(root));
    if (wants('search')) await timed('search', () => scenarioSearch(root));
    if (wants('analytics')) await timed('analytics', async () => void (await runAnalytics(root, { rows: S.analyticsRows, tenantRows: S.analyticsTenantRows, reps: S.analyticsReps, rawReps: S.analyticsRawReps })).map(entry));
    ok = failures.length === 0;
  } finally {
    killAllChildren();
    await redis?.stop().catch(() => undefined);
    await kafkaServer?.stop().catch(() => undefined);
    durations.total = (performance.now() - t0) / 1000;
    const git = gitInfo();
    const cpus = os.cpus();
    const results: Results = {
      started_at: startedAt.toISOString(),
      finished_at: new Date().toISOString(),
      quick: QUICK,
      machine: { cpus: cpus.length, cpu_model: cpus[0]?.model ?? 'unknown', memory: os.totalmem(), node: process.version, platform: `${os.platform()} ${os.release()}` },
      git_commit: git.commit,
      git_dirty: git.dirty,
      settings: { ...S, hops: HOPS, partitions: PARTITIONS, scenarios: [...SELECTED].join(','), serviceEnv: process.env.BENCH_SERVICE_ENV ?? '' },
      durations: Object.fromEntries(Object.entries(durations).map(([k, v]) => [k, round(v, 1)])),
      scenarios: entries,
      records_per_delivered_event: entries.find((e) => e.name === 'records_per_event')?.value ?? null,
      failures,
    };
    const base = process.env.BENCH_OUT ?? (QUICK ? 'quick' : SELECTED.size < ALL_SCENARIOS.length ? 'partial' : 'latest');
    const dir = path.join(__dirname, 'results');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, `${base}.json`), `${JSON.stringify(results, null, 2)}\n`);
    const md = markdown(results);
    writeFileSync(path.join(dir, `${base}.md`), md);
    writeFileSync(path.join(dir, `${base}.svg`), chart(results));
    process.stdout.write(`\n${md}\n`);
    say(`results: bench/results/${base}.json, ${base}.md and ${base}.svg`);
    if (ok && process.env.BENCH_KEEP_DIR !== '1') rmSync(root, { recursive: true, force: true });
    else say(`work dir kept: ${root}`);
  }
  return ok ? 0 : 1;
}

// everything started here stops with this process, however it ends
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    say(`${signal}: stopping`);
    killAllChildren();
    process.exit(130);
  });
}
const deadline = setTimeout(() => {
  say(`BENCH_TIMEOUT_MINUTES (${S.timeoutMin}) reached: stopping`);
  killAllChildren();
  process.exit(2);
}, S.timeoutMin * 60_000);
deadline.unref();

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    killAllChildren();
    process.exit(1);
  },
);
