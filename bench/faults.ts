/**
 * `npm run test:faults`: the service as two whole processes on a three-broker Kafka cluster,
 * with Redis and a ClickHouse server, under steady load; each fault in turn while the load runs,
 * and then every accepted webhook counted at the receiver. Writes bench/results/faults.json and
 * faults.md. Exits 1 if any accepted webhook is lost or the evidence log is not one tree.
 *
 * FAULTS_RATE (webhooks/s, default 300), FAULTS_BROKERS (default 3), FAULTS_ONLY (comma list of fault names), FAULTS_DIR
 * (keep the data there instead of a temporary directory).
 */
import http from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Pool } from 'undici';
import { generateSignerKey } from '../core/signed-note';
import { topicNames } from '../core/topics';
import { startCluster, type RunningCluster, type ServiceInstance } from '../infra/cluster/cluster';
import { AvroCodec } from '../platform/avro/codec';
import { createKafka, createProducer, ensureTopics } from '../platform/kafka/client';
import type { Producer } from 'kafkajs';
import { randomKek } from '../test/support/keyring';
import { checkEvidenceLog, type EvidenceLogCheck } from './lib/evidence-log-check';

// this topology (three brokers, two whole processes, all on two shared cores) delivers about
// 450 webhooks/s once warm; 300/s leaves room to catch up after each fault, so that the recovery
// times measure the fault and not a backlog that only grows
const RATE = Number(process.env.FAULTS_RATE ?? 300);
const SETTLE_MS = 60_000;
const WARM_MS = 15_000;
const AFTER_MS = 20_000;
const DRAIN_MS = 300_000;
const REQUEST_TIMEOUT_MS = 60_000;
const MAX_OUTSTANDING = 4_000;
const RESULTS = path.resolve(__dirname, 'results');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const say = (line: string) => process.stderr.write(`[faults ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

/** What the receiver saw of one webhook: how often, and when first. */
interface Seen {
  count: number;
  firstAt: number;
}

/** A receiver that counts every delivery by the fault and sequence number in its body. */
async function startReceiver(): Promise<{ url: string; seen: Map<string, Seen>; requests: () => number; close(): Promise<void> }> {
  const seen = new Map<string, Seen>();
  let requests = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests++;
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { f: string; s: number };
        const key = `${body.f}:${body.s}`;
        const s = seen.get(key);
        if (s) s.count++;
        else seen.set(key, { count: 1, firstAt: Date.now() });
      } catch {
        /* not one of ours */
      }
      res.writeHead(200).end();
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}/hook`, seen, requests: () => requests, close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }) };
}

/**
 * Calls `next` `rate` times a second on average, in ticks of 20 ms; a call that returns false
 * (nothing may go now) ends the tick and keeps what is due for the next.
 */
function paced(rate: number, next: () => boolean): NodeJS.Timeout {
  let due = 0;
  let last = Date.now();
  return setInterval(() => {
    const now = Date.now();
    due += ((now - last) * rate) / 1000;
    last = now;
    while (due >= 1 && next()) due--;
  }, 20);
}

/** Steady load: `rate` webhooks a second across the Hook URLs of the processes that are up. */
class Load {
  phase = 'warmup';
  readonly accepted = new Map<string, number>();
  /** The same, in the order the answers came. */
  readonly acceptedOrder: [string, number][] = [];
  refused = 0;
  private seq = 0;
  private outstanding = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly pools = new Map<ServiceInstance, Pool>();
  readonly down = new Set<ServiceInstance>();

  constructor(private readonly targets: ServiceInstance[], private readonly hookPath: string, private readonly rate: number) {
    for (const t of targets) this.pools.set(t, new Pool(t.url, { connections: 64, pipelining: 1, headersTimeout: REQUEST_TIMEOUT_MS, bodyTimeout: REQUEST_TIMEOUT_MS }));
  }

  start(): void {
    this.timer = paced(this.rate, () => {
      const up = this.targets.filter((t) => !this.down.has(t));
      if (up.length === 0) return false;
      if (this.outstanding >= MAX_OUTSTANDING) this.refused++;
      else this.send(up[this.seq % up.length]!);
      return true;
    });
  }

