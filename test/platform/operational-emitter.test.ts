import { Redis } from 'ioredis';
import { Logger } from '../../core/log';
import type { Destination, ReplayJob } from '../../core/model';
import { OPERATIONAL_INGESTER_ID } from '../../core/operational-events';
import type { DeliveryTask, WebhookEvent } from '../../platform/avro/records';
import { OperationalEvents, type OperationalConfig } from '../../platform/operational/emitter';
import { uniqueSuffix } from '../support/ids';

const now = new Date(0).toISOString();
const destination = (over: Partial<Destination>): Destination => ({ kind: 'destination', id: 'dst_x', tenant_id: 't', name: 'x', url: 'http://127.0.0.1:9/x', status: 'active', signing_secret: 'whsec_AAAA', disabled_reason: null, created_at: now, updated_at: now, ...over });

/**
 * The emitter's gate against real Redis: several deliver processes that see one breaker open
 * make one event; the happenings left out are counted in the next one; nothing is asked of Redis
 * or Kafka while no destination subscribes; a tenant's bound holds whatever the subjects.
 */
describe('operational event emitter', () => {
  let redis: Redis;
  const published: WebhookEvent[] = [];
  let dests: Destination[];
  let version = 1n;
  const config: OperationalConfig = {
    get: (_k, tenantId, id) => dests.find((d) => d.tenant_id === tenantId && d.id === id),
    list: (_k, tenantId) => dests.filter((d) => d.tenant_id === tenantId),
    get version() {
      return version;
    },
  };
  const emitter = (prefix: string, over: { windowMs?: number; perTenant?: number } = {}) =>
    new OperationalEvents({ config, redis, prefix, publish: async (e) => void published.push(e), windowMs: over.windowMs ?? 60_000, perTenant: over.perTenant ?? 100, log: new Logger('error') });
  const payload = (e: WebhookEvent) => JSON.parse(e.body.toString()) as { type: string; data: Record<string, unknown> };

  beforeAll(() => {
    redis = new Redis(process.env.REDIS_URL!);
  });
  afterAll(async () => {
    await redis.quit();
  });
  beforeEach(() => {
    published.length = 0;
    dests = [destination({ id: 'dst_down' }), destination({ id: 'dst_ops', event_types: ['destination.*', 'delivery.exhausted', 'replay.completed'] })];
    version += 1n;
  });

  it('makes one event when several processes see the same breaker open, counting the rest in the next window', async () => {
    const prefix = `t${uniqueSuffix()}.`;
    const processes = [emitter(prefix, { windowMs: 1_000 }), emitter(prefix, { windowMs: 1_000 }), emitter(prefix, { windowMs: 1_000 })];
    const outcomes = await Promise.all(processes.map((p) => p.breakerOpened('t', 'dst_down', 30_000)));
    expect(outcomes.filter((o) => o === null)).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'rate bound')).toHaveLength(2);
    expect(published).toHaveLength(1);
    const [event] = published;
    expect(event).toMatchObject({ tenant_id: 't', ingester_id: OPERATIONAL_INGESTER_ID, event_type: 'destination.breaker_opened', content_type: 'application/json', hops: 0 });
    expect(payload(event!)).toMatchObject({ type: 'destination.breaker_opened', data: { destination_id: 'dst_down', suppressed: 0 } });

    await new Promise((r) => setTimeout(r, 1_100));
    expect(await processes[0]!.breakerOpened('t', 'dst_down', 30_000)).toBeNull();
    expect(payload(published[1]!).data.suppressed).toBe(2);
  });

  it('asks nothing of Redis or Kafka while no destination names the type', async () => {
    const prefix = `t${uniqueSuffix()}.`;
    dests = [destination({ id: 'dst_down' }), destination({ id: 'dst_all', event_types: null }), destination({ id: 'dst_star', event_types: ['*'] })];
    const e = emitter(prefix);
    expect(await e.breakerOpened('t', 'dst_down', 1_000)).toBe('no destination subscribes');
    expect(await redis.keys(`${prefix}*`)).toEqual([]);
    expect(published).toEqual([]);
    // a subscription written since is seen at the next configuration version
    dests.push(destination({ id: 'dst_new', event_types: ['destination.breaker_opened'] }));
    version += 1n;
    expect(await e.breakerOpened('t', 'dst_down', 1_000)).toBeNull();
  });

  it('makes none about a destination that receives operational events, nor about their own deliveries', async () => {
    const e = emitter(`t${uniqueSuffix()}.`);
    const ops = dests[1]!;
    expect(await e.breakerOpened('t', ops.id, 1_000)).toBe('about a destination that receives operational events');
    expect(await e.destinationDisabled(ops, 'gone', null)).toBe('about a destination that receives operational events');
    const task = { delivery_id: 'dlv_1', event_id: 'evt_1', tenant_id: 't', ingester_id: 'ing_1', destination_id: ops.id, attempt: 3, replay_of: null } as DeliveryTask;
    expect(await e.deliveryExhausted(task, ops, 'retries exhausted')).toBe('about a destination that receives operational events');
    // an operational event's delivery to a destination that itself receives none (a subscription since removed)
    expect(await e.deliveryExhausted({ ...task, ingester_id: OPERATIONAL_INGESTER_ID }, dests[0]!, 'retries exhausted')).toBe('about an operational event');
    expect(published).toEqual([]);
  });

  it('holds a tenant to its bound whatever the subjects', async () => {
    const e = emitter(`t${uniqueSuffix()}.`, { perTenant: 2 });
    const job = (id: string): ReplayJob => ({ kind: 'replay_job', id, tenant_id: 't', filter: { from: now, to: now }, status: 'completed', matched: 0, replayed: 0, delivered: 0, failed: 0, error: null, created_by: 'key_1', created_at: now, updated_at: now, finished_at: now });
    const outcomes = [];
    for (const id of ['rpl_1', 'rpl_2', 'rpl_3', 'rpl_4']) outcomes.push(await e.replayCompleted(job(id)));
    expect(outcomes).toEqual([null, null, 'rate bound', 'rate bound']);
    expect(published.map((p) => payload(p).data.replay_job_id)).toEqual(['rpl_1', 'rpl_2']);
  });

  it('logs and swallows a failure to publish: the delivery that had the happening goes on', async () => {
    const prefix = `t${uniqueSuffix()}.`;
    const failing = new OperationalEvents({ config, redis, prefix, publish: () => Promise.reject(new Error('broker away')), windowMs: 60_000, perTenant: 10, log: new Logger('error') });
    await expect(failing.breakerOpened('t', 'dst_down', 1_000)).resolves.toBe('not sent');
    // the gate is given back: the next process that sees it open tells it
    expect(await emitter(prefix).breakerOpened('t', 'dst_down', 1_000)).toBeNull();
    expect(published).toHaveLength(1);
  });
});
