import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { servesHttp, stagesFromArgs, type StageName } from '../../core/config';
import { entryPointArgs, REPO_ROOT } from '../../core/paths';
import { topicNames } from '../../core/topics';
import { createKafka } from '../../platform/kafka/client';
import { startLocalClickHouse } from '../clickhouse/local-clickhouse';
import { startLocalKafkaCluster, type LocalKafkaCluster } from '../kafka/local-kafka';
import { spawnTethered, type ChildHandle } from '../process/child';
import { freePort, waitFor } from '../process/ports';
import { startLocalRedis } from '../redis/local-redis';
import { startSchemaRegistry, type SchemaRegistryServer } from '../registry/server';


/** One service process of the cluster: a name and the arguments of `service/main.ts`. */
export interface ProcessPlan {
  name: string;
  /** `--role …` / `--stage …`; none runs every stage. */
  args: string[];
}

export interface ClusterOptions {
  dataDir: string;
  /** Kafka nodes (each broker and controller); 3 unless told. */
  brokers?: number;
  plan: ProcessPlan[];
  /** The environment every service process starts from (secrets, HOOKLINE_ENV, limits). */
  env: NodeJS.ProcessEnv;
  /** Port of the first process that serves HTTP beyond health (the API, the Hook URLs); the next ones count up. 0: free ports. */
  firstHttpPort?: number;
  /** Where progress lines go. */
  say?: (line: string) => void;
}

/** A dependency of the cluster that a fault test may stop and start again on the same data and port. */
export interface Restartable {
  readonly url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
}

/** A service process of the cluster. */
export interface ServiceInstance {
  readonly name: string;
  readonly args: readonly string[];
  /** Base URL of its HTTP server: /healthz and /readyz always, the API or Hook URLs by role. */
  readonly url: string;
  /** Whether it serves the API or the Hook URLs, not only health. */
  readonly servesHttp: boolean;
  /** The process group (the tether's pid) while it runs. */
  readonly pgid: number | undefined;
  readonly logFile: string;
  start(): Promise<void>;
  /** Sends `signal` to the whole process group (SIGKILL: no shutdown of any kind). */
  signal(signal: NodeJS.Signals): void;
  /** Resolves when the running process has ended (at once when none runs). */
  exited(): Promise<void>;
  stop(): Promise<void>;
}

export interface RunningCluster {
  kafka: LocalKafkaCluster;
  redis: Restartable;
  clickhouse: Restartable;
  registryUrl: string;
  processes: ServiceInstance[];
  /** The environment the service processes run with (the dependencies' addresses included). */
  env: NodeJS.ProcessEnv;
  /** The demo tenant's key, when the first process created it on this start. */
  demoKey(): string | undefined;
  /** Stops the service processes, then the registry, Kafka, Redis and ClickHouse. */
  stop(): Promise<void>;
}

/** Whether a process started with `args` serves the API or the Hook URLs: the roles as the service reads them. */
function servesHttpArgs(args: readonly string[]): boolean {
  const stages = stagesFromArgs([...args]);
  return stages === undefined || servesHttp(stages.split(',') as StageName[]);
}

/** A server started on a port of its own, which stop() and start() take down and bring back there. */
async function restartable(start: (port: number) => Promise<{ url: string; stop(): Promise<void> }>): Promise<Restartable> {
  // the free port may be taken by another process before the server binds it: a few ports are tried
  let port = await freePort();
  let server: { url: string; stop(): Promise<void> } | undefined;
  for (let attempt = 1; !server; attempt++) {
    try {
      server = await start(port);
    } catch (err) {
      if (attempt >= 3) throw err;
      port = await freePort();
    }
  }
  return {
    url: server.url,
    async stop() {
      await server?.stop();
      server = undefined;
    },
    async start() {
      server ??= await start(port);
    },
  };
}

/** Polls `/readyz` until 200; fails early if the process ends first. */
async function waitReady(url: string, child: ChildHandle, logFile: string, timeoutMs: number): Promise<void> {
  let ended = false;
  void child.exited.then(() => (ended = true));
  await waitFor(
    `${url}/readyz`,
    async () => {
      if (ended) throw new Error(`the process ended; see ${logFile}`);
      const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(5_000) });
      if (res.status !== 200) throw new Error(`readyz ${res.status}: ${(await res.text()).slice(0, 300)}`);
    },
    timeoutMs,
    250,
  );
}