  private send(target: ServiceInstance): void {
    const seq = this.seq++;
    const phase = this.phase;
    const body = JSON.stringify({ f: phase, s: seq, pad: 'x'.repeat(200) });
    this.outstanding++;
    this.pools
      .get(target)!
      .request({ path: this.hookPath, method: 'POST', headers: { 'content-type': 'application/json' }, body })
      .then(async (res) => {
        await res.body.dump();
        if (res.statusCode === 202) {
          const at = Date.now();
          this.accepted.set(`${phase}:${seq}`, at);
          this.acceptedOrder.push([`${phase}:${seq}`, at]);
        }
        else this.refused++;
      })
      .catch(() => {
        this.refused++;
      })
      .finally(() => {
        this.outstanding--;
      });
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    while (this.outstanding > 0) await sleep(100);
    await Promise.all([...this.pools.values()].map((p) => p.close()));
  }
}

/** The service's defaults the bare client below is held to: its request timeout, and the Hook URL's deadline. */
const RAW_REQUEST_TIMEOUT_MS = Number(process.env.KAFKA_REQUEST_TIMEOUT_MS ?? 5_000);
const RAW_DEADLINE_MS = Number(process.env.INGEST_ACK_TIMEOUT_MS ?? 5_000);

/**
 * A bare kafkajs producer beside the service during a broker fault: what Kafka's own leader
 * failover costs a client of the same cluster, the figure the Hook URL's "not accepted" is held
 * against. Idempotent, acks=all, the service's request timeout, one record per send, a third of
 * the offered rate, to a topic of its own with the service's partition count; a record not
 * acknowledged within the Hook URL's deadline (or failed) counts as not accepted.
 */
class RawProbe {
  sent = 0;
  notAccepted = 0;
  private timer: NodeJS.Timeout | undefined;
  private outstanding = 0;
  private producer: Producer | undefined;

  constructor(private readonly brokers: string[], private readonly topic: string, private readonly rate: number) {}

  async start(): Promise<void> {
    const kafka = createKafka(this.brokers, 'hookline-faults-raw', { quiet: true, requestTimeoutMs: RAW_REQUEST_TIMEOUT_MS });
    await ensureTopics(kafka, [{ topic: this.topic, partitions: 6 }], 3);
    this.producer = createProducer(kafka);
    await this.producer.connect();
    this.timer = paced(this.rate, () => {
      this.send();
      return true;
    });
  }

  private send(): void {
    const seq = this.sent++;
    const started = Date.now();
    this.outstanding++;
    this.producer!.send({ topic: this.topic, acks: -1, messages: [{ key: String(seq), value: String(seq) }] })
      .then(
        () => {
          if (Date.now() - started > RAW_DEADLINE_MS) this.notAccepted++;
        },
        () => {
          this.notAccepted++;
        },
      )
      .finally(() => this.outstanding--);
  }

  /** Stops sending, waits for what is out, and gives the counts of the sends it made. */
  async stop(): Promise<{ sent: number; not_accepted: number }> {
    clearInterval(this.timer);
    const deadline = Date.now() + 120_000;
    while (this.outstanding > 0 && Date.now() < deadline) await sleep(200);
    await this.producer?.disconnect().catch(() => undefined);
    return { sent: this.sent, not_accepted: this.notAccepted + this.outstanding };
  }
}

/** Seconds a webhook may take from its 202 to the receiver and still count as caught up (this topology's steady p99 is under 1 s). */
const CAUGHT_UP_LAG_MS = 2_000;
const CATCH_UP_MS = 240_000;
const STABLE_MS = 5_000;

/** Webhooks accepted more than CAUGHT_UP_LAG_MS ago and not delivered yet, from `from.index` on (which moves past delivered ones). */
function backlog(load: Load, seen: Map<string, Seen>, from: { index: number }, now = Date.now()): string[] {
  const order = load.acceptedOrder;
  while (from.index < order.length && seen.has(order[from.index]![0])) from.index++;
  const waiting: string[] = [];
  for (let i = from.index; i < order.length && order[i]![1] <= now - CAUGHT_UP_LAG_MS; i++) {
    if (!seen.has(order[i]![0])) waiting.push(order[i]![0]);
  }
  return waiting;
}

