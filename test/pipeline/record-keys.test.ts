import type { Admin } from 'kafkajs';
import { AvroCodec } from '../../platform/avro/codec';
import type { WebhookEvent } from '../../platform/avro/records';
import { fetchTopicOffsets } from '../../platform/kafka/client';
import { readTopic } from '../../platform/kafka/topic-table';
import { destinationWithIngester, sendEvent } from '../support/flow';
import { receiverPool } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';
import { joiningEnv, spawnService, stopService, type ServiceProcess, waitForGroupMembers } from '../support/service-process';

const PARTITIONS = 4;

/**
 * How records are keyed, on a deployment of two service processes: this test's service (every
 * stage) and one more running deliver alone, the deliver group's four partitions split between
 * them. One Hook URL's events, keyed by event, land on every partition and both processes
 * deliver a share of them; an ordered ingester feeding an ordered destination delivers in the
 * order its webhooks were accepted, one request at a time, its failed attempts retried in line.
 */
describe('records keyed by event, and order where it is asked for', () => {
  let svc: TestService;
  let other: ServiceProcess;
  let admin: Admin;
  const codec = AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!);
  const receivers = receiverPool();

  beforeAll(async () => {
    const settings = { KAFKA_PARTITIONS: String(PARTITIONS), RETRY_TIERS: '100ms', INGEST_RATE_LIMIT_PER_HOOK: 'off', INGEST_RATE_LIMIT_PER_TENANT: 'off' };
    svc = await startTestService(settings);
    other = spawnService(joiningEnv(svc.config, 'deliverer', { ...settings, STAGES: 'deliver' }));
    admin = svc.service.kafka.admin();
    await Promise.all([admin.connect(), other.waitForOutput(/"msg":"service ready"/)]);
    await waitForGroupMembers(admin, svc.config.topicPrefix, 'deliver', 2);
  }, 120_000);
  afterAll(async () => {
    await Promise.all([other && stopService(other), admin?.disconnect()]);
    await Promise.all([svc?.stop(), receivers.closeAll()]);
  });

  /** Records on each partition of the topic so far. */
  const perPartition = async (topic: string) => (await fetchTopicOffsets(admin, topic)).map((o) => Number(o.high) - Number(o.low));

  it('spreads one Hook URL\'s events over every partition, and both deliver processes deliver a substantial share', async () => {
    const r = await receivers.next();
    const { hookUrl, destinationId } = await destinationWithIngester(svc, 'one busy hook', r.url);
    const n = 200;
    let next = 0;
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < n) await sendEvent(hookUrl, { seq: next++ });
    }));
    await r.waitForRequests(n, 60_000);
    const seqs = new Set(r.requests.map((q) => (JSON.parse(q.body.toString()) as { seq: number }).seq));
    expect(seqs.size).toBe(n);

    // one ingester, one destination, and still every partition of both topics
    for (const topic of [svc.service.topics.received, svc.service.topics.deliveryRequested]) {
      const counts = await perPartition(topic);
      expect({ topic, partitions: counts.length }).toEqual({ topic, partitions: PARTITIONS });
      for (const c of counts) expect(c).toBeGreaterThan(0);
    }
    // the other process's attempt lines name the deliveries it made; this process made the rest
    await eventually('the other process logging its deliveries', async () => {
      const lines = other.stdout().split('\n').filter((l) => l.includes('"msg":"delivered"') && l.includes(destinationId));
      return lines.length > 0 ? true : undefined;
    });
    const byOther = new Set(other.stdout().split('\n').filter((l) => l.includes('"msg":"delivered"') && l.includes(destinationId)).map((l) => (JSON.parse(l) as { delivery_id: string }).delivery_id));
    const all = new Set(r.requests.map((q) => String(q.headers['webhook-id'])));
    const byThis = [...all].filter((id) => !byOther.has(id));
    process.stderr.write(`one Hook URL, ${n} events on ${PARTITIONS} partitions: the other process delivered ${byOther.size}, this one ${byThis.length}\n`);
    // two partitions each: about half each; a quarter leaves room for an uneven hash
    expect(byOther.size).toBeGreaterThanOrEqual(n / 4);
    expect(byThis.length).toBeGreaterThanOrEqual(n / 4);
  }, 180_000);

  it('delivers an ordered ingester\'s webhooks to an ordered destination in the order accepted, one at a time, retrying in line', async () => {
    const r = await receivers.next();
    const { hookUrl, ingesterId, destinationId } = await destinationWithIngester(svc, 'in order', r.url, { ordered: true, retry_schedule_ms: [0, 300, 300] }, { ordered: true });
    // every fifth delivery is refused once: a retry through the delay topics would fall behind later ones
    const seqOf = (req: { body: Buffer }) => (JSON.parse(req.body.toString()) as { seq: number }).seq;
    const statuses: number[] = [];
    const refused = new Set<string>();
    r.respondBy((req, index) => {
      const id = String(req.headers['webhook-id']);
      const status = seqOf(req) % 5 === 2 && !refused.has(id) ? 503 : 200;
      if (status === 503) refused.add(id);
      statuses[index] = status;
      return { status, delayMs: seqOf(req) % 3 === 0 ? 30 : 2 };
    });
    const n = 40;
    const seqOfEvent = new Map<string, number>();
    let next = 0;
    // four senders at once: the order accepted is the order of the ingester's partition
    await Promise.all(Array.from({ length: 4 }, async () => {
      while (next < n) {
        const seq = next++;
        seqOfEvent.set(await sendEvent(hookUrl, { seq }), seq);
      }
    }));
    const received = (await readTopic(svc.service.kafka, svc.service.topics.received)).filter((rec) => rec.key?.toString() === `${svc.tenantId}/${ingesterId}`);
    expect(received).toHaveLength(n);
    expect(new Set(received.map((rec) => rec.partition)).size).toBe(1);
    received.sort((a, b) => Number(a.offset) - Number(b.offset));
    const accepted = await Promise.all(received.map(async (rec) => seqOfEvent.get((await codec.decodeStored('WebhookEvent', rec.value!) as WebhookEvent).event_id)!));

    await r.waitForRequests(n + accepted.filter((seq) => seq % 5 === 2).length, 60_000);
    // one request at a time: the order of the requests is the order of the answers
    expect(r.maxInFlight()).toBe(1);
    expect(r.requests.filter((_, i) => statuses[i] === 200).map(seqOf)).toEqual(accepted);
    // each refused attempt was tried again before any later delivery
    for (const [i, status] of statuses.entries()) if (status === 503) expect(r.requests[i + 1]!.headers['webhook-id']).toBe(r.requests[i]!.headers['webhook-id']);
    // the destination's tasks were all keyed by it: one partition of deliveries.requested
    const tasks = (await readTopic(svc.service.kafka, svc.service.topics.deliveryRequested)).filter((rec) => rec.key?.toString() === destinationId);
    expect(tasks).toHaveLength(n);
    expect(new Set(tasks.map((t) => t.partition)).size).toBe(1);
  }, 180_000);
});
