import { eventKey, keptKey } from '../../core/record-keys';
import { consumerSpec, type Topics } from '../../core/topics';
import type { DeliveryTask } from '../../platform/avro/records';
import { delayTopicFor } from '../deliver/delay';
import { requiredVersion, stampVersion } from '../runtime/config-version';
import { consume, type ConsumedBatch, type Consuming, type RunnerDeps, type RunningStage } from '../runtime/consume';
import type { AnyOutput } from '../runtime/stage';
import { recordTraceOf } from '../../platform/tracing/trace-context';
import { endSpan, recordSpanAttributes, isTracing, SPAN_ATTRIBUTES, SpanKind, spanTrace, startSpan, type Span } from '../../platform/tracing/tracing';

/**
 * Where a task goes once it has waited out one tier: on to delivery, or into the next wait, under
 * the key it waited with (`key`: its delivery's, see core/record-keys.ts).
 */
export function forward(topics: Topics, task: DeliveryTask, now: number, key: string): AnyOutput {
  const remaining = task.not_before - now;
  const topic = remaining <= 0 ? topics.deliveryRequested : delayTopicFor(topics, remaining);
  return { topic, key, record: 'DeliveryTask', value: task };
}

/** The span of a task's wait in a tier (only while spans are recorded), from `appendedAt`. */
function waitSpan(task: DeliveryTask, tier: string, due: boolean, trace: ReturnType<typeof recordTraceOf>, appendedAt: number): Span | undefined {
  if (!isTracing()) return undefined;
  return startSpan('hookline.retry', SpanKind.CONSUMER, trace, () => ({
    ...recordSpanAttributes(tier, task),
    // due: back to delivery; else on into a longer wait
    [SPAN_ATTRIBUTES.outcome]: due ? 'due' : 'waiting',
  }), appendedAt);
}

/**
 * The delay tiers. Every record of tier T waits until T after it was appended; since all
 * records of a tier wait equally long, the head of a partition is always due first, so the
 * partition is paused until the head is due and resumed then. The wait is carried by Kafka: a
 * crash loses nothing, the records are read again and wait out what is left. Bytes that do not
 * decode go to the dead-letter topic with the reason and the partition goes on. A task goes on
 * with its trace context; with spans recorded, its `hookline.retry` span covers its wait in the
 * tier, from its append to its forwarding.
 */
export async function runDelayTiers(topics: Topics, deps: RunnerDeps, now: () => number = Date.now): Promise<RunningStage> {
  const delayOf = new Map(topics.retryTiers.map((t) => [t.topic, t.delayMs]));
  const timers = new Set<NodeJS.Timeout>();

  const onBatch = async (batch: ConsumedBatch, consuming: Consuming) => {
    const delay = delayOf.get(batch.topic) ?? 0;
    const due: AnyOutput[] = [];
    const spans: Span[] = [];
    let lastDue: string | undefined;
    for (const message of batch.messages) {
      if (!batch.active()) break;
      const wait = Number(message.timestamp) + delay - now();
      if (wait > 0) {
        consuming.pause(batch.topic, batch.partition);
        consuming.seek(batch.topic, batch.partition, message.offset);
        const timer = setTimeout(() => {
          timers.delete(timer);
          if (!consuming.stopped()) consuming.resume(batch.topic, batch.partition);
        }, wait);
        timers.add(timer);
        break;
      }
      if (message.value !== null) {
        const decoded = await batch.decode<'DeliveryTask'>(message as typeof message & { value: Buffer });
        const next = decoded.undecodable !== undefined ? decoded.letters() : [forward(topics, decoded.value, now(), keptKey(message.key, () => eventKey(decoded.value)))];
        let trace = recordTraceOf(message.headers);
        const span = decoded.undecodable === undefined ? waitSpan(decoded.value, batch.topic, next[0]!.topic === topics.deliveryRequested, trace, Number(message.timestamp)) : undefined;
        if (span) {
          spans.push(span);
          trace = spanTrace(span, trace);
        }
        // the task goes on as it was decided: the deliver stage waits for the version it names
        due.push(...stampVersion(next, consuming.config.decided(requiredVersion(message.headers)), trace));
      }
      lastDue = message.offset;
    }
    if (lastDue === undefined) return;
    try {
      await consuming.send(await consuming.encode(due));
    } catch (err) {
      for (const span of spans) endSpan(span, err);
      throw err;
    }
    for (const span of spans) endSpan(span);
    batch.resolve(lastDue);
    await consuming.commitNow([{ topic: batch.topic, partition: batch.partition, offset: (BigInt(lastDue) + 1n).toString() }]);
    await batch.heartbeat();
  };

  const tiers = consumerSpec(topics, 'retry').reads.map((topic) => ({ topic, record: 'DeliveryTask' as const }));
  return consume(
    deps,
    {
      name: 'retry',
      inputs: tiers,
      partitionsConsumedConcurrently: 8,
      consumer: { maxWaitTimeInMs: 100 },
      beforeLeave: async () => timers.forEach((t) => clearTimeout(t)),
    },
    onBatch,
  );
}