/**
 * Waits until the backlog (webhooks accepted more than CAUGHT_UP_LAG_MS ago and not delivered)
 * is no larger than it was before the fault, while the load goes on: the pipeline is back to its
 * steady lag. A webhook held back longer (say, by its retry schedule) does not hold this up; it
 * shows in the window's largest delay. Resolves with the moment, or undefined after CATCH_UP_MS.
 */
async function caughtUp(load: Load, seen: Map<string, Seen>, from: { index: number }, allowed: number): Promise<number | undefined> {
  const deadline = Date.now() + CATCH_UP_MS;
  // held for STABLE_MS: right after a kill the backlog is still small (the lag threshold has
  // not passed yet), and only a backlog that stays small says the pipeline is back
  let since: number | undefined;
  while (Date.now() < deadline) {
    const now = Date.now();
    if (backlog(load, seen, from, now).length > allowed) since = undefined;
    else {
      since ??= now;
      if (now - since >= STABLE_MS) return since;
    }
    await sleep(500);
  }
  return undefined;
}

interface Fault {
  name: string;
  /** Injects the fault; resolves when it is cleared, with the moment it was cleared. */
  run(c: RunningCluster, load: Load): Promise<number>;
  /** Puts the deployment back as it was, once the pipeline has caught up without it. */
  restore?(c: RunningCluster, load: Load): Promise<void>;
  /** A broker fault: a bare Kafka client runs beside the service through it (RawProbe). */
  raw?: boolean;
}

const killedBroker = 2;

const FAULTS: Fault[] = [
  {
    // no fault: what the figures of the others compare with (lag, duplicates)
    name: 'none',
    async run() {
      await sleep(30_000);
      return Date.now();
    },
  },
  {
    name: 'broker_sigkill',
    raw: true,
    async run(c) {
      const node = c.kafka.nodes[killedBroker - 1]!;
      say(`SIGKILL broker ${node.id}`);
      node.signal('SIGKILL');
      await sleep(20_000);
      await node.start();
      say(`broker ${node.id} back`);
      return Date.now();
    },
  },
  {
    name: 'broker_sigstop_30s',
    raw: true,
    async run(c) {
      const node = c.kafka.nodes[0]!;
      say(`SIGSTOP broker ${node.id} for 30 s`);
      node.signal('SIGSTOP');
      await sleep(30_000);
      node.signal('SIGCONT');
      say(`SIGCONT broker ${node.id}`);
      return Date.now();
    },
  },
  {
    name: 'stage_process_sigkill',
    async run(c, load) {
      const victim = c.processes[1]!;
      say(`SIGKILL ${victim.name} (every stage; ${c.processes[0]!.name} runs on)`);
      load.down.add(victim);
      victim.signal('SIGKILL');
      const killedAt = Date.now();
      await victim.exited();
      // the survivor must take the dead member's partitions: recovery counts from the kill
      return killedAt;
    },
    async restore(c, load) {
      const victim = c.processes[1]!;
      await victim.start();
      load.down.delete(victim);
      say(`${victim.name} started again`);
    },
  },
  {
    name: 'redis_down_60s',
    async run(c) {
      say('Redis down for 60 s');
      await c.redis.stop();
      await sleep(60_000);
      await c.redis.start();
      say('Redis back');
      return Date.now();
    },
  },
  {
    name: 'clickhouse_down_60s',
    async run(c) {
      say('ClickHouse down for 60 s');
      await c.clickhouse.stop();
      await sleep(60_000);
      await c.clickhouse.start();
      say('ClickHouse back');
      return Date.now();
    },
  },
  {
    name: 'full_restart',
    async run(c, load) {
      say('SIGKILL of every service process and broker, Redis and ClickHouse stopped; all started again on the same data');
      for (const p of c.processes) load.down.add(p);
      for (const p of c.processes) p.signal('SIGKILL');
      for (const n of c.kafka.nodes) n.signal('SIGKILL');
      await Promise.all([...c.processes.map((p) => p.exited()), c.redis.stop(), c.clickhouse.stop()]);
      await sleep(2_000);
      await Promise.all([c.redis.start(), c.clickhouse.start(), ...c.kafka.nodes.map((n) => n.start())]);
      await c.processes[0]!.start();
      await Promise.all(c.processes.slice(1).map((p) => p.start()));
      for (const p of c.processes) load.down.delete(p);
      say('everything back');
      return Date.now();
    },
  },
];

