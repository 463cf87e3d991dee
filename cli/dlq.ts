import { Redis } from 'ioredis';
import { SingleBar, Presets } from 'cli-progress';
import type { DeliveryTask } from '../platform/avro/records';
import { UnopenableBodyError } from '../core/secrets/body-seal';
import { createProducer } from '../platform/kafka/client';
import { TopicTable } from '../platform/kafka/topic-table';
import { replayDelivery } from '../platform/replay/replay';
import { readRunFile } from '../infra/local';
import { CliError, connect } from './connect';

export interface ReplaySummary {
  destination_id: string;
  dead_letters: number;
  replayed: number;
  already_replayed: number;
  delivery_ids: string[];
}

/**
 * `dlq replay --destination <id>`: every dead letter of the destination on deliveries.dlq
 * (as far as the topic reaches when the command starts) becomes a new delivery, once; a
 * dead letter replayed before (by this command or the retry API) is skipped.
 */
export async function dlqReplay(args: { destination: string | undefined; progress: boolean }): Promise<ReplaySummary> {
  if (!args.destination) throw new CliError('dlq replay needs --destination <destination id>');
  const ctx = await connect();
  const redisUrl = ctx.config.redisUrl ?? readRunFile(ctx.config.dataDir)?.redis_url;
  if (!redisUrl) throw new CliError(`no Redis found for DATA_DIR=${ctx.config.dataDir}: start the service with \`npm start\`, or set REDIS_URL`);
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 2, lazyConnect: true });
  const producer = createProducer(ctx.kafka);
  const dead: DeliveryTask[] = [];
  const table = new TopicTable<DeliveryTask | null>({
    kafka: ctx.kafka,
    topic: ctx.topics.deliveryDlq,
    groupIdPrefix: `${ctx.topics.deliveryDlq}-replay`,
    // a delivery whose body no longer opens (its tenant erased) has nothing left to replay
    decode: (value) => ctx.codec.decode('DeliveryTask', value).catch((err: unknown) => {
      if (err instanceof UnopenableBodyError) return null;
      throw err;
    }),
    apply: (_key, task) => {
      if (task && task.destination_id === args.destination) dead.push(task);
    },
  });
  try {
    const destination = ctx.store.all('destination').find((d) => d.id === args.destination);
    if (!destination) throw new CliError(`no destination ${args.destination}`);
    if (destination.status !== 'active') throw new CliError(`destination ${destination.id} is ${destination.status}${destination.disabled_reason ? ` (${destination.disabled_reason})` : ''}; its dead letters would fail again`);
    await Promise.all([redis.connect(), producer.connect(), ctx.codec.register({ [ctx.topics.deliveryRequested]: 'DeliveryTask', [ctx.topics.transitions]: 'EventTransition' })]);
    await table.start();
    const bar = new SingleBar({ format: 'replaying {bar} {value}/{total} dead letters | {eta_formatted} left', stream: process.stderr, noTTYOutput: args.progress }, Presets.shades_classic);
    if (args.progress) bar.start(dead.length, 0);
    const summary: ReplaySummary = { destination_id: destination.id, dead_letters: dead.length, replayed: 0, already_replayed: 0, delivery_ids: [] };
    const deps = { producer, codec: ctx.codec, topics: ctx.topics, redis, prefix: ctx.config.topicPrefix, config: ctx.store, destinations: ctx.store };
    for (const task of dead) {
      const id = await replayDelivery(deps, task, 'bulk replay from the CLI');
      if (id) {
        summary.replayed++;
        summary.delivery_ids.push(id);
      } else summary.already_replayed++;
      if (args.progress) bar.increment();
    }
    if (args.progress) bar.stop();
    return summary;
  } finally {
    await table.stop();
    await producer.disconnect().catch(() => undefined);
    redis.disconnect();
    await ctx.close();
  }
}
