import { Logger } from '../../core/log';
import type { DeliveryFlow, Destination, Ingester, ReplayJob } from '../../core/model';
import {
  OPERATIONAL_EVENT_TYPES,
  OPERATIONAL_INGESTER_ID,
  deliveryExhausted,
  destinationDisabled,
  operationalBody,
  receivesOperationalEvents,
  replayCompleted,
  subscribesExplicitly,
} from '../../core/operational-events';
import { topicNames } from '../../core/topics';
import type { DeliveryTask, WebhookEvent } from '../../platform/avro/records';
import { decide } from '../../pipeline/deliver/decide';
import { filterStage } from '../../pipeline/filter/stage';
import { routeStage } from '../../pipeline/route/stage';
import { chainStages, checkWrites, type StageContext } from '../../pipeline/runtime/stage';
import { validateStage } from '../../pipeline/validate/stage';

const now = new Date(0).toISOString();
function destination(over: Partial<Destination> = {}): Destination {
  return { kind: 'destination', id: 'dst_a', tenant_id: 't', name: 'a', url: 'https://user:pw@example.com/hook?token=abc', status: 'active', signing_secret: 'whsec_AAAA', disabled_reason: null, created_at: now, updated_at: now, ...over };
}

describe('explicit subscriptions to operational event types', () => {
  it.each([
    [null, 'destination.disabled', false],
    [undefined, 'destination.disabled', false],
    [[], 'destination.disabled', false],
    [['*'], 'destination.disabled', false],
    [['d*'], 'destination.disabled', false],
    [['destination*'], 'destination.disabled', false],
    [['destination.disabled'], 'destination.disabled', true],
    [['destination.*'], 'destination.disabled', true],
    [['destination.*'], 'destination.breaker_opened', true],
    [['destination.breaker*'], 'destination.breaker_opened', true],
    [['destination.breaker*'], 'destination.disabled', false],
    [['delivery.*'], 'destination.disabled', false],
    [['invoice.*', '*', 'replay.completed'], 'replay.completed', true],
    [['replay.completed'], 'replay.completed.late', false],
  ] as const)('%j names %j: %s', (list, type, expected) => {
    expect(subscribesExplicitly(list as readonly string[] | null | undefined, type)).toBe(expected);
  });

  it('knows a destination that receives any of them', () => {
    expect(receivesOperationalEvents(destination({ event_types: ['invoice.*', 'delivery.exhausted'] }))).toBe(true);
    expect(receivesOperationalEvents(destination({ event_types: null }))).toBe(false);
    expect(receivesOperationalEvents(destination({ event_types: ['*'] }))).toBe(false);
  });
});

describe('operational payloads', () => {
  const task = { delivery_id: 'dlv_1', event_id: 'evt_1', ingester_id: 'ing_1', attempt: 8, replay_of: null };

  it('are Standard Webhooks payloads with ids and reasons, never secrets, URLs or the failed event', () => {
    const d = destination();
    const h = deliveryExhausted(d, task, 'retries exhausted after 8 attempts; last: the destination answered 500', 1_790_000_000_000);
    const body = JSON.parse(operationalBody(h, 3).toString()) as Record<string, any>;
    expect(body).toEqual({
      type: 'delivery.exhausted',
      timestamp: '2026-09-21T14:13:20.000Z',
      data: { tenant_id: 't', destination_id: 'dst_a', destination_name: 'a', delivery_id: 'dlv_1', event_id: 'evt_1', ingester_id: 'ing_1', attempts: 8, reason: expect.stringMatching(/answered 500/), replay_of: null, failed_at: '2026-09-21T14:13:20.000Z', suppressed: 3 },
    });
    for (const h2 of [h, destinationDisabled(d, 'the destination answered 410 (Gone)', { delivery_id: 'dlv_1', event_id: 'evt_1' }, 0)]) {
      const text = operationalBody(h2, 0).toString();
      for (const secret of ['whsec_AAAA', 'example.com', 'token=abc', 'pw']) expect(text).not.toContain(secret);
    }
  });

  it('tell a replay job\'s counts', () => {
    const job: ReplayJob = { kind: 'replay_job', id: 'rpl_1', tenant_id: 't', filter: { from: now, to: now, destination_id: 'dst_a' }, status: 'completed', matched: 5, replayed: 4, skipped: 1, delivered: 3, failed: 1, error: null, created_by: 'key_1', created_at: now, updated_at: now, finished_at: now };
    expect(replayCompleted(job, 0)).toMatchObject({ type: 'replay.completed', subject: 'rpl_1', data: { replay_job_id: 'rpl_1', matched: 5, replayed: 4, skipped: 1, delivered: 3, failed: 1, finished_at: now } });
  });

  it('name every type once', () => {
    expect(new Set(OPERATIONAL_EVENT_TYPES).size).toBe(4);
  });
});

