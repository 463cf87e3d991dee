import type { Admin } from 'kafkajs';
import type { Destination } from '../../core/model';
import { fetchTopicOffsets } from '../../platform/kafka/client';
import { murmur2 } from '../../platform/kafka/partitioner';
import { receiverPool, type Receiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';
import { destinationWithIngester, sendEvent, waitForStates } from '../support/flow';

/**
 * Paused and disabled destinations: their deliveries are held on deliveries.held and go out once
 * active again; an ordered destination's (fed by an ordered ingester) in the order accepted.
 */
describe('hold and release', () => {
  let svc: TestService;
  let admin: Admin;
  const receivers = receiverPool();

  beforeAll(async () => {
    svc = await startTestService({ RETRY_TIERS: '100ms' });
    admin = svc.service.kafka.admin();
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.disconnect();
    await Promise.all([svc?.stop(), receivers.closeAll()]);
  });

  const destination = (id: string) => svc.service.store.get('destination', svc.tenantId, id)!;
  const setStatus = async (id: string, status: Destination['status']) => {
    const applied = await svc.service.store.update({ ...destination(id), status, disabled_reason: status === 'active' ? null : destination(id).disabled_reason, updated_at: new Date().toISOString() });
    expect(applied).toBe(true);
  };
  /** Records written to the held topic so far (nothing is ever deleted from it in a test). */
  const heldCount = async () => (await fetchTopicOffsets(admin, svc.service.topics.deliveryHeld)).reduce((n, p) => n + Number(p.high) - Number(p.low), 0);
  const seqs = (r: Receiver) => r.requests.map((q) => (JSON.parse(q.body.toString()) as { seq: number }).seq);
  const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));

  it('holds a paused destination\'s deliveries while another destination of the ingester keeps receiving, then releases them in order', async () => {
    const paused = await receivers.next();
    const other = await receivers.next();
    const first = await svc.api('POST', `/v1/tenants/${svc.tenantId}/destinations`, { name: 'paused', url: paused.url, ordered: true });
    const second = await svc.api('POST', `/v1/tenants/${svc.tenantId}/destinations`, { name: 'other', url: other.url });
    expect([first.status, second.status]).toEqual([201, 201]);
    const ing = await svc.api('POST', `/v1/tenants/${svc.tenantId}/ingesters`, { name: 'both', provider: 'none', config: {}, ordered: true, destination_ids: [first.body.id, second.body.id] });
    expect(ing.status).toBe(201);
    const hookUrl = `${svc.url}/v1/hooks/${ing.body.id}`;
    await setStatus(first.body.id, 'paused');

    const n = 12;
    const heldBefore = await heldCount();
    for (let seq = 0; seq < n; seq++) await sendEvent(hookUrl, { seq });
    await other.waitForRequests(n);
    expect(seqs(other).sort((a, b) => a - b)).toEqual([...Array(n).keys()]);
    await eventually('the paused destination\'s deliveries on the held topic', async () => ((await heldCount()) - heldBefore >= n ? true : undefined));
    await sleep(3_000);
    expect(paused.requests).toHaveLength(0);
    expect((await heldCount()) - heldBefore).toBe(n);

    await setStatus(first.body.id, 'active');
    await paused.waitForRequests(n, 20_000);
    // an ordered destination: one partition, held and released in the order sent
    expect(seqs(paused)).toEqual([...Array(n).keys()]);
    await sleep(1_000);
    expect(paused.requests).toHaveLength(n);
    expect(other.requests).toHaveLength(n);
  });

  it('releases one destination of a partition while another of the same partition stays paused, then the other in its order', async () => {
    const ra = await receivers.next();
    const rb = await receivers.next();
    const partitionOf = (id: string) => (murmur2(Buffer.from(id)) & 0x7fffffff) % svc.config.kafkaPartitions;
    // ordered destinations: each keyed by its id, all of its deliveries on one partition
    const a = await svc.api('POST', `/v1/tenants/${svc.tenantId}/destinations`, { name: 'a', url: ra.url, ordered: true });
    // destinations until one shares a's partition of deliveries.held
    const candidate = (i: number) => svc.api('POST', `/v1/tenants/${svc.tenantId}/destinations`, { name: `b${i}`, url: rb.url, ordered: true });
    let b = await candidate(0);
    for (let i = 1; partitionOf(b.body.id) !== partitionOf(a.body.id); i++) b = await candidate(i);
    const ing = await svc.api('POST', `/v1/tenants/${svc.tenantId}/ingesters`, { name: 'ab', provider: 'none', config: {}, ordered: true, destination_ids: [a.body.id, b.body.id] });
    expect(ing.status).toBe(201);
    await setStatus(a.body.id, 'paused');
    await setStatus(b.body.id, 'paused');
    const heldBefore = await heldCount();
    const n = 6;
    for (let seq = 0; seq < n; seq++) await sendEvent(`${svc.url}/v1/hooks/${ing.body.id}`, { seq });
    await eventually('both destinations\' deliveries held', async () => ((await heldCount()) - heldBefore >= 2 * n ? true : undefined));

    // b's tasks sit between a's on the one partition: a, still paused, holds none of them up
    await setStatus(b.body.id, 'active');
    await rb.waitForRequests(n, 20_000);
    expect(seqs(rb)).toEqual([...Array(n).keys()]);
    await sleep(1_500);
    expect(ra.requests).toHaveLength(0);

    await setStatus(a.body.id, 'active');
    await ra.waitForRequests(n, 20_000);
    expect(seqs(ra)).toEqual([...Array(n).keys()]);
    await sleep(500);
    expect(rb.requests).toHaveLength(n);
  });

  it('releases the held deliveries of a destination disabled by 410 Gone once it is active again', async () => {
    const r = await receivers.next();
    r.respondBy((_req, i) => ({ status: i === 0 ? 410 : 200 }));
    const { hookUrl, destinationId } = await destinationWithIngester(svc, 'gone', r.url, { ordered: true }, { ordered: true });
    const goneEvent = await sendEvent(hookUrl, { seq: -1 });
    await waitForStates(svc, goneEvent, ['failed', 'dlq_queued']);
    await eventually('the destination disabled', async () => (destination(destinationId).status === 'disabled' ? true : undefined));

    const heldBefore = await heldCount();
    for (let seq = 0; seq < 4; seq++) await sendEvent(hookUrl, { seq });
    await eventually('four more held', async () => ((await heldCount()) - heldBefore >= 4 ? true : undefined));
    expect(r.requests).toHaveLength(1);

    await setStatus(destinationId, 'active');
    await r.waitForRequests(5, 20_000);
    expect(seqs(r)).toEqual([-1, 0, 1, 2, 3]);
  });

  it('holds a destination without order on every partition of the held topic, and releases all of it', async () => {
    const r = await receivers.next();
    const { hookUrl, destinationId } = await destinationWithIngester(svc, 'spread', r.url);
    await setStatus(destinationId, 'paused');
    const before = await fetchTopicOffsets(admin, svc.service.topics.deliveryHeld);
    const n = 16;
    for (let seq = 0; seq < n; seq++) await sendEvent(hookUrl, { seq });
    await eventually(`${n} held`, async () => ((await heldCount()) - before.reduce((m, p) => m + Number(p.high) - Number(p.low), 0) >= n ? true : undefined));
    // keyed by event: both partitions hold some (16 random keys on one of two: 2 in 65536 miss)
    const after = await fetchTopicOffsets(admin, svc.service.topics.deliveryHeld);
    const grown = after.filter((p) => Number(p.high) > Number(before.find((b) => b.partition === p.partition)!.high));
    expect(grown).toHaveLength(svc.config.kafkaPartitions);

    await setStatus(destinationId, 'active');
    await r.waitForRequests(n, 20_000);
    expect(seqs(r).sort((x, y) => x - y)).toEqual([...Array(n).keys()]);
    await sleep(500);
    expect(r.requests).toHaveLength(n);
  });

  it('fails the held deliveries of a destination deleted while paused, with their dead letters', async () => {
    const r = await receivers.next();
    const { hookUrl, destinationId } = await destinationWithIngester(svc, 'deleted', r.url);
    await setStatus(destinationId, 'paused');
    const heldBefore = await heldCount();
    const events = [await sendEvent(hookUrl, { seq: 0 }), await sendEvent(hookUrl, { seq: 1 })];
    await eventually('two held', async () => ((await heldCount()) - heldBefore >= 2 ? true : undefined));

    await svc.service.store.remove('destination', svc.tenantId, destinationId);
    for (const eventId of events) {
      const rows = await waitForStates(svc, eventId, ['failed', 'dlq_queued']);
      expect(rows.find((t) => t.state === 'failed')!.reason).toBe('the destination no longer exists');
    }
    expect(r.requests).toHaveLength(0);
  });
});
