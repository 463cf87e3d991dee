import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT, sourceDir } from '../../core/paths';
import { createKafka } from '../../platform/kafka/client';
import { spawnTethered, type ChildHandle } from '../process/child';
import { freePort, waitFor } from '../process/ports';
import { requireJava, requireMaven } from '../prerequisites';

const POM = path.join(sourceDir(__dirname), 'pom.xml');

export interface LocalKafka {
  brokers: string[];
  /** The SASL/PLAIN listener's addresses, when started with `sasl`. */
  saslBrokers?: string[];
  /** Calls `listener` if the broker ends without stop() having been called. */
  onUnexpectedExit(listener: (detail: string) => void): void;
  stop(): Promise<void>;
}

function kafkaVersion(): string {
  const m = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(readFileSync(POM, 'utf8'));
  if (!m?.[1]) throw new Error(`no kafka.version in ${POM}`);
  return m[1];
}

/**
 * The broker's jars, resolved once with Maven into `.cache/kafka-<version>/libs` (git-ignored)
 * and reused afterwards. Concurrent first runs each resolve into their own folder; the first
 * rename wins and the others are dropped.
 */
export function resolveKafkaJars(cacheRoot = path.join(REPO_ROOT, '.cache')): string {
  const dir = path.join(cacheRoot, `kafka-${kafkaVersion()}`, 'libs');
  if (existsSync(dir) && readdirSync(dir).some((f) => f.startsWith('kafka_2.13-'))) return dir;
  requireMaven();
  mkdirSync(path.dirname(dir), { recursive: true });
  const tmp = `${dir}.${process.pid}.${randomBytes(3).toString('hex')}`;
  process.stderr.write(`resolving Apache Kafka ${kafkaVersion()} from Maven Central into ${dir}...\n`);
  const r = spawnSync('mvn', ['-q', '-B', '-f', POM, 'dependency:copy-dependencies', `-DoutputDirectory=${tmp}`], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (r.status !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    throw new Error(`mvn could not resolve Kafka: ${(r.stdout + r.stderr).trim().split('\n').slice(-5).join(' | ')}`);
  }
  try {
    renameSync(tmp, dir);
  } catch {
    rmSync(tmp, { recursive: true, force: true });
  }
  return dir;
}

/** One KRaft node: broker and controller in one JVM, on fixed loopback ports. */
export interface KafkaNodeSpec {
  id: number;
  port: number;
  controllerPort: number;
  /** The SASL/PLAIN listener's port, when the node has one. */
  saslPort?: number;
}

/**
 * A second client listener that takes SASL/PLAIN (without TLS) beside the plaintext one, for
 * tests of clients that authenticate: the users it accepts and their passwords. The brokers
 * still talk to each other over the plaintext listener.
 */
export interface LocalKafkaSasl {
  users: Record<string, string>;
}

/** The server.properties lines of the SASL/PLAIN listener (JAAS inline, one user_<name> per user). */
function saslListenerProperties(sasl: LocalKafkaSasl): string[] {
  const quote = (v: string) => `"${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  const users = Object.entries(sasl.users).map(([name, password]) => `user_${name}=${quote(password)}`).join(' ');
  return [
    'sasl.enabled.mechanisms=PLAIN',
    'listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN',
    `listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required ${users};`,
  ];
}

/**
 * A node's server.properties. With more than one node, internal topics are replicated three
 * ways (or as many as there are nodes), a write needs two in-sync replicas, and a replica that
 * fell behind is never elected leader: a broker's loss never loses an acknowledged record.
 */
function serverProperties(dataDir: string, node: KafkaNodeSpec, voters: readonly KafkaNodeSpec[], sasl?: LocalKafkaSasl): string {
  const replicas = Math.min(3, voters.length);
  const minIsr = Math.min(2, replicas);
  // a thread per core for requests, half that for the network (the defaults, 3 and 8, are for
  // servers with cores to spare; on 2 cores the extra threads only switch); several nodes share the cores
  const cores = Math.max(1, Math.floor(os.availableParallelism() / voters.length));
  const saslPort = sasl ? node.saslPort : undefined;
  const saslListener = saslPort === undefined ? '' : `,SASL_PLAINTEXT://127.0.0.1:${saslPort}`;
  return [
    'process.roles=broker,controller',
    `node.id=${node.id}`,
    `controller.quorum.voters=${voters.map((v) => `${v.id}@127.0.0.1:${v.controllerPort}`).join(',')}`,
    `listeners=PLAINTEXT://127.0.0.1:${node.port}${saslListener},CONTROLLER://127.0.0.1:${node.controllerPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${node.port}${saslListener}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    `listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT${saslPort === undefined ? '' : ',SASL_PLAINTEXT:SASL_PLAINTEXT'}`,
    ...(sasl && saslPort !== undefined ? saslListenerProperties(sasl) : []),
    `log.dirs=${path.join(dataDir, 'log')}`,
    'num.partitions=1',
    `num.network.threads=${Math.max(2, Math.floor(cores / 2))}`,
    `num.io.threads=${Math.max(2, cores)}`,
    'auto.create.topics.enable=false',
    `default.replication.factor=${replicas}`,
    `min.insync.replicas=${minIsr}`,
    'unclean.leader.election.enable=false',
    `offsets.topic.replication.factor=${replicas}`,
    'offsets.topic.num.partitions=10',
    `transaction.state.log.replication.factor=${replicas}`,
    `transaction.state.log.min.isr=${minIsr}`,
    `share.coordinator.state.topic.replication.factor=${replicas}`,
    `share.coordinator.state.topic.min.isr=${minIsr}`,
    'group.initial.rebalance.delay.ms=0',
    'log.cleaner.min.compaction.lag.ms=0',
    '',
  ].join('\n');
}

function log4jConfig(logFile: string): string {
  return [
    'Configuration:',
    '  Appenders:',
    '    RollingFile:',
    '      name: F',
    `      fileName: "${logFile}"`,
    `      filePattern: "${logFile}.%i"`,
    '      PatternLayout: { pattern: "[%d] %p %m (%c)%n" }',
    '      Policies: { SizeBasedTriggeringPolicy: { size: "20 MB" } }',
    '      DefaultRolloverStrategy: { max: 3 }',
    '  Loggers:',
    '    Root: { level: INFO, AppenderRef: [ { ref: F } ] }',
    '    Logger: [ { name: kafka.request.logger, level: WARN }, { name: org.apache.kafka.controller, level: WARN } ]',
    '',
  ].join('\n');
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A broker of an earlier run that is still shutting down holds the log dir lock; wait for it. */
async function waitForPreviousBroker(pidFile: string): Promise<void> {
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8'));
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return;
  const cmdline = existsSync(`/proc/${pid}/cmdline`) ? readFileSync(`/proc/${pid}/cmdline`, 'utf8') : '';
  if (!cmdline.includes('kafka.Kafka')) return;
  const deadline = Date.now() + 20_000;
  while (isAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  if (isAlive(pid)) process.kill(pid, 'SIGKILL');
}

/** One node's JVM, started under `dataDir` (formatted on its first start only). */
interface StartedNode {
  child: ChildHandle;
  dataDir: string;
}

async function startNode(dataDir: string, node: KafkaNodeSpec, voters: readonly KafkaNodeSpec[], clusterId: string, heap: string | undefined, sasl?: LocalKafkaSasl): Promise<StartedNode> {
  const libs = resolveKafkaJars();
  mkdirSync(dataDir, { recursive: true });
  const pidFile = path.join(dataDir, 'kafka.pid');
  await waitForPreviousBroker(pidFile);
  const propsFile = path.join(dataDir, 'server.properties');
  writeFileSync(propsFile, serverProperties(dataDir, node, voters, sasl));
  const log4jFile = path.join(dataDir, 'log4j2.yaml');
  writeFileSync(log4jFile, log4jConfig(path.join(dataDir, 'server.log')));
  const classpath = `${libs}/*`;

  if (!existsSync(path.join(dataDir, 'log', 'meta.properties'))) {
    // base64url may begin with "-"; passed as --cluster-id=<id> it is never taken for an option
    const r = spawnSync('java', ['-cp', classpath, `-Dlog4j2.configurationFile=${log4jFile}`, 'kafka.tools.StorageTool', 'format', `--cluster-id=${clusterId}`, `--config=${propsFile}`], {
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`formatting Kafka storage failed: ${(r.stdout + r.stderr).trim()}`);
  }

  const child: ChildHandle = spawnTethered(
    `kafka-${node.id}`,
    'java',
    [
      `-Xms${heap ?? '512m'}`,
      `-Xmx${heap ?? '1g'}`,
      '-XX:+UseG1GC',
      '-XX:MaxGCPauseMillis=20',
      '-Djava.awt.headless=true',
      `-Dlog4j2.configurationFile=${log4jFile}`,
      '-cp',
      classpath,
      'kafka.Kafka',
      propsFile,
    ],
    { logFile: path.join(dataDir, 'stdout.log') },
  );
  writeFileSync(pidFile, String(child.pid));
  return { child, dataDir };
}

/** Waits until `brokers` answer metadata with at least `count` brokers registered. */
async function waitForBrokers(brokers: string[], count: number, started: StartedNode[]): Promise<void> {
  const exited = new Set<StartedNode>();
  for (const s of started) void s.child.exited.then(() => exited.add(s));
  const kafka = createKafka(brokers, 'local-kafka-probe', { quiet: true });
  const admin = kafka.admin({ retry: { retries: 0 } });
  try {
    await waitFor(
      count > 1 ? `local Kafka cluster (${count} brokers)` : 'local Kafka',
      async () => {
        const gone = started.find((s) => exited.has(s));
        if (gone) throw new Error(`the broker exited; see ${path.join(gone.dataDir, 'server.log')}`);
        await admin.connect();
        const cluster = await admin.describeCluster();
        if (cluster.brokers.length < count) throw new Error(`${cluster.brokers.length} of ${count} brokers registered`);
      },
      120_000,
      250,
    );
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

function newClusterId(): string {
  return randomBytes(16).toString('base64url').slice(0, 22);
}

/**
 * A single-node Kafka (KRaft, broker and controller in one JVM) under `dataDir`, on free
 * loopback ports. The storage is formatted on the first start only, so topics and offsets
 * survive restarts. Resolves once the broker answers metadata requests.
 */
export async function startLocalKafka(dataDir: string, options: { heap?: string; sasl?: LocalKafkaSasl } = {}): Promise<LocalKafka> {
  requireJava();
  const node: KafkaNodeSpec = { id: 1, port: await freePort(), controllerPort: await freePort(), ...(options.sasl ? { saslPort: await freePort() } : {}) };
  const started = await startNode(dataDir, node, [node], newClusterId(), options.heap, options.sasl);
  const { child } = started;
  const brokers = [`127.0.0.1:${node.port}`];
  try {
    await waitForBrokers(brokers, 1, [started]);
  } catch (err) {
    await child.stop(2_000);
    throw err;
  }

  return {
    brokers,
    ...(node.saslPort === undefined ? {} : { saslBrokers: [`127.0.0.1:${node.saslPort}`] }),
    onUnexpectedExit(listener) {
      void child.exited.then(({ code, signal }) => {
        if (!child.stopping) listener(`exit code ${code}, signal ${signal}; see ${path.join(dataDir, 'server.log')}`);
      });
    },
    async stop() {
      await child.stop(15_000);
      rmSync(path.join(dataDir, 'kafka.pid'), { force: true });
    },
  };
}

/** One node of a local cluster, which a fault test may kill, stop, continue and start again. */
export interface LocalKafkaNode {
  readonly id: number;
  readonly broker: string;
  /** The JVM's pid while it runs (the tether's child), undefined when stopped. */
  readonly pid: number | undefined;
  /** Sends a signal to the broker's JVM (SIGKILL, SIGSTOP, SIGCONT). */
  signal(signal: NodeJS.Signals): void;
  /** Starts the node again on its data and ports, after a kill or a stop. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface LocalKafkaCluster {
  brokers: string[];
  /** The SASL/PLAIN listeners' addresses, when started with `sasl`. */
  saslBrokers?: string[];
  nodes: LocalKafkaNode[];
  stop(): Promise<void>;
}

interface ClusterFile {
  cluster_id: string;
  nodes: KafkaNodeSpec[];
}

/** The JVM under a tether's bash: the one child of the tether whose command line is kafka.Kafka. */
function jvmPid(tetherPid: number): number | undefined {
  try {
    const children = readFileSync(`/proc/${tetherPid}/task/${tetherPid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    return children.find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('kafka.Kafka'));
  } catch {
    return undefined;
  }
}

/**
 * A Kafka cluster of `nodes` KRaft nodes (each broker and controller) under `dataDir/node-<id>`,
 * from the same Maven-fetched jars. Its cluster id and ports are chosen on the first start and
 * kept in `dataDir/cluster.json`, so a restart, of the whole cluster or of one node, finds the
 * same quorum and the same data.
 */
export async function startLocalKafkaCluster(dataDir: string, options: { nodes?: number; heap?: string; sasl?: LocalKafkaSasl } = {}): Promise<LocalKafkaCluster> {
  requireJava();
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, 'cluster.json');
  let layout: ClusterFile;
  if (existsSync(file)) {
    layout = JSON.parse(readFileSync(file, 'utf8')) as ClusterFile;
  } else {
    const count = options.nodes ?? 3;
    const nodes: KafkaNodeSpec[] = [];
    for (let id = 1; id <= count; id++) nodes.push({ id, port: await freePort(), controllerPort: await freePort(), ...(options.sasl ? { saslPort: await freePort() } : {}) });
    layout = { cluster_id: newClusterId(), nodes };
    writeFileSync(file, `${JSON.stringify(layout, null, 2)}\n`);
  }
  const brokers = layout.nodes.map((n) => `127.0.0.1:${n.port}`);
  const running = new Map<number, StartedNode>();
  const nodeDir = (id: number) => path.join(dataDir, `node-${id}`);
  const startOne = async (spec: KafkaNodeSpec) => {
    const started = await startNode(nodeDir(spec.id), spec, layout.nodes, layout.cluster_id, options.heap ?? '512m', options.sasl);
    running.set(spec.id, started);
    return started;
  };
  const stopOne = async (id: number) => {
    const s = running.get(id);
    if (!s) return;
    running.delete(id);
    await s.child.stop(15_000);
    rmSync(path.join(s.dataDir, 'kafka.pid'), { force: true });
  };
  try {
    const started = await Promise.all(layout.nodes.map(startOne));
    await waitForBrokers(brokers, layout.nodes.length, started);
  } catch (err) {
    await Promise.all(layout.nodes.map((n) => stopOne(n.id)));
    throw err;
  }
  const nodes: LocalKafkaNode[] = layout.nodes.map((spec) => ({
    id: spec.id,
    broker: `127.0.0.1:${spec.port}`,
    get pid() {
      const s = running.get(spec.id);
      return s ? jvmPid(s.child.pid) : undefined;
    },
    signal(signal) {
      const s = running.get(spec.id);
      const pid = s && jvmPid(s.child.pid);
      if (pid === undefined) throw new Error(`broker ${spec.id} is not running`);
      process.kill(pid, signal);
    },
    async start() {
      const s = running.get(spec.id);
      if (s) {
        if (jvmPid(s.child.pid) !== undefined) throw new Error(`broker ${spec.id} is running`);
        // a killed JVM leaves its tether to exit; wait for it before starting again
        await s.child.exited;
        running.delete(spec.id);
      }
      await startOne(spec);
      await waitForBrokers([`127.0.0.1:${spec.port}`], layout.nodes.length, [running.get(spec.id)!]);
    },
    stop: () => stopOne(spec.id),
  }));
  const saslPorts = layout.nodes.map((n) => n.saslPort).filter((p): p is number => p !== undefined);
  return {
    brokers,
    ...(options.sasl && saslPorts.length > 0 ? { saslBrokers: saslPorts.map((p) => `127.0.0.1:${p}`) } : {}),
    nodes,
    stop: async () => {
      await Promise.all(layout.nodes.map((n) => stopOne(n.id)));
    },
  };
}
