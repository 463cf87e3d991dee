import type { Kafka } from 'kafkajs';
import { loadConfig, ConfigError, type Config } from '../core/config';
import { topicNames, type Topics } from '../core/topics';
import { readRunFile } from '../infra/local';
import { AvroCodec } from '../platform/avro/codec';
import { ConfigStore } from '../platform/config-store/config-store';
import { createKafka } from '../platform/kafka/client';

/** A failure the CLI reports as one line on stderr, exiting 1. */
export class CliError extends Error {}

export interface CliContext {
  config: Config;
  topics: Topics;
  kafka: Kafka;
  codec: AvroCodec;
  store: ConfigStore;
  close(): Promise<void>;
}

/**
 * Finds the service's infrastructure: the environment's variables when set, else the run
 * file that `npm start` wrote under the same DATA_DIR.
 */
export async function connect(): Promise<CliContext> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(`invalid configuration: ${err.problems.join('; ')}`);
    throw err;
  }
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
  const store = new ConfigStore(kafka, codec, topics.config);
  await store.start();
  return { config, topics, kafka, codec, store, close: () => store.stop() };
}
