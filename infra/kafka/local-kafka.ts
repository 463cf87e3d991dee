import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createKafka } from '../../platform/kafka/client';
import { spawnTethered, type ChildHandle } from '../process/child';
import { freePort, waitFor } from '../process/ports';
import { requireJava, requireMaven } from '../prerequisites';

const REPO_ROOT = path.resolve(__dirname, '../..');
const POM = path.join(__dirname, 'pom.xml');

export interface LocalKafka {
  brokers: string[];
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

function serverProperties(dataDir: string, port: number, controllerPort: number): string {
  return [
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
    `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    'listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
    `log.dirs=${path.join(dataDir, 'log')}`,
    'num.partitions=1',
    // a thread per core for requests, half that for the network (the defaults, 3 and 8, are for
    // servers with cores to spare; on 2 cores the extra threads only switch)
    `num.network.threads=${Math.max(2, Math.floor(os.availableParallelism() / 2))}`,
    `num.io.threads=${Math.max(2, os.availableParallelism())}`,
    'auto.create.topics.enable=false',
    'offsets.topic.replication.factor=1',
    'offsets.topic.num.partitions=10',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'share.coordinator.state.topic.replication.factor=1',
    'share.coordinator.state.topic.min.isr=1',
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

/**
 * A single-node Kafka (KRaft, broker and controller in one JVM) under `dataDir`, on free
 * loopback ports. The storage is formatted on the first start only, so topics and offsets
 * survive restarts. Resolves once the broker answers metadata requests.
 */
export async function startLocalKafka(dataDir: string, options: { heap?: string } = {}): Promise<LocalKafka> {
  requireJava();
  const libs = resolveKafkaJars();
  mkdirSync(dataDir, { recursive: true });
  const pidFile = path.join(dataDir, 'kafka.pid');
  await waitForPreviousBroker(pidFile);

  const port = await freePort();
  const controllerPort = await freePort();
  const propsFile = path.join(dataDir, 'server.properties');
  writeFileSync(propsFile, serverProperties(dataDir, port, controllerPort));
  const log4jFile = path.join(dataDir, 'log4j2.yaml');
  writeFileSync(log4jFile, log4jConfig(path.join(dataDir, 'server.log')));
  const classpath = `${libs}/*`;

  if (!existsSync(path.join(dataDir, 'log', 'meta.properties'))) {
    // base64url may begin with "-"; passed as --cluster-id=<id> it is never taken for an option
    const clusterId = randomBytes(16).toString('base64url').slice(0, 22);
    const r = spawnSync('java', ['-cp', classpath, `-Dlog4j2.configurationFile=${log4jFile}`, 'kafka.tools.StorageTool', 'format', `--cluster-id=${clusterId}`, `--config=${propsFile}`], {
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`formatting Kafka storage failed: ${(r.stdout + r.stderr).trim()}`);
  }

  const child: ChildHandle = spawnTethered(
    'kafka',
    'java',
    [
      `-Xms${options.heap ?? '512m'}`,
      `-Xmx${options.heap ?? '1g'}`,
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
  const brokers = [`127.0.0.1:${port}`];

  let exitedEarly = false;
  void child.exited.then(() => {
    exitedEarly = true;
  });
  const kafka = createKafka(brokers, 'local-kafka-probe', { quiet: true });
  const admin = kafka.admin({ retry: { retries: 0 } });
  try {
    await waitFor(
      'local Kafka',
      async () => {
        if (exitedEarly) throw new Error(`the broker exited; see ${path.join(dataDir, 'server.log')}`);
        await admin.connect();
        const cluster = await admin.describeCluster();
        if (cluster.brokers.length === 0) throw new Error('no broker registered yet');
      },
      90_000,
      250,
    );
  } catch (err) {
    await child.stop(2_000);
    throw err;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }

  return {
    brokers,
    onUnexpectedExit(listener) {
      void child.exited.then(({ code, signal }) => {
        if (!child.stopping) listener(`exit code ${code}, signal ${signal}; see ${path.join(dataDir, 'server.log')}`);
      });
    },
    async stop() {
      await child.stop(15_000);
      rmSync(pidFile, { force: true });
    },
  };
}
