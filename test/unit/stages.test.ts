import { createHmac } from 'node:crypto';
import { Logger } from '../../core/log';
import type { DeliveryFlow, Destination, Ingester } from '../../core/model';
import { topicNames } from '../../core/topics';
import type { DeadLetter, DeliveryOutcome, DeliveryTask, EventTransition, WebhookEvent } from '../../platform/avro/records';
import { pendingLeaf } from '../../pipeline/evidence/sequencer';
import { filterStage } from '../../pipeline/filter/stage';
import { forward } from '../../pipeline/retry/delay-stage';
import { routeStage } from '../../pipeline/route/stage';
import { CHAINED_HEADER, chainStages, checkWrites, type AnyOutput, type StageContext } from '../../pipeline/runtime/stage';
import { validateStage } from '../../pipeline/validate/stage';

/**
 * Each stage's decision on its own: what a record in gives out, with the configuration in
 * memory and no Kafka. The runners and the whole pipeline are tested against real services
 * elsewhere; these pin down the rules.
 */
const topics = topicNames('u.');
const T = 'tenant-u';
const now = new Date().toISOString();
const silent = new Logger('error');
const ctx = (offset = 7): StageContext => ({ log: silent, position: { partition: 2, offset: String(offset) }, source: { topic: 'in', key: Buffer.from(`${T}/ing_1`), value: Buffer.from('original bytes') }, configVersion: 0n });

function event(over: Partial<WebhookEvent> = {}): WebhookEvent {
  return {
    event_id: 'evt_1', tenant_id: T, ingester_id: 'ing_1', correlation_id: 'cor_1', received_at: 1_790_000_000_000, method: 'POST', query: '',
    headers: [{ name: 'content-type', value: 'application/json' }], content_type: 'application/json', body: Buffer.from('{"livemode":true,"kind":"a"}'), source_ip: null, event_type: null, hops: 0, ...over,
  };
}
function ingester(over: Partial<Ingester> = {}): Ingester {
  return { kind: 'ingester', id: 'ing_1', tenant_id: T, name: 'i', provider: 'none', config: {}, filters: [], created_at: now, updated_at: now, ...over };
}
function destination(id: string, status: Destination['status'] = 'active'): Destination {
  return { kind: 'destination', id, tenant_id: T, name: id, url: 'https://example.test/hook', status, signing_secret: 'whsec_x', disabled_reason: null, created_at: now, updated_at: now };
}
const states = (outs: AnyOutput[]) => outs.filter((o) => o.record === 'EventTransition').map((o) => (o.value as EventTransition).state);

describe('validate', () => {
  const run = async (ing: Ingester | undefined, e: WebhookEvent) => {
    const stage = validateStage(topics, { get: () => ing });
    const outs = await stage.handle(e, ctx());
    checkWrites(stage, outs);
    return outs;
  };

  it('passes a webhook its provider verifies on to validated, with the event type the provider names; that record is the transition', async () => {
    const secret = 'gh-secret';
    const body = Buffer.from('{"action":"opened"}');
    const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
    const e = event({ body, headers: [{ name: 'x-hub-signature-256', value: signature }, { name: 'x-github-event', value: 'issues' }] });
    const outs = await run(ingester({ provider: 'github', config: { signing_secret: secret } }), e);
    expect(outs.map((o) => o.topic)).toEqual([topics.validated]);
    expect((outs[0]!.value as WebhookEvent).event_type).toBe('issues');
    expect((outs[0]!.value as WebhookEvent).body).toBe(body);
    expect(outs[0]!.key).toBe(`${T}/evt_1`);
  });

  it('moves a webhook whose signature does not verify, or whose ingester is gone, to failed with the reason, and nothing goes on', async () => {
    const bad = await run(ingester({ provider: 'github', config: { signing_secret: 's' } }), event({ headers: [{ name: 'x-hub-signature-256', value: 'sha256=00' }] }));
    expect(bad.map((o) => o.topic)).toEqual([topics.transitions]);
    expect((bad[0]!.value as EventTransition)).toMatchObject({ state: 'failed', reason: expect.stringMatching(/^verification failed: /) });
    const gone = await run(undefined, event());
    expect((gone[0]!.value as EventTransition)).toMatchObject({ state: 'failed', reason: 'verification failed: the ingester no longer exists' });
  });
});