interface FaultResult {
  name: string;
  accepted: number;
  delivered: number;
  lost: number;
  duplicates: number;
  /** From injecting the fault to clearing it (a restart's whole time, a stop's length). */
  outage_s: number;
  /** From clearing the fault until the backlog (accepted over 2 s ago, not delivered) is back to its size before the fault (-1: not within 240 s). */
  recovery_s: number;
  refused: number;
  /** Offered during the fault's window (accepted and refused). */
  offered: number;
  /** The bare Kafka client beside the service in a broker fault's window: records sent, and not acknowledged within the deadline. */
  raw?: { sent: number; not_accepted: number };
  /** The longest any of its webhooks took from its 202 to the receiver. */
  max_delay_s: number;
  /** Seconds from acceptance to first delivery of the webhooks accepted in the load before the fault: the lag it started from. */
  lag_before_p50_s: number;
  lag_before_p99_s: number;
  evidence: EvidenceLogCheck;
}

function percent(part: number, whole: number): string {
  return whole === 0 ? '0%' : `${Math.round((1000 * part) / whole) / 10}%`;
}

function quantile(values: number[], q: number): number {
  if (values.length === 0) return 0;
  const sorted = values.slice().sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

async function api(base: string, key: string, method: string, p: string, body?: unknown): Promise<any> {
  const res = await fetch(`${base}${p}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = (await res.json()) as unknown;
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function main(): Promise<void> {
  const only = process.env.FAULTS_ONLY?.split(',').map((s) => s.trim()).filter(Boolean);
  const faults = only ? FAULTS.filter((f) => only.includes(f.name)) : FAULTS;
  if (only && faults.length !== only.length) throw new Error(`FAULTS_ONLY: known faults are ${FAULTS.map((f) => f.name).join(', ')}`);
  const dataDir = process.env.FAULTS_DIR ? path.resolve(process.env.FAULTS_DIR) : mkdtempSync(path.join(tmpdir(), 'hookline-faults-'));
  const signingKey = generateSignerKey('hookline.faults/evidence');
  const receiver = await startReceiver();
  const started = Date.now();
  const cluster = await startCluster({
    dataDir,
    brokers: Number(process.env.FAULTS_BROKERS ?? 3),
    plan: [
      { name: 'hookline-1', args: [] },
      { name: 'hookline-2', args: [] },
    ],
    env: {
      ...process.env,
      HOOKLINE_ENV: 'production',
      SECRETS_KEK: randomKek('faults'),
      EVIDENCE_SIGNING_KEY: signingKey,
      DESTINATION_ALLOWED_NETWORKS: 'loopback',
      INGEST_RATE_LIMIT_PER_HOOK: 'off',
      INGEST_RATE_LIMIT_PER_TENANT: 'off',
      KAFKA_PARTITIONS: '6',
      LOG_LEVEL: 'warn',
      BOOTSTRAP_DEMO_TENANT: 'true',
    },
    say,
  });
  const results: FaultResult[] = [];
  let exitCode = 0;
  try {
    say(`cluster up in ${Math.round((Date.now() - started) / 1000)} s`);
    const key = cluster.demoKey();
    if (!key) throw new Error('the first process printed no demo key');
    const base = cluster.processes[0]!.url;
    const dest = await api(base, key, 'POST', '/v1/tenants/demo/destinations', { name: 'fault receiver', url: receiver.url });
    const ing = await api(base, key, 'POST', '/v1/tenants/demo/ingesters', { name: 'fault load', provider: 'none', config: {}, destination_ids: [dest.id] });
    const hookPath = `/v1/hooks/${ing.id as string}`;
    const load = new Load(cluster.processes, hookPath, RATE);
    load.start();
    const { monitorEventLoopDelay } = await import('node:perf_hooks');
    const eld = monitorEventLoopDelay({ resolution: 10 });
    eld.enable();
    // progress, and a check that the load generator itself is not what lags
    const progress = setInterval(() => {
      say(`accepted ${load.accepted.size}, delivered ${receiver.seen.size}; load generator's event loop delay p99 ${Math.round(eld.percentile(99) / 1e6)} ms`);
      eld.reset();
    }, 10_000);
    const kafka = createKafka(cluster.kafka.brokers, 'hookline-faults-check');
    const codec = AvroCodec.connect(cluster.registryUrl);
    const evidenceTopic = topicNames('', []).evidenceLeaves;
    // the groups' first rebalances and the new ingester reaching every process are not a fault
    say(`settling: ${SETTLE_MS / 1000} s of load at ${RATE}/s`);
    await sleep(SETTLE_MS);
    const windows: { name: string; startedAt: number; injectedAt: number; clearedAt: number; recoveredAt: number | undefined; refusedBefore: number; refusedAfter: number; evidence: EvidenceLogCheck; raw?: { sent: number; not_accepted: number } }[] = [];
    const scan = { index: 0 };
    for (const fault of faults) {
      load.phase = fault.name;
      const refusedBefore = load.refused;
      say(`${fault.name}: ${WARM_MS / 1000} s of load at ${RATE}/s first`);
      const startedAt = Date.now();
      const probe = fault.raw ? new RawProbe(cluster.kafka.brokers, `faults-raw-${fault.name}`, RATE / 3) : undefined;
      await probe?.start();
      await sleep(WARM_MS);
      const injectedAt = Date.now();
      const steadyBacklog = backlog(load, receiver.seen, scan, injectedAt).length;
      const clearedAt = await fault.run(cluster, load);
      // the next fault starts from the steady state, not from this one's backlog
      const recoveredAt = await caughtUp(load, receiver.seen, scan, steadyBacklog + 5);
      say(`${fault.name}: ${recoveredAt === undefined ? 'NOT caught up' : `caught up ${Math.round((recoveredAt - clearedAt) / 100) / 10} s after clearing`}`);
      const raw = await probe?.stop();
      if (raw) say(`${fault.name}: bare Kafka client ${raw.not_accepted} of ${raw.sent} not acknowledged within ${RAW_DEADLINE_MS} ms`);
      await fault.restore?.(cluster, load);
      await sleep(AFTER_MS);
      const evidence = await checkEvidenceLog(kafka, codec, evidenceTopic, signingKey);
      say(`${fault.name}: evidence log ${evidence.consistent ? `one tree of ${evidence.tree_size} leaves` : `NOT CONSISTENT: ${evidence.problem}`}`);
      windows.push({ name: fault.name, startedAt, injectedAt, clearedAt, recoveredAt, refusedBefore, refusedAfter: load.refused, evidence, ...(raw ? { raw } : {}) });
    }
    clearInterval(progress);
    load.phase = 'tail';
    await load.stop();
    say(`load stopped: ${load.accepted.size} accepted, ${load.refused} refused; waiting for every accepted webhook`);
    const deadline = Date.now() + DRAIN_MS;
    const undelivered = () => [...load.accepted.keys()].filter((k) => !receiver.seen.has(k)).length;
    while (undelivered() > 0 && Date.now() < deadline) await sleep(1_000);
    // late duplicates (a redelivery after a rebalance) have a moment to show
    await sleep(5_000);
    const final = await checkEvidenceLog(kafka, codec, evidenceTopic, signingKey);
    say(`evidence log at the end: ${final.consistent ? `one tree of ${final.tree_size} leaves` : `NOT CONSISTENT: ${final.problem}`}`);
    for (const w of windows) {
      const mine = [...load.accepted].filter(([k]) => k.startsWith(`${w.name}:`));
      const delivered = mine.filter(([k]) => receiver.seen.has(k));
      const duplicates = [...receiver.seen].filter(([k]) => k.startsWith(`${w.name}:`)).reduce((n, [, s]) => n + s.count - 1, 0);
      // accepted in the warm-up, and delivered: the lag the fault found
      const lagsBefore = mine.filter(([, at]) => at >= w.startedAt && at < w.injectedAt).flatMap(([k, at]) => {
        const seen = receiver.seen.get(k);
        return seen ? [seen.firstAt - at] : [];
      });
      results.push({
        name: w.name,
        accepted: mine.length,
        delivered: delivered.length,
        lost: mine.length - delivered.length,
        duplicates,
        max_delay_s: Math.round(Math.max(0, ...delivered.map(([k, at]) => receiver.seen.get(k)!.firstAt - at)) / 100) / 10,
        outage_s: Math.round((w.clearedAt - w.injectedAt) / 100) / 10,
        recovery_s: w.recoveredAt === undefined ? -1 : Math.round((w.recoveredAt - w.clearedAt) / 100) / 10,
        refused: w.refusedAfter - w.refusedBefore,
        offered: mine.length + w.refusedAfter - w.refusedBefore,
        ...(w.raw ? { raw: w.raw } : {}),
        lag_before_p50_s: Math.round(quantile(lagsBefore, 0.5) / 100) / 10,
        lag_before_p99_s: Math.round(quantile(lagsBefore, 0.99) / 100) / 10,
        evidence: w.evidence,
      });
    }
    if (results.some((r) => r.lost > 0 || !r.evidence.consistent) || !final.consistent) exitCode = 1;
  } finally {
    await cluster.stop();
    await receiver.close();
    if (!process.env.FAULTS_DIR && exitCode === 0) rmSync(dataDir, { recursive: true, force: true });
  }
  const out = {
    when: new Date().toISOString(),
    rate_per_s: RATE,
    topology: '3 KRaft brokers (RF 3, min.insync.replicas 2), 2 service processes running every stage, Redis, ClickHouse server',
    faults: results.map(({ evidence, ...r }) => ({ ...r, evidence_consistent: evidence.consistent, evidence_tree_size: evidence.tree_size, ...(evidence.problem ? { evidence_problem: evidence.problem } : {}) })),
  };
  mkdirSync(RESULTS, { recursive: true });
  writeFileSync(path.join(RESULTS, 'faults.json'), `${JSON.stringify(out, null, 2)}\n`);
  const table = [
    '| fault | accepted | delivered | lost | duplicates | fault lasted (s) | recovery (s) | lag before, p50 / p99 (s) | longest delay (s) | not accepted at the Hook URL | bare Kafka client: not acknowledged in time | evidence log |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
    ...out.faults.map((f) => `| ${f.name} | ${f.accepted} | ${f.delivered} | ${f.lost} | ${f.duplicates} (${percent(f.duplicates, f.accepted)}) | ${f.outage_s} | ${f.recovery_s} | ${f.lag_before_p50_s} / ${f.lag_before_p99_s} | ${f.max_delay_s} | ${f.refused} (${percent(f.refused, f.offered)}) | ${f.raw ? `${f.raw.not_accepted} of ${f.raw.sent} (${percent(f.raw.not_accepted, f.raw.sent)})` : '-'} | ${f.evidence_consistent ? `one tree, ${f.evidence_tree_size} leaves` : `NOT CONSISTENT: ${f.evidence_problem}`} |`),
  ].join('\n');
  writeFileSync(path.join(RESULTS, 'faults.md'), `# Fault tests (${out.when}, ${RATE} webhooks/s offered)\n\n${out.topology}.\n\nRecovery: from clearing the fault until the webhooks accepted more than 2 s before and not yet delivered are no more than before the fault, and stay so for 5 s. Longest delay: the longest any webhook of the window took from its 202 to the receiver. Lag before: acceptance to first delivery of the webhooks accepted in the 15 s before the fault. Not accepted: answered other than 202 (a 503 once Kafka has not acknowledged within INGEST_ACK_TIMEOUT_MS, ${RAW_DEADLINE_MS} ms here), or not answered; the share is of the webhooks offered in the window. Bare Kafka client: a kafkajs producer (idempotent, acks=all, a ${RAW_REQUEST_TIMEOUT_MS} ms request timeout like the service's) sending one record at a time at a third of the offered rate beside the service through a broker fault's window; not acknowledged within ${RAW_DEADLINE_MS} ms, or failed: what Kafka's own leader failover costs a client.\n\n${table}\n`);
  process.stdout.write(`${table}\n`);
  process.exit(exitCode);
}

main().catch((err: unknown) => {
  process.stderr.write(`faults: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
