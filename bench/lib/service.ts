import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Partitioners } from 'kafkajs';
import { Pool } from 'undici';
import { generateSignerKey } from '../../core/signed-note';
import { freePort } from '../../infra/process/ports';
import { spawnScript, type Child, type OtherTree } from './procs';
import { sleep } from './stats';
import { callApi } from '../../test/support/service-process';

/** One key-encryption key per bench run, shared by its processes (they read each other's configuration). */
export const RUN_KEK = `bench-${randomBytes(3).toString('hex')}:${randomBytes(32).toString('base64')}`;
/** The run's evidence signing key: service processes that split the stages must share one. */
export const RUN_EVIDENCE_KEY = generateSignerKey(`hookline.bench/evidence-${randomBytes(3).toString('hex')}`);

/**
 * BENCH_SERVICE_ENV: `NAME=value` pairs (`;`-separated) every service process of the run gets on
 * top of the bench's own settings, to measure a setting's effect (e.g. `KAFKA_PRODUCERS=2`).
 */
function serviceEnvOverrides(): Record<string, string> {
  const raw = process.env.BENCH_SERVICE_ENV?.trim();
  if (!raw) return {};
  return Object.fromEntries(
    raw.split(';').filter(Boolean).map((pair) => {
      const at = pair.indexOf('=');
      if (at <= 0) throw new Error(`BENCH_SERVICE_ENV: expected NAME=value, got "${pair}"`);
      return [pair.slice(0, at).trim(), pair.slice(at + 1)];
    }),
  );
}

/** Infrastructure the benchmark started, shared by every service instance. */

export interface Infra {
  brokers: string[];
  redisUrl: string;
  registryUrl: string;
}

export interface ServiceInstance {
  proc: Child;
  url: string;
  key: string;
  prefix: string;
  dataDir: string;
}

/**
 * One service process (`service/main.ts`) on the benchmark's Kafka, Redis and registry,
 * with its own data dir and topic prefix (so instances never see each other's records),
 * and the demo tenant whose key it prints on first start.
 */
export async function startInstance(opts: { name: string; root: string; prefix: string; stages: string; infra: Infra; logLevel: string; extraEnv?: Record<string, string>; from?: OtherTree }): Promise<ServiceInstance> {
  const dataDir = path.join(opts.root, opts.name);
  mkdirSync(dataDir, { recursive: true });
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['CLICKHOUSE_URL', 'PUBLIC_BASE_URL', 'ERROR_BASE', 'CLICKHOUSE_DATABASE', 'STAGES']) delete env[name];
  Object.assign(env, {
    HOST: '127.0.0.1',
    PORT: String(port),
    DATA_DIR: dataDir,
    TOPIC_PREFIX: opts.prefix,
    KAFKA_BROKERS: opts.infra.brokers.join(','),
    KAFKA_REPLICATION_FACTOR: '1',
    KAFKA_PARTITIONS: '3',
    REDIS_URL: opts.infra.redisUrl,
    SCHEMA_REGISTRY_URL: opts.infra.registryUrl,
    STAGES: opts.stages,
    BOOTSTRAP_DEMO_TENANT: 'true',
    LOG_LEVEL: opts.logLevel,
    // the API's per-key limiter stays in the path (it still counts in Redis) but never refuses
    RATE_LIMITS: 'default=100000000/60s',
    // the Hook URL's limiter stays in the path too (leasing tokens from Redis, as in production)
    // but never refuses: the figure is the Hook URL's throughput, not a limit
    INGEST_RATE_LIMIT_PER_HOOK: '100000000/60s',
    INGEST_RATE_LIMIT_PER_TENANT: '100000000/60s',
    // the receiver listens on loopback, which production refuses
    DESTINATION_ALLOWED_NETWORKS: 'loopback',
    // processes of one run share the key their secrets are sealed under
    SECRETS_KEK: RUN_KEK,
    EVIDENCE_SIGNING_KEY: RUN_EVIDENCE_KEY,
    ...serviceEnvOverrides(),
    ...opts.extraEnv,
  });
  const proc = spawnScript(`service ${opts.name}`, 'service/main.ts', [], env, path.join(opts.root, `${opts.name}.log`), opts.from);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 180_000;
  for (;;) {
    try {
      const res = await fetch(`${url}/v1/mcp/health`, { signal: AbortSignal.timeout(5_000) });
      await res.arrayBuffer();
      if (res.status === 200) break;
    } catch {
      /* not listening yet */
    }
    if (!proc.alive() || Date.now() > deadline) {
      await proc.stop(1_000);
      throw new Error(`service ${opts.name} not healthy (exit ${proc.child.exitCode ?? proc.child.signalCode ?? 'none'}); see ${proc.logFile}`);
    }
    await sleep(250);
  }
  const [, key] = await proc.waitForOutput(/^\s+(hlk_\S+)$/m, 30_000);
  return { proc, url, key: key!, prefix: opts.prefix, dataDir };
}

