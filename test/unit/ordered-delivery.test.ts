import { Logger } from '../../core/log';
import type { Destination } from '../../core/model';
import { topicNames } from '../../core/topics';
import type { DeliveryOutcome, DeliveryTask } from '../../platform/avro/records';
import { Breakers } from '../../pipeline/deliver/breakers';
import type { HttpSender, SendRequest } from '../../pipeline/deliver/http-sender';
import { OrderedLines } from '../../pipeline/deliver/ordered-lines';
import { deliverStage } from '../../pipeline/deliver/stage';
import type { AnyOutput, StageContext } from '../../pipeline/runtime/stage';

/**
 * What one delivery to an ordered destination gives out: its waits spent in line while they end
 * within DELIVERY_ORDERED_WAIT_MS of its first attempt, a longer one leaving the line (and
 * breaking it until a delivery gets through), and every record under the key its task came with.
 * The deliver stage with a real breaker and a scripted receiver; no Kafka.
 */
const topics = topicNames('u.');
const T = 'tenant-u';
const silent = new Logger('error');
const now = new Date().toISOString();
const tiers = new Set(topics.retryTiers.map((t) => t.topic));

function destination(ordered: boolean, schedule: number[]): Destination {
  return { kind: 'destination', id: 'dst_o', tenant_id: T, name: 'o', url: 'https://example.test/hook', status: 'active', signing_secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', disabled_reason: null, retry_schedule_ms: schedule, ordered, created_at: now, updated_at: now };
}
function task(n: number): DeliveryTask {
  return { delivery_id: `dlv_${n}`, event_id: `evt_${n}`, tenant_id: T, ingester_id: 'ing_1', destination_id: 'dst_o', correlation_id: `cor_${n}`, attempt: 1, not_before: Date.now(), received_at: Date.now(), content_type: 'application/json', body: Buffer.from(`{"n":${n}}`), replay_of: null, hops: 0 };
}
const ctx = (key: string): StageContext => ({ log: silent, position: { partition: 0, offset: '1' }, source: { topic: topics.deliveryRequested, key: Buffer.from(key), value: Buffer.alloc(0) }, configVersion: 0n });

/** A receiver that answers each request with the next status of `script` (200 once it runs out). */
function scripted(script: number[]): HttpSender & { sent: SendRequest[] } {
  const sent: SendRequest[] = [];
  return {
    sent,
    async send(req) {
      sent.push(req);
      return { status: script.shift() ?? 200, headers: {}, durationMs: 1 };
    },
    async close() {},
  };
}

function setUp(d: Destination, script: number[], maxWaitMs = 2_000) {
  const sender = scripted(script);
  const lines = new OrderedLines(maxWaitMs);
  const breakers = new Breakers({ errorThresholdPercentage: 50, volumeThreshold: 10_000, resetTimeoutMs: 1_000, rollingWindowMs: 10_000 });
  const stage = deliverStage({
    topics, sender, breakers, lines, defaultSchedule: [0],
    destinations: { get: () => d, disable: async () => undefined },
    isRefusal: () => false,
  });
  return { stage, sender, lines, stop: () => breakers.shutdown() };
}

const outcomes = (outs: AnyOutput[]) => outs.filter((o) => o.topic === topics.deliveryCompleted).map((o) => (o.value as DeliveryOutcome).status);
const waiting = (outs: AnyOutput[]) => outs.filter((o) => tiers.has(o.topic));

describe('a delivery to an ordered destination', () => {
  it('retries in line while its waits end within the bound: every attempt\'s outcome, no wait on the delay topics', async () => {
    const { stage, sender, lines, stop } = setUp(destination(true, [0, 200, 200]), [503, 500]);
    const started = Date.now();
    const outs = await stage.handle(task(1), ctx('dst_o'));
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(outcomes(outs)).toEqual(['retrying', 'retrying', 'delivered']);
    expect(waiting(outs)).toEqual([]);
    expect(sender.sent).toHaveLength(3);
    expect(new Set(sender.sent.map((r) => r.headers['webhook-id']))).toEqual(new Set(['dlv_1']));
    // every record of the delivery under the key its task was read with
    expect(new Set(outs.map((o) => (o.topic === topics.transitions ? 'transition' : o.key)))).toEqual(new Set(['dst_o']));
    expect(lines.isBroken('dst_o')).toBe(false);
    stop();
  });

  it('leaves the line for a longer wait, and the deliveries behind it then leave at their first failure, until one is delivered', async () => {
    const { stage, sender, lines, stop } = setUp(destination(true, [0, 500, 5_000]), [503, 503, 503]);
    const first = await stage.handle(task(1), ctx('dst_o'));
    expect(outcomes(first)).toEqual(['retrying', 'retrying']);
    expect(waiting(first).map((o) => [o.key, (o.value as DeliveryTask).attempt])).toEqual([['dst_o', 3]]);
    expect(lines.isBroken('dst_o')).toBe(true);
    // broken: a wait that would fit is not spent in line either
    const second = await stage.handle(task(2), ctx('dst_o'));
    expect(outcomes(second)).toEqual(['retrying']);
    expect(waiting(second)).toHaveLength(1);
    // a delivered attempt mends the line
    const third = await stage.handle(task(3), ctx('dst_o'));
    expect(outcomes(third)).toEqual(['delivered']);
    expect(lines.isBroken('dst_o')).toBe(false);
    expect(sender.sent.map((r) => r.headers['webhook-id'])).toEqual(['dlv_1', 'dlv_1', 'dlv_2', 'dlv_3']);
    stop();
  });

  it('leaves the line at once when the process stops while it waits in it', async () => {
    const { stage, lines, stop } = setUp(destination(true, [0, 1_500]), [503]);
    const handled = stage.handle(task(1), ctx('dst_o'));
    setTimeout(() => lines.stop(), 100);
    const started = Date.now();
    const outs = await handled;
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(outcomes(outs)).toEqual(['retrying']);
    expect(waiting(outs).map((o) => o.key)).toEqual(['dst_o']);
    stop();
  });
});

describe('a delivery to a destination without order', () => {
  it('waits on the delay topics, under the key its task came with (its event)', async () => {
    const { stage, sender, stop } = setUp(destination(false, [0, 200]), [503]);
    const outs = await stage.handle(task(1), ctx(`${T}/evt_1`));
    expect(outcomes(outs)).toEqual(['retrying']);
    expect(waiting(outs).map((o) => o.key)).toEqual([`${T}/evt_1`]);
    expect(outs.filter((o) => o.topic === topics.deliveryCompleted).map((o) => o.key)).toEqual([`${T}/evt_1`]);
    expect(sender.sent).toHaveLength(1);
    stop();
  });
});
