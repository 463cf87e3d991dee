import type { Producer } from 'kafkajs';
import type { Redis } from 'ioredis';
import { newId } from '../../core/ids';
import type { Destination } from '../../core/model';
import { deliveryKey, eventKey } from '../../core/record-keys';
import type { Topics } from '../../core/topics';
import type { AvroCodec } from '../avro/codec';
import type { DeliveryTask, EventTransition, WebhookEvent } from '../avro/records';
import { TEST_EVENT_INGESTER_ID } from '../../core/test-events';
import { CONFIG_VERSION_HEADER } from '../../core/config-version';
import { beginTrace, endSpan, SPAN_ATTRIBUTES, SpanKind, traceLink } from '../tracing/tracing';

export interface ReplayDeps {
  producer: Producer;
  codec: AvroCodec;
  topics: Topics;
  redis: Redis;
  /** Namespaces the replay claims of one deployment. */
  prefix: string;
  /**
   * The writer's configuration (the API's store, the CLI's): the replayed records name the version
   * it has applied, like every record of the pipeline, so a deliver process waits for what the
   * writer saw (a destination re-enabled, its new URL) before it decides.
   */
  config: { readonly version: bigint };
  /**
   * The destinations as this process knows them: a replay to an ordered destination is keyed by
   * it, at the back of its line (core/record-keys.ts). Unset, every replay is keyed by its event.
   */
  destinations?: { get(kind: 'destination', tenantId: string, id: string): Destination | undefined };
}

/** How long the claim that a dead delivery was replayed is kept. */
const CLAIM_TTL_SECONDS = 30 * 86_400;

/**
 * Re-queues a dead delivery as a new delivery (its own id, attempt 1) and records the
 * `replayed` transition, both acknowledged by Kafka before this returns. A dead delivery is
 * replayed once: the API and the CLI claim it in Redis first. Returns the new delivery id, or
 * undefined when the delivery was already replayed. `traceId`: the dead delivery's trace, which
 * the replay's span links to.
 */
export async function replayDelivery(deps: ReplayDeps, dead: DeliveryTask, reason: string, traceId?: string): Promise<string | undefined> {
  const deliveryId = newId('delivery');
  const claimKey = `${deps.prefix}replayed:${dead.tenant_id}:${dead.delivery_id}`;
  const claimed = await deps.redis.set(claimKey, deliveryId, 'EX', CLAIM_TTL_SECONDS, 'NX');
  if (claimed !== 'OK') return undefined;
  try {
    const task: DeliveryTask = { ...dead, delivery_id: deliveryId, attempt: 1, not_before: Date.now(), replay_of: dead.delivery_id };
    await queueReplays(deps, [task], reason, traceId ? () => traceId : undefined);
    return deliveryId;
  } catch (err) {
    await deps.redis.del(claimKey);
    throw err;
  }
}

/**
 * Queues replayed deliveries, each already a new delivery (its own id, attempt 1, `replay_of` the
 * delivery it repeats), with the `replayed` transition of each, all acknowledged by every in-sync
 * replica before this returns. The records name the writer's configuration version.
 * `originalTrace` names the trace of the delivery a task repeats, where it is known.
 */
