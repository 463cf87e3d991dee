import type { Kafka } from 'kafkajs';
import { existsSync } from 'node:fs';
import { developmentKekFile, loadConfig, ConfigError, type Config } from '../core/config';
import type { Keyring } from '../core/secrets/keyring';
import { topicNames, type Topics } from '../core/topics';
import { readRunFile } from '../infra/local';
import { AvroCodec } from '../platform/avro/codec';
import { ConfigStore } from '../platform/config-store/config-store';
import { createKafka } from '../platform/kafka/client';
import { DataKeys } from '../platform/secrets/data-keys';
import { loadKeyring } from '../platform/secrets/keyring-source';

/** A failure the CLI reports as one line on stderr, exiting 1. */
export class CliError extends Error {}

export interface CliContext {
  config: Config;
  topics: Topics;
  kafka: Kafka;
  codec: AvroCodec;
  store: ConfigStore;
  keyring: Keyring;
  close(): Promise<void>;
}

/**
 * Finds the service's infrastructure: the environment's variables when set, else the run
 * file that `npm start` wrote under the same DATA_DIR.
 */
export async function connect(): Promise<CliContext> {
  const { config, keyring } = cliConfig();
  const run = readRunFile(config.dataDir);
  const brokers = config.kafkaBrokers ?? run?.kafka_brokers;
  const registryUrl = config.schemaRegistryUrl ?? run?.schema_registry_url;
  if (!brokers || !registryUrl) {
    throw new CliError(`no running service found for DATA_DIR=${config.dataDir}: start it with \`npm start\`, or set KAFKA_BROKERS and SCHEMA_REGISTRY_URL`);
  }
  const topics = topicNames(config.topicPrefix);
  const kafka = createKafka(brokers, `hookline-cli-${process.pid}`);
  const codec = AvroCodec.connect(registryUrl);
  await codec.register({ [topics.config]: 'ConfigEntry' });
  const store = new ConfigStore(kafka, codec, topics.config, keyring);
  await store.start();
  // what the CLI writes to Kafka (replays) seals its bodies as the service does, and opens what it reads
  codec.sealBodies(new DataKeys(store));
  return { config, topics, kafka, codec, store, keyring, close: () => store.stop() };
}

/**
 * The service's configuration and keyring, read as the service reads them. Beside `npm start`
 * (no SECRETS_KEK/SECRETS_KEK_FILE set), the key development generated for this DATA_DIR is used.
 */
export function cliConfig(env: NodeJS.ProcessEnv = process.env): { config: Config; keyring: Keyring } {
  try {
    const given = { ...env };
    if (!given.SECRETS_KEK?.trim() && !given.SECRETS_KEK_FILE?.trim()) {
      const devFile = developmentKekFile(loadConfig({ ...given, HOOKLINE_ENV: 'development' }).dataDir, given.HOME?.trim() || undefined);
      if (existsSync(devFile)) given.SECRETS_KEK_FILE = devFile;
    }
    const config = loadConfig(given);
    return { config, keyring: loadKeyring(config.secrets) };
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(`invalid configuration: ${err.problems.join('; ')}`);
    throw err;
  }
}
