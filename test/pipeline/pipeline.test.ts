import Stripe from 'stripe';
import { receiverPool } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';
import { runScript } from '../support/process';
import { attemptsOf, sendEvent, waitForStates } from '../support/flow';

/** The stages together: providers, filters, fan-out, logs, and producers that bypass HTTP. */
describe('pipeline', () => {
  let svc: TestService;
  const receivers = receiverPool();
  const receiver = () => receivers.next();
  const destination = async (name: string, url: string) => {
    const res = await svc.api('POST', `/v1/tenants/${svc.tenantId}/destinations`, { name, url });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };

  beforeAll(async () => {
    svc = await startTestService({ RETRY_TIERS: '100ms', LOG_LEVEL: 'info' });
  });
  afterAll(async () => {
    await Promise.all([svc?.stop(), receivers.closeAll()]);
  });

  it('fans one event out to one delivery per destination', async () => {
    const [a, b] = [await receiver(), await receiver()];
    const ids = [await destination('fan-a', a.url), await destination('fan-b', b.url)];
    const ing = await svc.api('POST', `/v1/tenants/${svc.tenantId}/ingesters`, { name: 'fan', provider: 'none', config: {}, destination_ids: ids });
    expect(ing.body.delivery_flows[0].destination_ids).toEqual(ids);
    const eventId = await sendEvent(`${svc.url}/v1/hooks/${ing.body.id}`, { fan: 'out' });
    const [ra, rb] = await Promise.all([a.waitForRequests(1), b.waitForRequests(1)]);
    expect(ra[0]!.headers['webhook-id']).not.toBe(rb[0]!.headers['webhook-id']);
    expect(ra[0]!.body.toString()).toBe('{"fan":"out"}');
    const attempts = await eventually('two deliveries', async () => {
      const rows = await attemptsOf(svc, eventId);
      return rows.length === 2 ? rows : undefined;
    });
    expect(new Set(attempts.map((r) => r.delivery_id))).toEqual(new Set([ra[0]!.headers['webhook-id'], rb[0]!.headers['webhook-id']]));
    const rows = await waitForStates(svc, eventId, ['received', 'validated', 'filtered', 'delivered', 'acked']);
    expect(rows.filter((t) => t.state === 'delivered')).toHaveLength(2);
  });

  it('verifies a Stripe-signed event, filters on its type, and logs what a filter dropped', async () => {
    const r = await receiver();
    const secret = 'whsec_test_pipeline_secret';
    const ing = await svc.api('POST', `/v1/tenants/${svc.tenantId}/ingesters`, {
      name: 'stripe',
      provider: 'stripe',
      config: { signing_secret: secret },
      filters: [{ type: 'event_type', op: 'in', values: ['charge.succeeded'] }],
      destination_ids: [await destination('stripe-dest', r.url)],
    });
    expect(ing.status).toBe(201);
    const hook = `${svc.url}/v1/hooks/${ing.body.id}`;
    const stripe = new Stripe('sk_test_unused');
    const post = async (type: string, tamper = false) => {
      const payload = JSON.stringify({ id: `evt_${type}`, object: 'event', type });
      const header = stripe.webhooks.generateTestHeaderString({ payload, secret });
      const res = await fetch(hook, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': header }, body: tamper ? payload.replace('evt_', 'evX_') : payload });
      expect(res.status).toBe(202);
      return ((await res.json()) as { event_id: string }).event_id;
    };
    const kept = await post('charge.succeeded');
    const dropped = await post('charge.failed');
    const forged = await post('charge.succeeded', true);

    await waitForStates(svc, kept, ['validated', 'filtered', 'delivered']);
    expect(JSON.parse((await r.waitForRequests(1))[0]!.body.toString()).type).toBe('charge.succeeded');
    const droppedStates = await waitForStates(svc, dropped, ['validated']);
    expect(droppedStates.map((t) => t.state)).not.toContain('filtered');
    const forgedStates = await waitForStates(svc, forged, ['failed']);
    expect(forgedStates.find((t) => t.state === 'failed')!.reason).toMatch(/signature/);

    const log = await eventually('the filter log line in ClickHouse', async () => {
      const rs = await svc.clickhouse.query({
        query: `SELECT level, message, stage, correlation_id, fields FROM ${svc.config.clickhouseDatabase}.logs WHERE tenant_id = {t:String} AND event_id = {e:String}`,
        query_params: { t: svc.tenantId, e: dropped },
        format: 'JSONEachRow',
      });
      const rows = await rs.json<{ level: string; message: string; stage: string; correlation_id: string; fields: string }>();
      return rows.find((l) => l.message === 'event dropped by filter');
    });
    expect(log.stage).toBe('filter');
    expect(log.correlation_id).toBeTruthy();
    expect(JSON.parse(log.fields)).toMatchObject({ rule_index: 0, reason: expect.stringContaining('charge.failed') });
    await new Promise((res) => setTimeout(res, 500));
    expect(r.requests).toHaveLength(1);
  });

  it('delivers events a producer wrote straight onto the received topic (README example)', async () => {
    const r = await receiver();
    const ing = await svc.api('POST', `/v1/tenants/${svc.tenantId}/ingesters`, { name: 'direct', provider: 'none', config: {}, destination_ids: [await destination('direct-dest', r.url)] });
    const env = { ...process.env, TOPIC_PREFIX: svc.config.topicPrefix };
    const out = await runScript('examples/produce-direct.ts', ['--tenant', svc.tenantId, '--ingester', ing.body.id, '--count', '50'], env);
    expect(out.code).toBe(0);
    const { produced, first_event_id } = JSON.parse(out.stdout) as { produced: number; first_event_id: string };
    expect(produced).toBe(50);
    await r.waitForRequests(50);
    const bodies = new Set(r.requests.map((q) => (JSON.parse(q.body.toString()) as { n: number }).n));
    expect(bodies.size).toBe(50);
    const states = (await waitForStates(svc, first_event_id, ['received', 'validated', 'filtered', 'delivered', 'acked'])).map((t) => t.state);
    expect(new Set(states)).toEqual(new Set(['received', 'validated', 'filtered', 'delivered', 'acked']));
  });
});
