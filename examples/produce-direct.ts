/**
 * Produces webhooks straight onto the received topic, bypassing HTTP: the way a high-volume
 * producer feeds the pipeline. Each record is a WebhookEvent in the Confluent wire format,
 * encoded with the schema registered under `<topic>-value`, sent with acks=all. The record is the
 * event's `received` state: nothing else needs writing.
 *
 *   npx tsx examples/produce-direct.ts --tenant demo --ingester ing_... [--count 1000] [--ordered] [--config-version <n>|latest]
 *
 * Records are keyed as the Hook URL keys them (core/record-keys.ts): by event, spread over every
 * partition; `--ordered` for an ingester set `ordered`, keyed by the ingester so that its events
 * keep the order they are sent in.
 *
 * Each record names the configuration version it needs in the `hookline-config-version` header,
 * so that validation waits until its process has applied it (an ingester just created through
 * another process): by default the newest version there is (the config topic's last offset, read
 * after the ingester was created), or the version given with `--config-version`.
 *
 * It finds Kafka and the registry like the CLI does: KAFKA_BROKERS and SCHEMA_REGISTRY_URL,
 * else the run file of `npm start` under DATA_DIR. TOPIC_PREFIX must match the service's.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { Kafka, logLevel } from 'kafkajs';
import { cliConfig } from '../cli/connect';
import { newId } from '../core/ids';
import { webhookKey } from '../core/record-keys';
import { topicNames } from '../core/topics';
import { readRunFile } from '../infra/local';
import { CONFIG_VERSION_HEADER } from '../pipeline/runtime/config-version';

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { tenant: { type: 'string' }, ingester: { type: 'string' }, count: { type: 'string', default: '1' }, ordered: { type: 'boolean', default: false }, 'config-version': { type: 'string', default: 'latest' } } });
  if (!values.tenant || !values.ingester) throw new Error('usage: produce-direct.ts --tenant <id> --ingester <ingester id> [--count N] [--ordered] [--config-version <n>|latest]');
  const { config } = cliConfig();
  const run = readRunFile(config.dataDir);
  const brokers = config.kafkaBrokers ?? run?.kafka_brokers;
  const registryUrl = config.schemaRegistryUrl ?? run?.schema_registry_url;
  if (!brokers || !registryUrl) throw new Error('set KAFKA_BROKERS and SCHEMA_REGISTRY_URL, or run next to `npm start`');
  const topics = topicNames(config.topicPrefix);
  const registry = new SchemaRegistry({ host: registryUrl });
  const eventSchema = await registry.getLatestSchemaId(`${topics.received}-value`);
  const kafka = new Kafka({ clientId: 'produce-direct', brokers, logLevel: logLevel.WARN });
  const version = await configVersion(kafka, topics.config, values['config-version']);
  const headers = version === undefined ? undefined : { [CONFIG_VERSION_HEADER]: version };
  const producer = kafka.producer();
  await producer.connect();
  const count = Number(values.count);
  const eventIds: string[] = [];
  for (let start = 0; start < count; start += 500) {
    const events = [];
    for (let i = start; i < Math.min(count, start + 500); i++) {
      const now = Date.now();
      const event = {
        event_id: newId('event', now),
        tenant_id: values.tenant,
        ingester_id: values.ingester,
        correlation_id: randomUUID(),
        received_at: now,
        method: 'POST',
        query: '',
        headers: [{ name: 'content-type', value: 'application/json' }],
        content_type: 'application/json',
        body: Buffer.from(JSON.stringify({ n: i, source: 'produce-direct' })),
        source_ip: null,
        event_type: null,
      };
      eventIds.push(event.event_id);
      const key = webhookKey(event, { ordered: values.ordered });
      events.push({ key, value: await registry.encode(eventSchema, event), headers });
    }
    await producer.sendBatch({ acks: -1, topicMessages: [{ topic: topics.received, messages: events }] });
  }
  await producer.disconnect();
  process.stdout.write(`${JSON.stringify({ produced: count, first_event_id: eventIds[0], last_event_id: eventIds[eventIds.length - 1] })}\n`);
}

/**
 * The version to name: `given` (a decimal offset of the config topic), or for `latest` the
 * topic's last offset, which covers every configuration change written before it is read.
 */
async function configVersion(kafka: Kafka, configTopic: string, given: string): Promise<string | undefined> {
  if (given !== 'latest') {
    if (!/^\d{1,19}$/.test(given)) throw new Error('--config-version takes a config topic offset (a decimal number) or latest');
    return given;
  }
  const admin = kafka.admin();
  await admin.connect();
  try {
    const [partition] = await admin.fetchTopicOffsets(configTopic);
    const last = BigInt(partition?.high ?? '0') - 1n;
    return last < 0n ? undefined : last.toString();
  } finally {
    await admin.disconnect();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
