import { mkdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../core/config';
import type { Logger } from '../core/log';
import { startLocalKafka, type LocalKafka } from './kafka/local-kafka';
import { startLocalRedis, type LocalRedis } from './redis/local-redis';

/** Where the service's dependencies are, whether started here or given by the environment. */
export interface Endpoints {
  kafkaBrokers: string[];
  redisUrl: string;
  /** Undefined when the registry is to run inside this process (it needs Kafka first). */
  schemaRegistryUrl: string | undefined;
}

export interface LocalInfrastructure {
  endpoints: Endpoints;
  started: string[];
  stop(): Promise<void>;
}

/**
 * Starts Kafka and Redis under the data dir for each of them whose variable is unset. Both
 * are tethered to this process: they stop when it stops, however it stops.
 */
export async function startLocalInfrastructure(config: Config, log: Logger): Promise<LocalInfrastructure> {
  let kafka: LocalKafka | undefined;
  let redis: LocalRedis | undefined;
  const started: string[] = [];
  try {
    const [k, r] = await Promise.all([
      config.kafkaBrokers ? undefined : startLocalKafka(path.join(config.dataDir, 'kafka')),
      config.redisUrl ? undefined : startLocalRedis(path.join(config.dataDir, 'redis')),
    ]);
    kafka = k;
    redis = r;
  } catch (err) {
    await Promise.all([kafka?.stop(), redis?.stop()]);
    throw err;
  }
  if (kafka) {
    started.push('kafka');
    log.info('local Kafka started', { brokers: kafka.brokers.join(',') });
    kafka.onUnexpectedExit((detail) => log.error('local Kafka stopped unexpectedly', { detail }));
  }
  if (redis) {
    started.push('redis');
    log.info('local Redis started', { url: redis.url });
  }
  return {
    endpoints: {
      kafkaBrokers: config.kafkaBrokers ?? kafka!.brokers,
      redisUrl: config.redisUrl ?? redis!.url,
      schemaRegistryUrl: config.schemaRegistryUrl,
    },
    started,
    async stop() {
      await Promise.all([redis?.stop(), kafka?.stop()]);
    },
  };
}

/** The run file tells other commands (the CLI) on this data dir where the running service's infrastructure is. */
export interface RunFile {
  pid: number;
  kafka_brokers: string[];
  schema_registry_url: string;
  redis_url: string;
  api_url: string | null;
}

function runFilePath(dataDir: string): string {
  return path.join(dataDir, 'run', 'infra.json');
}

export function writeRunFile(dataDir: string, run: RunFile): void {
  mkdirSync(path.join(dataDir, 'run'), { recursive: true });
  writeFileSync(runFilePath(dataDir), `${JSON.stringify(run, null, 2)}\n`);
}

export function removeRunFile(dataDir: string, pid = process.pid): void {
  const current = readRunFile(dataDir);
  if (current && current.pid === pid) rmSync(runFilePath(dataDir), { force: true });
}

/** The run file of a service that is still alive, if any. */
export function readRunFile(dataDir: string): RunFile | undefined {
  const file = runFilePath(dataDir);
  if (!existsSync(file)) return undefined;
  try {
    const run = JSON.parse(readFileSync(file, 'utf8')) as RunFile;
    process.kill(run.pid, 0);
    return run;
  } catch {
    return undefined;
  }
}