function serviceInstance(plan: ProcessPlan, port: number, http: boolean, env: NodeJS.ProcessEnv, dataDir: string): ServiceInstance {
  const url = `http://127.0.0.1:${port}`;
  const dir = path.join(dataDir, 'processes', plan.name);
  const logFile = path.join(dir, 'service.log');
  let child: ChildHandle | undefined;
  let running = false;
  return {
    name: plan.name,
    args: plan.args,
    url,
    servesHttp: http,
    logFile,
    get pgid() {
      return child?.pid;
    },
    async start() {
      if (running) throw new Error(`${plan.name} is running`);
      mkdirSync(dir, { recursive: true });
      running = true;
      child = spawnTethered(plan.name, process.execPath, ['--max-semi-space-size=64', ...entryPointArgs('service/main.ts'), ...plan.args], {
        logFile,
        cwd: REPO_ROOT,
        env: { ...env, DATA_DIR: dir, PORT: String(port), HOST: '127.0.0.1', ...(http ? { PUBLIC_BASE_URL: url } : {}) },
      });
      void child.exited.then(() => (running = false));
      await waitReady(url, child, logFile, 180_000);
    },
    signal(signal) {
      if (!child) throw new Error(`${plan.name} is not running`);
      process.kill(-child.pid, signal);
    },
    async exited() {
      if (child) await child.exited;
    },
    async stop() {
      await child?.stop(20_000);
    },
  };
}

/**
 * A whole deployment on this machine: a Kafka cluster of several KRaft nodes (replication
 * factor 3, two in-sync replicas), the schema registry (in this process), Redis, a ClickHouse
 * server over the embedded engine, and the service as the processes of `plan`, each with its
 * own data dir under `dataDir/processes/`. Everything keeps its data under `dataDir`, so a
 * second start on the same directory resumes the same deployment.
 */
export async function startCluster(options: ClusterOptions): Promise<RunningCluster> {
  const say = options.say ?? (() => undefined);
  const { dataDir } = options;
  const brokers = options.brokers ?? 3;
  const replication = Math.min(3, brokers);
  const stops: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const stop of stops.splice(0).reverse()) await stop().catch(() => undefined);
  };
  try {
    say(`starting ${brokers} Kafka brokers, Redis and ClickHouse under ${dataDir}`);
    const chUser = 'hookline';
    const chPassword = options.env.CLICKHOUSE_PASSWORD ?? 'hookline-local';
    const [kafka, redis, clickhouse] = await Promise.all([
      startLocalKafkaCluster(path.join(dataDir, 'kafka'), { nodes: brokers }),
      restartable((port) => startLocalRedis(path.join(dataDir, 'redis'), { port })),
      restartable((port) => startLocalClickHouse(path.join(dataDir, 'clickhouse'), { port, user: chUser, password: chPassword })),
    ]);
    stops.push(() => clickhouse.stop(), () => redis.stop(), () => kafka.stop());
    say(`Kafka ${kafka.brokers.join(',')}; Redis ${redis.url}; ClickHouse ${clickhouse.url}`);

    const topics = topicNames(options.env.TOPIC_PREFIX ?? '', []);
    const registry: SchemaRegistryServer = await startSchemaRegistry({ kafka: createKafka(kafka.brokers, 'hookline-cluster-registry'), topic: topics.schemas, replicationFactor: replication });
    stops.push(() => registry.close());
    say(`schema registry ${registry.url}`);

    const env: NodeJS.ProcessEnv = {
      ...options.env,
      KAFKA_BROKERS: kafka.brokers.join(','),
      KAFKA_REPLICATION_FACTOR: String(replication),
      SCHEMA_REGISTRY_URL: registry.url,
      REDIS_URL: redis.url,
      CLICKHOUSE_URL: clickhouse.url,
      CLICKHOUSE_USER: chUser,
      CLICKHOUSE_PASSWORD: chPassword,
    };
    let nextHttpPort = options.firstHttpPort ?? 8080;
    const processes: ServiceInstance[] = [];
    for (const [i, plan] of options.plan.entries()) {
      const http = servesHttpArgs(plan.args);
      // a first port of 0: every process on a free port (tests)
      const port = http && options.firstHttpPort !== 0 ? nextHttpPort++ : await freePort();
      // the first process (which starts alone) makes the demo tenant, if anyone does
      processes.push(serviceInstance(plan, port, http, i === 0 ? env : { ...env, BOOTSTRAP_DEMO_TENANT: 'false' }, dataDir));
    }
    stops.push(async () => {
      await Promise.all(processes.map((p) => p.stop()));
    });
    // the first process creates the topics and migrates ClickHouse; the rest start together
    const [first, ...rest] = processes;
    // the log is appended to across starts: the key, if any, is in what this start wrote
    const logStart = first && existsSync(first.logFile) ? statSync(first.logFile).size : 0;
    if (first) {
      await first.start();
      say(`${first.name} ready at ${first.url}`);
    }
    await Promise.all(
      rest.map(async (p) => {
        await p.start();
        say(`${p.name} ready at ${p.url}`);
      }),
    );
    const demoKey = () => {
      if (!first || !existsSync(first.logFile)) return undefined;
      return /^\s+(hlk_\S+)$/m.exec(readFileSync(first.logFile).subarray(logStart).toString('utf8'))?.[1];
    };
    return { kafka, redis, clickhouse, registryUrl: registry.url, processes, env, demoKey, stop: stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