/** Calls the service's API with the run's key (the tests' helper: one way to call the API). */
export function api(svc: ServiceInstance, method: string, pathname: string, body?: unknown): Promise<{ status: number; body: any }> {
  return callApi(svc.url, svc.key, method, pathname, body);
}

/** The partition kafkajs' default (Java-compatible murmur2) partitioner gives a key. */
export function partitionOf(key: string, partitions: number): number {
  const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({ partitionErrorCode: 0, partitionId, leader: 0, replicas: [0], isr: [0] }));
  return Partitioners.DefaultPartitioner()({ topic: 'any', partitionMetadata, message: { key, value: null } });
}

export interface Flow {
  destinationId: string;
  ingesterId: string;
  hookPath: string;
}

/**
 * `count` ingester -> destination flows of the demo tenant, as the traffic of several senders.
 * This service keys records by event, so even one flow spreads over every partition; earlier
 * commits (`before_after`) keyed them by tenant/ingester and by destination, so the flows are
 * placed on different partitions under those keys, which costs this service nothing. Extra
 * destinations and ingesters made while looking stay unused.
 */
export async function createFlows(svc: ServiceInstance, receiverUrl: string, count: number, partitions: number): Promise<Flow[]> {
  const destinations: string[] = [];
  const usedD = new Set<number>();
  for (let i = 0; destinations.length < count && i < 40; i++) {
    const d = await api(svc, 'POST', '/v1/tenants/demo/destinations', { name: `bench receiver ${i}`, url: receiverUrl });
    if (d.status !== 201) throw new Error(`destination: ${d.status} ${JSON.stringify(d.body)}`);
    const p = partitionOf(d.body.id as string, partitions);
    if (usedD.has(p) && usedD.size < partitions) continue;
    usedD.add(p);
    destinations.push(d.body.id as string);
  }
  const flows: Flow[] = [];
  const usedI = new Set<number>();
  for (let i = 0; flows.length < destinations.length && i < 40; i++) {
    const destinationId = destinations[flows.length]!;
    const ing = await api(svc, 'POST', '/v1/tenants/demo/ingesters', { name: `bench in ${i}`, provider: 'none', config: {}, destination_ids: [destinationId] });
    if (ing.status !== 201) throw new Error(`ingester: ${ing.status} ${JSON.stringify(ing.body)}`);
    const id = ing.body.id as string;
    const p = partitionOf(`demo/${id}`, partitions);
    if (usedI.has(p) && usedI.size < partitions) {
      // the ingester also made a flow to this destination; take it out so it stays unused
      await api(svc, 'DELETE', `/v1/tenants/demo/ingesters/${id}`);
      continue;
    }
    usedI.add(p);
    flows.push({ destinationId, ingesterId: id, hookPath: `/v1/hooks/${id}` });
  }
  if (flows.length === 0) throw new Error('no flow could be created');
  return flows;
}

/** The receiver process's control endpoints, polled over one keep-alive connection (cheap for the load generator). */
export class ReceiverClient {
  private readonly control: Pool;

  constructor(readonly base: string) {
    this.control = new Pool(base, { connections: 1, pipelining: 1 });
  }

  private async call<T>(method: 'GET' | 'POST', pathname: string): Promise<T> {
    const res = await this.control.request({ path: pathname, method });
    return (await res.body.json()) as T;
  }

  close(): Promise<void> {
    return this.control.close();
  }

  get hookUrl(): string {
    return `${this.base}/hook`;
  }

  async reset(run: string): Promise<void> {
    await this.call('POST', `/__bench/reset?run=${encodeURIComponent(run)}`);
  }

  stats(): Promise<{ run: string; distinct: number; total: number; duplicates: number; untagged: number }> {
    return this.call('GET', '/__bench/stats');
  }

  detail(): Promise<{ arrivals: number[]; latencies: number[] }> {
    return this.call('GET', '/__bench/detail');
  }

  /** Waits until `count` distinct bodies of the current run arrived; resolves with how many did. */
  async waitFor(count: number, timeoutMs: number): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const s = await this.stats();
      if (s.distinct >= count || Date.now() > deadline) return s.distinct;
      await sleep(50);
    }
  }
}