export async function queueReplays(deps: Omit<ReplayDeps, 'redis' | 'prefix'>, tasks: readonly DeliveryTask[], reason: string, originalTrace?: (task: DeliveryTask) => string | undefined): Promise<void> {
  if (tasks.length === 0) return;
  const now = Date.now();
  const version = { [CONFIG_VERSION_HEADER]: deps.config.version.toString() };
  const encoded = await Promise.all(
    tasks.map(async (task) => {
      // each replayed delivery is a trace of its own, begun here, linked to the one it repeats
      const { trace, span } = beginTrace(
        'hookline.replay',
        SpanKind.PRODUCER,
        undefined,
        () => ({
          [SPAN_ATTRIBUTES.tenantId]: task.tenant_id,
          [SPAN_ATTRIBUTES.eventId]: task.event_id,
          [SPAN_ATTRIBUTES.deliveryId]: task.delivery_id,
          [SPAN_ATTRIBUTES.destinationId]: task.destination_id,
          'hookline.replay_of': String(task.replay_of),
        }),
        () => {
          const original = originalTrace?.(task);
          return original ? [traceLink(original, { 'hookline.link': 'replay_of', [SPAN_ATTRIBUTES.deliveryId]: String(task.replay_of) })] : [];
        },
      );
      const headers = { ...version, ...trace };
      const replayed: EventTransition = {
        event_id: task.event_id,
        tenant_id: task.tenant_id,
        ingester_id: task.ingester_id,
        state: 'replayed',
        at: now,
        correlation_id: task.correlation_id,
        reason: `${reason}: replay of ${String(task.replay_of)}`,
        delivery_id: task.delivery_id,
        destination_id: task.destination_id,
      };
      const [taskValue, transitionValue] = await Promise.all([
        deps.codec.encode(deps.topics.deliveryRequested, 'DeliveryTask', task),
        deps.codec.encode(deps.topics.transitions, 'EventTransition', replayed),
      ]);
      return { task, taskValue, transitionValue, headers, span };
    }),
  );
  try {
    await deps.producer.sendBatch({
      acks: -1,
      topicMessages: [
        { topic: deps.topics.transitions, messages: encoded.map((e) => ({ key: eventKey(e.task), value: e.transitionValue, headers: e.headers })) },
        { topic: deps.topics.deliveryRequested, messages: encoded.map((e) => ({ key: deliveryKey(e.task, deps.destinations?.get('destination', e.task.tenant_id, e.task.destination_id)), value: e.taskValue, headers: e.headers })) },
      ],
    });
  } catch (err) {
    for (const e of encoded) if (e.span) endSpan(e.span, err);
    throw err;
  }
  for (const e of encoded) if (e.span) endSpan(e.span);
}

/**
 * Queues a test event to one destination: the event on `webhooks.received` under the test events'
 * ingester id (stored by the sink as any event: its body, type and states; validated without a
 * signature, routed nowhere by flows), and its one delivery, both acknowledged by every in-sync
 * replica before this returns. The delivery is made, retried, recorded and proved like any other.
 */
export async function queueTestEvent(deps: Omit<ReplayDeps, 'redis' | 'prefix'>, input: { tenantId: string; destination: Destination; body: Buffer; contentType: string; eventType: string | null }): Promise<DeliveryTask> {
  const now = Date.now();
  const event: WebhookEvent = {
    event_id: newId('event', now),
    tenant_id: input.tenantId,
    ingester_id: TEST_EVENT_INGESTER_ID,
    correlation_id: newId('correlation', now),
    received_at: now,
    method: 'POST',
    query: '',
    headers: [{ name: 'content-type', value: input.contentType }],
    content_type: input.contentType,
    body: input.body,
    source_ip: null,
    event_type: input.eventType,
    hops: 0,
  };
  const task: DeliveryTask = {
    delivery_id: newId('delivery', now),
    event_id: event.event_id,
    tenant_id: input.tenantId,
    ingester_id: TEST_EVENT_INGESTER_ID,
    destination_id: input.destination.id,
    correlation_id: event.correlation_id,
    attempt: 1,
    not_before: now,
    received_at: now,
    content_type: input.contentType,
    body: input.body,
    replay_of: null,
    hops: 0,
    event_type: input.eventType,
  };
  const { trace, span } = beginTrace('hookline.test_event', SpanKind.PRODUCER, undefined, () => ({
    [SPAN_ATTRIBUTES.tenantId]: task.tenant_id,
    [SPAN_ATTRIBUTES.eventId]: task.event_id,
    [SPAN_ATTRIBUTES.deliveryId]: task.delivery_id,
    [SPAN_ATTRIBUTES.destinationId]: task.destination_id,
  }));
  const headers = { [CONFIG_VERSION_HEADER]: deps.config.version.toString(), ...trace };
  try {
    const [taskValue, eventValue] = await Promise.all([deps.codec.encode(deps.topics.deliveryRequested, 'DeliveryTask', task), deps.codec.encode(deps.topics.received, 'WebhookEvent', event)]);
    await deps.producer.sendBatch({
      acks: -1,
      topicMessages: [
        { topic: deps.topics.received, messages: [{ key: eventKey(event), value: eventValue, headers }] },
        { topic: deps.topics.deliveryRequested, messages: [{ key: deliveryKey(task, input.destination), value: taskValue, headers }] },
      ],
    });
  } catch (err) {
    if (span) endSpan(span, err);
    throw err;
  }
  if (span) endSpan(span);
  return task;
}
