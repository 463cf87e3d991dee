import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startLocalKafka, type LocalKafka } from '../../infra/kafka/local-kafka';
import { startLocalRedis, type LocalRedis } from '../../infra/redis/local-redis';
import { startSchemaRegistry, type SchemaRegistryServer } from '../../infra/registry/server';
import { createKafka } from '../../platform/kafka/client';
import { randomKek } from '../support/keyring';

export interface TestInfra {
  kafka?: LocalKafka;
  redis?: LocalRedis;
  registry?: SchemaRegistryServer;
  dir: string;
}

declare global {
  // eslint-disable-next-line no-var
  var __hooklineTestInfra: TestInfra | undefined;
}

/**
 * Brings up one real Kafka broker, one Redis and one schema registry for the whole run
 * (each only when its variable is unset) and hands them to the test workers through the
 * environment. Tests isolate themselves with their own topics, groups, tenants and databases.
 */
export default async function globalSetup(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'hookline-test-'));
  const infra: TestInfra = { dir };
  globalThis.__hooklineTestInfra = infra;
  const started = Date.now();
  const [kafka, redis] = await Promise.all([
    process.env.KAFKA_BROKERS ? undefined : startLocalKafka(path.join(dir, 'kafka'), { heap: '768m' }),
    process.env.REDIS_URL ? undefined : startLocalRedis(path.join(dir, 'redis')),
  ]);
  infra.kafka = kafka;
  infra.redis = redis;
  if (kafka) process.env.KAFKA_BROKERS = kafka.brokers.join(',');
  if (redis) process.env.REDIS_URL = redis.url;
  if (!process.env.SCHEMA_REGISTRY_URL) {
    const client = createKafka(process.env.KAFKA_BROKERS!.split(','), 'test-registry');
    infra.registry = await startSchemaRegistry({ kafka: client, topic: '_schemas' });
    process.env.SCHEMA_REGISTRY_URL = infra.registry.url;
  }
  process.env.HOOKLINE_TEST_DIR = dir;
  // the key that seals stored secrets: one per run, so the CLI and spawned services a test starts open what its service wrote
  process.env.SECRETS_KEK ??= randomKek('run');
  process.stderr.write(`\ntest infrastructure up in ${Date.now() - started} ms: kafka ${process.env.KAFKA_BROKERS}, redis ${process.env.REDIS_URL}, registry ${process.env.SCHEMA_REGISTRY_URL}\n`);
}