describe('filter', () => {
  const run = async (filters: unknown[], e = event(), limits?: Parameters<typeof filterStage>[2]) => {
    const stage = filterStage(topics, { get: () => ingester({ filters }) }, limits);
    const outs = await stage.handle(e, ctx());
    checkWrites(stage, outs);
    return outs;
  };

  it('passes an event every rule passes (that record is the transition), and drops one a rule fails without any output', async () => {
    const pass = await run([{ type: 'body', path: 'livemode', op: 'equals', value: true }]);
    expect(pass.map((o) => o.topic)).toEqual([topics.filtered]);
    expect(pass[0]!.value).toEqual(event());
    expect(await run([{ type: 'body', path: 'livemode', op: 'equals', value: false }])).toEqual([]);
  });

  it('sets aside an event it cannot judge: a dead letter with the original bytes, then failed and dlq_queued with the reason', async () => {
    const outs = await run([{ type: 'body', path: 'kind', op: 'equals', value: 'a' }], event({ body: Buffer.from(`{"kind":"a","pad":"${'x'.repeat(2_000)}"}`) }), { maxBodyBytes: 100, maxJsonDepth: 8, maxHeaderBytes: 100 });
    expect(outs.map((o) => o.topic)).toEqual([topics.eventsDlq, topics.transitions, topics.transitions]);
    const letter = outs[0]!.value as DeadLetter;
    expect(letter).toMatchObject({ stage: 'filter', source_topic: 'in', source_partition: 2, source_offset: 7, tenant_id: T, event_id: 'evt_1' });
    expect(Buffer.from(letter.value).toString()).toBe('original bytes');
    expect(states(outs)).toEqual(['failed', 'dlq_queued']);
    expect((outs[1]!.value as EventTransition).reason).toMatch(/^filter not evaluated: rule 0: /);
  });

  it('holds back every event of an ingester whose stored filters no longer parse, rather than let them through', async () => {
    const outs = await run([{ type: 'no-such-rule' }]);
    expect(outs.map((o) => o.topic)).toEqual([topics.eventsDlq, topics.transitions, topics.transitions]);
    expect((outs[1]!.value as EventTransition).reason).toMatch(/^filter not evaluated: the ingester's filters are invalid: /);
  });
});

describe('route', () => {
  const flows = (lists: string[][], ingesterId = 'ing_1'): DeliveryFlow[] => lists.map((ids, i) => ({ kind: 'flow', id: `flw_${i}`, tenant_id: T, name: `f${i}`, ingester_id: ingesterId, destination_ids: ids, created_at: now, updated_at: now }));
  const run = async (fl: DeliveryFlow[], dests: Destination[], maxFanout = 50, e = event()) => {
    const stage = routeStage(topics, { list: () => fl, get: (_k, _t, id) => dests.find((d) => d.id === id) }, maxFanout);
    const outs = await stage.handle(e, ctx());
    checkWrites(stage, outs);
    return outs.map((o) => o.value as DeliveryTask);
  };

  it('makes one task per destination across the ingester\'s flows (paused and disabled ones too: deliver holds those), once each, with ids derived from the event', async () => {
    const dests = [destination('dst_a'), destination('dst_b'), destination('dst_c', 'disabled'), destination('dst_d', 'paused')];
    const tasks = await run([...flows([['dst_b', 'dst_a'], ['dst_a', 'dst_c', 'dst_d', 'dst_gone']]), ...flows([['dst_x']], 'ing_other')], dests);
    expect(tasks.map((t) => t.destination_id)).toEqual(['dst_a', 'dst_b', 'dst_c', 'dst_d']);
    for (const t of tasks) expect(t).toMatchObject({ event_id: 'evt_1', tenant_id: T, attempt: 1, replay_of: null, hops: 0 });
    const again = await run(flows([['dst_b', 'dst_a']]), dests);
    expect(again.map((t) => t.delivery_id)).toEqual(tasks.slice(0, 2).map((t) => t.delivery_id));
    expect(new Set(tasks.map((t) => t.delivery_id)).size).toBe(4);
  });

  it('goes no further when every destination was deleted, and keeps the first MAX_FANOUT by id beyond the cap', async () => {
    expect(await run(flows([['dst_c']]), [])).toEqual([]);
    const many = Array.from({ length: 5 }, (_, i) => destination(`dst_${i}`));
    const tasks = await run(flows([many.map((d) => d.id).reverse()]), many, 3);
    expect(tasks.map((t) => t.destination_id)).toEqual(['dst_0', 'dst_1', 'dst_2']);
  });
});

describe('evidence leaves and the delay tiers', () => {
  it('makes an outcome a leaf with its place in deliveries.completed', () => {
    const outcome = { tenant_id: T, delivery_id: 'dlv_1', event_id: 'evt_1', destination_id: 'dst_a', correlation_id: 'cor_1', attempt_number: 2, status: 'delivered', response_code: 200, attempted_at: 5, body_sha256: 'ab', duration_ms: 3, error_message: null, next_attempt_at: null } as DeliveryOutcome;
    expect(pendingLeaf(outcome, 2, 41)).toEqual({ tenant_id: T, delivery_id: 'dlv_1', event_id: 'evt_1', destination_id: 'dst_a', correlation_id: 'cor_1', attempt_number: 2, status: 'delivered', response_code: 200, attempted_at: 5, body_sha256: 'ab', replay_of: null, source_partition: 2, source_offset: 41 });
    // a replayed delivery's leaf names the delivery it replays
    expect(pendingLeaf({ ...outcome, replay_of: 'dlv_0' }, 2, 42)).toMatchObject({ replay_of: 'dlv_0', source_offset: 42 });
  });

  it('sends a task that has waited enough on to delivery, else into the longest tier that does not overshoot, under the key it waited with', () => {
    const task = { destination_id: 'dst_a', not_before: 100_000 } as DeliveryTask;
    expect(forward(topics, task, 100_000, 'k').topic).toBe(topics.deliveryRequested);
    expect(forward(topics, task, 90_000, 'k').topic).toBe(topics.retryTiers.find((t) => t.delayMs === 5_000)!.topic);
    expect(forward(topics, task, 99_500, 'k').topic).toBe(topics.retryTiers[0]!.topic);
    expect(forward(topics, task, 100_000 - 3_600_000, 'k').topic).toBe(topics.retryTiers.find((t) => t.delayMs === 1_800_000)!.topic);
    expect(forward(topics, task, 0, `${T}/evt_1`).key).toBe(`${T}/evt_1`);
  });
});

describe('record keys', () => {
  const ordered = (d: Destination): Destination => ({ ...d, ordered: true });

  it('keys an event by itself on the webhook topics, or by its ingester when that ingester is ordered', async () => {
    for (const [ing, key] of [[ingester(), `${T}/evt_1`], [ingester({ ordered: false }), `${T}/evt_1`], [ingester({ ordered: true }), `${T}/ing_1`]] as const) {
      const validated = await validateStage(topics, { get: () => ing }).handle(event(), ctx());
      const filtered = await filterStage(topics, { get: () => ing }).handle(event(), ctx());
      expect([validated[0]!.key, filtered[0]!.key]).toEqual([key, key]);
    }
  });

  it('keys a task by its event, or by its destination when that destination is ordered, whatever the ingester', async () => {
    const flow: DeliveryFlow = { kind: 'flow', id: 'flw_1', tenant_id: T, name: 'f', ingester_id: 'ing_1', destination_ids: ['dst_a', 'dst_b'], created_at: now, updated_at: now };
    const dests = [destination('dst_a'), ordered(destination('dst_b'))];
    const outs = await routeStage(topics, { list: () => [flow], get: (_k, _t, id) => dests.find((d) => d.id === id) }, 50).handle(event({ event_id: 'evt_2' }), ctx());
    expect(outs.map((o) => [(o.value as DeliveryTask).destination_id, o.key])).toEqual([['dst_a', `${T}/evt_2`], ['dst_b', 'dst_b']]);
  });
});

describe('validate, filter and route chained in one pass', () => {
  const flow: DeliveryFlow = { kind: 'flow', id: 'flw_1', tenant_id: T, name: 'f', ingester_id: 'ing_1', destination_ids: ['dst_b', 'dst_a'], created_at: now, updated_at: now };
  const config = (filters: unknown[]) => ({
    get: ((kind: string, _t: string, id: string) => (kind === 'ingester' ? ingester({ filters }) : destination(id))) as never,
    list: () => [flow],
  });
  const run = async (filters: unknown[], e = event()) => {
    const c = config(filters);
    const stage = chainStages(validateStage(topics, c), filterStage(topics, c), routeStage(topics, c, 50));
    const outs = await stage.handle(e, ctx());
    checkWrites(stage, outs);
    return { stage, outs };
  };

  it('writes the record of every state it passes and hands each on: validated, filtered, then a task per destination', async () => {
    const { stage, outs } = await run([{ type: 'body', path: 'livemode', op: 'equals', value: true }]);
    expect(outs.map((o) => o.topic)).toEqual([topics.validated, topics.filtered, topics.deliveryRequested, topics.deliveryRequested]);
    expect(outs.slice(2).map((o) => (o.value as DeliveryTask).destination_id)).toEqual(['dst_a', 'dst_b']);
    // the records handed on say so, for a consumer reading them back in a chained stage's place
    expect(outs.map((o) => o.headers?.[CHAINED_HEADER])).toEqual(['filter', 'route', undefined, undefined]);
    // the same tasks as routing the filtered record on its own
    const alone = await routeStage(topics, config([]), 50).handle(outs[1]!.value as WebhookEvent, ctx());
    expect(alone.map((o) => (o.value as DeliveryTask).delivery_id)).toEqual(outs.slice(2).map((o) => (o.value as DeliveryTask).delivery_id));
    expect({ name: stage.name, input: stage.input.topic }).toEqual({ name: 'validate', input: topics.received });
    expect(new Set(stage.writes)).toEqual(new Set([topics.validated, topics.filtered, topics.deliveryRequested, topics.transitions, topics.eventsDlq]));
  });

  it('stops where a stage stops: a dropped event is validated only, a set-aside one validated then dead-lettered with the bytes it arrived as', async () => {
    expect((await run([{ type: 'body', path: 'livemode', op: 'equals', value: false }])).outs.map((o) => o.topic)).toEqual([topics.validated]);
    const { outs } = await run([{ type: 'no-such-rule' }]);
    expect(outs.map((o) => o.topic)).toEqual([topics.validated, topics.eventsDlq, topics.transitions, topics.transitions]);
    expect(Buffer.from((outs[1]!.value as DeadLetter).value).toString()).toBe('original bytes');
  });

  it('refuses an output a chained stage does not declare, as each stage on its own would', async () => {
    const c = config([]);
    const rogue = { ...filterStage(topics, c), handle: async (e: WebhookEvent) => [{ topic: topics.deliveryCompleted, key: 'k', record: 'WebhookEvent' as const, value: e }] };
    await expect(chainStages(validateStage(topics, c), rogue).handle(event(), ctx())).rejects.toThrow(`stage filter wrote to ${topics.deliveryCompleted}, which it does not declare`);
  });
});
