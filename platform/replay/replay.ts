import type { Producer } from 'kafkajs';
import type { Redis } from 'ioredis';
import { newId } from '../../core/ids';
import type { Topics } from '../../core/topics';
import type { AvroCodec } from '../avro/codec';
import type { DeliveryTask, EventTransition } from '../avro/records';
import { CONFIG_VERSION_HEADER } from '../../pipeline/runtime/config-version';

export interface ReplayDeps {
  producer: Producer;
  codec: AvroCodec;
  topics: Topics;
  redis: Redis;
  /** Namespaces the replay claims of one deployment. */
  prefix: string;
  /**
   * This process's configuration: the replayed task names its version, so a deliver process
   * waits for a destination re-enabled here before it decides. Unset (the CLI), it names none.
   */
  config?: { readonly version: bigint };
}

/** How long the claim that a dead delivery was replayed is kept. */
const CLAIM_TTL_SECONDS = 30 * 86_400;

/**
 * Re-queues a dead delivery as a new delivery (its own id, attempt 1) and records the
 * `replayed` transition, both acknowledged by Kafka before this returns. A dead delivery is
 * replayed once: the API and the CLI claim it in Redis first. Returns the new delivery id, or
 * undefined when the delivery was already replayed.
 */
export async function replayDelivery(deps: ReplayDeps, dead: DeliveryTask, reason: string): Promise<string | undefined> {
  const deliveryId = newId('delivery');
  const claimKey = `${deps.prefix}replayed:${dead.tenant_id}:${dead.delivery_id}`;
  const claimed = await deps.redis.set(claimKey, deliveryId, 'EX', CLAIM_TTL_SECONDS, 'NX');
  if (claimed !== 'OK') return undefined;
  try {
    const now = Date.now();
    const task: DeliveryTask = { ...dead, delivery_id: deliveryId, attempt: 1, not_before: now, replay_of: dead.delivery_id };
    const replayed: EventTransition = {
      event_id: dead.event_id,
      tenant_id: dead.tenant_id,
      ingester_id: dead.ingester_id,
      state: 'replayed',
      at: now,
      correlation_id: dead.correlation_id,
      reason: `${reason}: replay of ${dead.delivery_id}`,
      delivery_id: deliveryId,
      destination_id: dead.destination_id,
    };
    const [taskValue, transitionValue] = await Promise.all([
      deps.codec.encode(deps.topics.deliveryRequested, 'DeliveryTask', task),
      deps.codec.encode(deps.topics.transitions, 'EventTransition', replayed),
    ]);
    const headers = deps.config ? { [CONFIG_VERSION_HEADER]: deps.config.version.toString() } : undefined;
    await deps.producer.sendBatch({
      acks: -1,
      topicMessages: [
        { topic: deps.topics.transitions, messages: [{ key: `${dead.tenant_id}/${dead.event_id}`, value: transitionValue, headers }] },
        { topic: deps.topics.deliveryRequested, messages: [{ key: dead.destination_id, value: taskValue, headers }] },
      ],
    });
    return deliveryId;
  } catch (err) {
    await deps.redis.del(claimKey);
    throw err;
  }
}