describe('an operational event in the pipeline', () => {
  const topics = topicNames('o.');
  const ctx: StageContext = { log: new Logger('error'), position: { partition: 0, offset: '1' }, source: { topic: 'in', key: Buffer.from('k'), value: Buffer.from('v') }, configVersion: 0n };
  const dests = [
    destination({ id: 'dst_catch_all', event_types: null }),
    destination({ id: 'dst_star', event_types: ['*'] }),
    destination({ id: 'dst_ops', event_types: ['destination.*'] }),
    destination({ id: 'dst_exact', event_types: ['destination.breaker_opened'] }),
    destination({ id: 'dst_other_type', event_types: ['delivery.exhausted'] }),
    destination({ id: 'dst_filtered_out', event_types: ['destination.*'], filter: [{ type: 'body', path: 'data.destination_id', op: 'equals', value: 'dst_elsewhere' }] }),
    destination({ id: 'dst_filtered_in', event_types: ['destination.*'], filter: [{ type: 'body', path: 'data.destination_id', op: 'equals', value: 'dst_down' }] }),
    destination({ id: 'dst_paused', status: 'paused', event_types: ['destination.breaker_opened'] }),
  ];
  // a flow of a real ingester names every destination: operational routing does not use flows
  const flow: DeliveryFlow = { kind: 'flow', id: 'flw_1', tenant_id: 't', name: 'f', ingester_id: 'ing_1', destination_ids: ['dst_catch_all', 'dst_star'], created_at: now, updated_at: now };
  const ingester: Ingester = { kind: 'ingester', id: 'ing_1', tenant_id: 't', name: 'i', provider: 'none', config: {}, filters: [], created_at: now, updated_at: now };
  const config = {
    list: () => [flow],
    get: (kind: string, _t: string, id: string) => (kind === 'ingester' ? (id === ingester.id ? ingester : undefined) : dests.find((d) => d.id === id)),
  } as never;
  const event = (over: Partial<WebhookEvent> = {}): WebhookEvent => ({
    event_id: 'evt_ops', tenant_id: 't', ingester_id: OPERATIONAL_INGESTER_ID, correlation_id: 'cor_1', received_at: 1_790_000_000_000, method: 'POST', query: '', headers: [], content_type: 'application/json',
    body: Buffer.from(JSON.stringify({ type: 'destination.breaker_opened', data: { destination_id: 'dst_down' } })), source_ip: null, event_type: 'destination.breaker_opened', hops: 0, ...over,
  });
  const chain = chainStages(validateStage(topics, config), filterStage(topics, config), routeStage(topics, config, 50, undefined, () => dests));
  const deliveredTo = async (e: WebhookEvent) => {
    const outs = await chain.handle(e, ctx);
    return outs.filter((o) => o.topic === topics.deliveryRequested).map((o) => (o.value as DeliveryTask).destination_id).sort();
  };

  it('passes validation and filters without an ingester, and goes only to destinations that name its type', async () => {
    const outs = await chain.handle(event(), ctx);
    checkWrites(chain, outs);
    expect(outs.map((o) => o.topic)).toEqual([topics.validated, topics.filtered, ...Array(4).fill(topics.deliveryRequested)]);
    // its payload meets the destinations' filters like any event's
    expect(await deliveredTo(event())).toEqual(['dst_exact', 'dst_filtered_in', 'dst_ops', 'dst_paused']);
    const tasks = outs.filter((o) => o.topic === topics.deliveryRequested).map((o) => o.value as DeliveryTask);
    expect(tasks.every((t) => t.ingester_id === OPERATIONAL_INGESTER_ID && t.event_id === 'evt_ops')).toBe(true);
  });

  it('goes nowhere when no destination names its type', async () => {
    expect(await deliveredTo(event({ event_type: 'replay.completed' }))).toEqual([]);
  });

  it('leaves events of real ingesters to their flows, catch-alls included', async () => {
    expect(await deliveredTo(event({ ingester_id: 'ing_1', event_type: 'destination.breaker_opened' }))).toEqual(['dst_catch_all', 'dst_star']);
  });

  it('is told apart by its reserved ingester id only: an event of an unknown ingester still fails verification', async () => {
    const outs = await chain.handle(event({ ingester_id: 'ing_gone' }), ctx);
    expect(outs.map((o) => o.topic)).toEqual([topics.transitions]);
  });
});

describe('the deliver decision', () => {
  it('says when the schedule ran out, and only then', () => {
    expect(decide({ kind: 'response', status: 500, retryAfterMs: null }, 2, [0, 100], 0)).toMatchObject({ action: 'dead', exhausted: true });
    expect(decide({ kind: 'response', status: 410, retryAfterMs: null }, 1, [0, 100], 0)).not.toHaveProperty('exhausted');
    expect(decide({ kind: 'error', message: 'refused', refused: true }, 1, [0, 100], 0)).not.toHaveProperty('exhausted');
  });
});
