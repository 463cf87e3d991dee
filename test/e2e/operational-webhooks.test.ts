import { Webhook } from 'standardwebhooks';
import { receiverPool, type Receiver, type ReceivedRequest } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';
import { attemptsOf, destinationWithIngester, sendEvent, waitForStates } from '../support/flow';

type Json = Record<string, any>;

interface OpsEndpoint {
  id: string;
  secret: string;
  receiver: Receiver;
}

/** An operational event as a receiver got it: its signature verified with the endpoint's secret. */
interface Received {
  webhookId: string;
  type: string;
  data: Json;
}

/**
 * Operational webhooks end to end: a tenant's endpoints subscribed to the service's own event types
 * get signed webhooks when a breaker opens, a delivery runs out of attempts, a destination is
 * disabled by 410 Gone and a replay job completes; catch-all endpoints get none; an ops endpoint
 * that fails itself makes no further operational events.
 */
describe('operational webhooks', () => {
  let svc: TestService;
  const receivers = receiverPool();
  const base = () => `/v1/tenants/${svc.tenantId}`;

  const destination = async (name: string, receiver: Receiver, extra: Json): Promise<OpsEndpoint> => {
    const r = await svc.api('POST', `${base()}/destinations`, { name, url: receiver.url, ...extra });
    if (r.status !== 201) throw new Error(`destination ${name}: ${r.status} ${JSON.stringify(r.body)}`);
    return { id: r.body.id, secret: r.body.signing_secret, receiver };
  };

  /** Every request the endpoint got, each verified with its secret (a bad signature throws). */
  const received = (e: OpsEndpoint): Received[] =>
    e.receiver.requests.map((q: ReceivedRequest) => {
      const headers = { 'webhook-id': String(q.headers['webhook-id']), 'webhook-timestamp': String(q.headers['webhook-timestamp']), 'webhook-signature': String(q.headers['webhook-signature']) };
      const payload = new Webhook(e.secret).verify(q.body.toString('utf8'), headers) as Json;
      return { webhookId: headers['webhook-id'], type: payload.type, data: payload.data };
    });
  const about = (e: OpsEndpoint, type: string, subject: string) => received(e).filter((r) => r.type === type && (r.data.destination_id === subject || r.data.replay_job_id === subject));
  const waitFor = (e: OpsEndpoint, type: string, subject: string, timeoutMs = 30_000) =>
    eventually(`${type} about ${subject}`, async () => {
      const got = about(e, type, subject);
      return got.length > 0 ? got : undefined;
    }, timeoutMs);

  // ops endpoints
  let breakerOps: OpsEndpoint; // destination.breaker_opened
  let deliveryOps: OpsEndpoint; // delivery.*
  let destinationOps: OpsEndpoint; // destination.*
  let replayOps: OpsEndpoint; // replay.completed
  let failingOps: OpsEndpoint; // delivery.exhausted + destination.breaker_opened, answers 500
  // endpoints that must get none
  let catchAll: OpsEndpoint; // event_types null
  let star: OpsEndpoint; // ['*']
  let shortPrefix: OpsEndpoint; // ['d*']

  beforeAll(async () => {
    svc = await startTestService({
      RETRY_SCHEDULE: '0,100ms,100ms',
      RETRY_TIERS: '100ms,1s',
      BREAKER_MIN_ATTEMPTS: '3',
      BREAKER_ERROR_PERCENT: '50',
      BREAKER_RESET_MS: '1500',
      EVIDENCE_BATCH_AGE_MS: '50',
      REPLAY_RATE_PER_S: '50',
      OPERATIONAL_EVENT_WINDOW_MS: '120000',
    });
    const r = () => receivers.next();
    breakerOps = await destination('ops breakers', await r(), { event_types: ['destination.breaker_opened'] });
    deliveryOps = await destination('ops deliveries', await r(), { event_types: ['delivery.*'] });
    destinationOps = await destination('ops destinations', await r(), { event_types: ['destination.*'] });
    replayOps = await destination('ops replays', await r(), { event_types: ['replay.completed'] });
    const failing = await r();
    failing.respondWith(500);
    failingOps = await destination('ops failing', failing, { event_types: ['delivery.exhausted', 'destination.breaker_opened'], retry_schedule_ms: [0, 100, 100] });
    catchAll = await destination('catch-all', await r(), {});
    star = await destination('star', await r(), { event_types: ['*'] });
    shortPrefix = await destination('short prefix', await r(), { event_types: ['d*'] });
  }, 60_000);

  afterAll(async () => {
    await receivers.closeAll();
    await svc?.stop();
  });

  it('sends one signed destination.breaker_opened when a failing destination\'s breaker opens, recorded with evidence', async () => {
    const receiver = await receivers.next();
    receiver.respondWith(500);
    // a long second wait: the deliveries wait on their breaker, none runs out of attempts here
    const failing = await destinationWithIngester(svc, 'breaks', receiver.url, { retry_schedule_ms: [0, 600_000] });
    for (let i = 0; i < 3; i++) await sendEvent(failing.hookUrl, { n: i });

    const [opened] = await waitFor(breakerOps, 'destination.breaker_opened', failing.destinationId);
    expect(opened!.data).toMatchObject({ tenant_id: svc.tenantId, destination_id: failing.destinationId, destination_name: 'breaks', suppressed: 0, opened_at: expect.any(String), trial_at: expect.any(String) });
    expect(JSON.stringify(opened!.data)).not.toContain(receiver.url);
    // a prefix subscription gets it too
    await waitFor(destinationOps, 'destination.breaker_opened', failing.destinationId);

    // a later event waits for the trial after BREAKER_RESET_MS; it fails and the breaker opens
    // again: still one event this window
    await sendEvent(failing.hookUrl, { n: 3 });
    await receiver.waitForRequests(4, 20_000);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(about(breakerOps, 'destination.breaker_opened', failing.destinationId)).toHaveLength(1);
    expect(about(destinationOps, 'destination.breaker_opened', failing.destinationId)).toHaveLength(1);

    // delivered like any delivery: an event of the tenant with its type, a delivery, evidence
    const delivery = await eventually('the ops delivery recorded', async () => {
      const d = await svc.api('GET', `${base()}/deliveries/${opened!.webhookId}`);
      return d.status === 200 ? d.body : undefined;
    });
    expect(delivery).toMatchObject({ destination_id: breakerOps.id, status: 'delivered', response_code: 200 });
    const rs = await svc.clickhouse.query({ query: `SELECT ingester_id, event_type FROM ${svc.config.clickhouseDatabase}.events WHERE event_id = {id:String}`, query_params: { id: delivery.event_id }, format: 'JSONEachRow' });
    expect(await rs.json()).toEqual([{ ingester_id: 'operational', event_type: 'destination.breaker_opened' }]);
    await waitForStates(svc, delivery.event_id, ['received', 'validated', 'filtered', 'delivered', 'acked']);
    const evidence = await eventually('the ops delivery sealed', async () => {
      const e = await svc.api('GET', `${base()}/evidence/${opened!.webhookId}`);
      return e.status === 200 && e.body.status === 'confirmed' ? e.body : undefined;
    });
    expect(evidence.leaf_hash).toMatch(/^[0-9a-f]{64}$/);
  }, 60_000);

  it('sends delivery.exhausted once a delivery runs out of attempts, without the event\'s body', async () => {
    const receiver = await receivers.next();
    receiver.respondWith(500);
    const failing = await destinationWithIngester(svc, 'exhausts', receiver.url, { retry_schedule_ms: [0, 100] });
    const eventId = await sendEvent(failing.hookUrl, { secret_marker: 'do-not-forward-this-body' });

    const [exhausted] = await waitFor(deliveryOps, 'delivery.exhausted', failing.destinationId);
    expect(exhausted!.data).toMatchObject({ destination_id: failing.destinationId, event_id: eventId, delivery_id: String(receiver.requests[0]!.headers['webhook-id']), attempts: 2, reason: expect.stringContaining('retries exhausted after 2 attempts'), suppressed: 0 });
    expect(JSON.stringify(exhausted!.data)).not.toContain('do-not-forward-this-body');
    // not a breaker or destination type: the destination.* endpoint has none of it
    expect(about(destinationOps, 'delivery.exhausted', failing.destinationId)).toHaveLength(0);
  }, 60_000);

  it('sends destination.disabled when a receiver answers 410 Gone', async () => {
    const receiver = await receivers.next();
    receiver.respondWith(410);
    const gone = await destinationWithIngester(svc, 'gone', receiver.url);
    const eventId = await sendEvent(gone.hookUrl);

    const [disabled] = await waitFor(destinationOps, 'destination.disabled', gone.destinationId);
    expect(disabled!.data).toMatchObject({ destination_id: gone.destinationId, event_id: eventId, reason: expect.stringContaining('410'), disabled_at: expect.any(String) });
    const shown = await svc.api('GET', `${base()}/destinations/${gone.destinationId}`);
    expect(shown.body.status).toBe('disabled');
    // breaker_opened alone is not destination.disabled
    expect(about(breakerOps, 'destination.disabled', gone.destinationId)).toHaveLength(0);
  }, 60_000);

  it('sends replay.completed with the job\'s counts', async () => {
    const receiver = await receivers.next();
    const ok = await destinationWithIngester(svc, 'replayed', receiver.url);
    const from = new Date(Date.now() - 1_000).toISOString();
    const eventId = await sendEvent(ok.hookUrl, { n: 'replay me' });
    await eventually('delivered', async () => ((await attemptsOf(svc, eventId)).some((a) => a.status === 'delivered') ? true : undefined));
    await new Promise((r) => setTimeout(r, 20));
    const job = await svc.api('POST', `${base()}/replays`, { from, to: new Date().toISOString(), destination_id: ok.destinationId });
    expect(job.status).toBe(202);

    const [completed] = await waitFor(replayOps, 'replay.completed', job.body.id);
    expect(completed!.data).toMatchObject({ replay_job_id: job.body.id, matched: 1, replayed: 1, delivered: 1, failed: 0, filter: { destination_id: ok.destinationId } });
    expect((await svc.api('GET', `${base()}/replays/${job.body.id}`)).body.status).toBe('completed');
  }, 60_000);

  it('makes no operational event about an ops endpoint that fails itself, and none reaches catch-all endpoints', async () => {
    // a destination of its own that fails: its three events open its breaker and run out of
    // attempts, so the failing ops endpoint (subscribed to both types) is sent operational events
    // that it fails in turn, whichever cases ran before this one
    const receiver = await receivers.next();
    receiver.respondWith(500);
    const trouble = await destinationWithIngester(svc, 'trouble', receiver.url, { retry_schedule_ms: [0, 100] });
    for (let i = 0; i < 3; i++) await sendEvent(trouble.hookUrl, { n: i });
    await waitFor(breakerOps, 'destination.breaker_opened', trouble.destinationId);
    await waitFor(deliveryOps, 'delivery.exhausted', trouble.destinationId);
    await waitFor(failingOps, 'destination.breaker_opened', trouble.destinationId);
    await waitFor(failingOps, 'delivery.exhausted', trouble.destinationId);

    /** The failing ops endpoint's deliveries, each with the status of its latest attempt. */
    const deliveriesToFailingOps = async () => {
      const page = await svc.api('GET', `${base()}/deliveries?limit=200&destination_id=${failingOps.id}`);
      const mine = (page.body.deliveries as { id: string; status: string; destination_id: string }[]).filter((d) => d.destination_id === failingOps.id);
      const byDelivery = new Map<string, string>();
      // newest first: the first row of each delivery is its latest attempt
      for (const d of mine) if (!byDelivery.has(d.id)) byDelivery.set(d.id, d.status);
      return byDelivery;
    };
    const done = await eventually('the failing ops endpoint\'s deliveries all dead', async () => {
      const byDelivery = await deliveriesToFailingOps();
      return byDelivery.size >= 2 && [...byDelivery.values()].every((s) => s === 'failed') ? byDelivery : undefined;
    }, 60_000);
    expect(done.size).toBeGreaterThanOrEqual(2);
    // its breaker has had every chance to open (three failures open it)
    expect(failingOps.receiver.requests.length).toBeGreaterThanOrEqual(3);
    await new Promise((r) => setTimeout(r, 2_000));

    // nobody was told about the ops endpoint: neither its breaker nor its exhausted deliveries
    for (const ops of [breakerOps, deliveryOps, destinationOps, failingOps]) {
      expect(received(ops).filter((r) => r.data.destination_id === failingOps.id)).toEqual([]);
    }
    // what the failing endpoint got is only about other destinations, and each event at most once:
    // one operational webhook per delivery made to it (counted again: another case's events may
    // have reached it after the first count)
    const distinct = new Set(received(failingOps).map((r) => r.webhookId));
    const made = await eventually('every delivery to the failing ops endpoint stored', async () => {
      const byDelivery = await deliveriesToFailingOps();
      return byDelivery.size >= distinct.size ? byDelivery : undefined;
    });
    expect([...distinct].sort()).toEqual([...made.keys()].sort());
    // catch-alls, `*` and a prefix shorter than the type's first segment get no operational event
    for (const none of [catchAll, star, shortPrefix]) expect(none.receiver.requests).toHaveLength(0);
  }, 90_000);
});
