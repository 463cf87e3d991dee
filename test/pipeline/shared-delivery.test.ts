import { Redis } from 'ioredis';
import type { Admin, Producer } from 'kafkajs';
import { newId } from '../../core/ids';
import { AvroCodec } from '../../platform/avro/codec';
import type { DeliveryTask } from '../../platform/avro/records';
import { CONFIG_VERSION_HEADER } from '../../pipeline/runtime/config-version';
import { createProducer } from '../../platform/kafka/client';
import { BreakerBoard } from '../../platform/redis/breaker-board';
import { destinationWithIngester } from '../support/flow';
import { receiverPool } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';
import { joiningEnv, spawnService, stopService, type ServiceProcess, waitForGroupMembers } from '../support/service-process';

const PER_DESTINATION = 4;
const SYNC_MS = 200;
const RESET_MS = 5_000;
/** Settings both deliver processes share; their breakers differ (below). */
const shared = { DELIVERY_PER_DESTINATION: String(PER_DESTINATION), DELIVERY_SYNC_MS: String(SYNC_MS), RETRY_TIERS: '100ms', BREAKER_ERROR_PERCENT: '50', BREAKER_RESET_MS: String(RESET_MS), DELIVERY_TIMEOUT_MS: '3000' };

/**
 * Two deliver processes on one deployment: this test's service and one more process running the
 * deliver stage alone, each owning one of the two partitions of deliveries.requested. Deliveries
 * of one destination are put on both partitions (as while a partition moves from one process to
 * another), so both processes deliver to it at once.
 */
describe('deliver processes sharing a destination', () => {
  let svc: TestService;
  let other: ServiceProcess;
  let producer: Producer;
  let admin: Admin;
  let redis: Redis;
  const codec = AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!);
  const receivers = receiverPool();
  const linesOf = (p: ServiceProcess, msg: string, destinationId = '') => p.stdout().split('\n').filter((l) => l.includes(`"msg":"${msg}"`) && l.includes(destinationId));

  beforeAll(async () => {
    // this process opens a breaker after four failures; the other never on its own
    svc = await startTestService({ ...shared, BREAKER_MIN_ATTEMPTS: '4' });
    other = spawnService(joiningEnv(svc.config, 'deliverer', { ...shared, BREAKER_MIN_ATTEMPTS: '10000', STAGES: 'deliver' }));
    producer = createProducer(svc.service.kafka);
    admin = svc.service.kafka.admin();
    redis = new Redis(process.env.REDIS_URL!);
    await Promise.all([producer.connect(), admin.connect(), codec.register({ [svc.service.topics.deliveryRequested]: 'DeliveryTask' }), other.waitForOutput(/"msg":"service ready"/)]);
    // both processes in the deliver group, one partition each, and each has counted the other
    await waitForGroupMembers(admin, svc.config.topicPrefix, 'deliver', 2);
    await eventually('two live deliver processes', async () => ((await redis.zcard(`${svc.config.topicPrefix}deliverers`)) === 2 ? true : undefined), 10_000, 100);
    // the other process has taken its share (its syncs run late on a loaded machine); this one,
    // idle meanwhile, takes it at its next sync
    await eventually('the other process counting two', async () => (linesOf(other, 'deliver processes changed; per-destination share follows').some((l) => (JSON.parse(l) as { processes: number }).processes === 2) ? true : undefined), 20_000, 100);
    await new Promise((r) => setTimeout(r, 3 * SYNC_MS));
  }, 120_000);
  afterAll(async () => {
    await Promise.all([other && stopService(other), producer?.disconnect(), admin?.disconnect(), redis?.quit()]);
    await Promise.all([svc?.stop(), receivers.closeAll()]);
  });

  /**
   * Puts `count` deliveries of the destination on each partition, decided with the configuration
   * this service has: the other process applies it (the destination just made) before deciding.
   */
  async function produceOnBoth(destinationId: string, ingesterId: string, count: number): Promise<void> {
    const now = Date.now();
    const headers = { [CONFIG_VERSION_HEADER]: svc.service.store.version.toString() };
    const messages = await Promise.all(
      Array.from({ length: 2 * count }, async (_, i) => {
        const task: DeliveryTask = { delivery_id: newId('delivery'), event_id: newId('event'), tenant_id: svc.tenantId, ingester_id: ingesterId, destination_id: destinationId, correlation_id: 'cor_shared', attempt: 1, not_before: now, received_at: now, content_type: 'application/json', body: Buffer.from(JSON.stringify({ i })), replay_of: null, hops: 0 };
        return { partition: i % 2, key: destinationId, value: await codec.encode(svc.service.topics.deliveryRequested, 'DeliveryTask', task), headers };
      }),
    );
    await producer.send({ topic: svc.service.topics.deliveryRequested, acks: -1, messages });
  }

  it('keeps a destination within DELIVERY_PER_DESTINATION across both processes', async () => {
    const r = await receivers.next();
    // answers held back, so that every process fills its share
    r.respondBy(() => ({ status: 200, delayMs: 150 }));
    const { destinationId, ingesterId } = await destinationWithIngester(svc, 'shared-limit', r.url);
    await produceOnBoth(destinationId, ingesterId, 24);
    await r.waitForRequests(48, 60_000);
    // both processes delivered (one partition each), at once
    expect(linesOf(other, 'delivered', destinationId).length).toBeGreaterThan(0);
    expect(linesOf(other, 'delivered', destinationId).length).toBeLessThan(48);
    // the documented bound once both processes see each other: the limit itself; each process
    // alone would have taken all of it (2 × 4)
    expect(r.maxInFlight()).toBeGreaterThanOrEqual(2);
    expect(r.maxInFlight()).toBeLessThanOrEqual(PER_DESTINATION);
    expect(r.maxInFlight()).toBeLessThan(2 * PER_DESTINATION);
  }, 90_000);

  it('holds a destination in every process once one process opens its breaker, and lets it go when the owner closes', async () => {
    const r = await receivers.next();
    let healthy = false;
    r.respondBy(() => ({ status: healthy ? 200 : 500 }));
    const { destinationId, ingesterId } = await destinationWithIngester(svc, 'shared-breaker', r.url, { retry_schedule_ms: [0] });
    // a steady flow on both partitions: each delivery one attempt, dead-lettered when it fails
    let flowing = true;
    const flow = (async () => {
      while (flowing) {
        await produceOnBoth(destinationId, ingesterId, 1);
        await new Promise((res) => setTimeout(res, 50));
      }
    })();
    try {
      const board = new BreakerBoard(redis, svc.config.topicPrefix);
      const open = await eventually('a breaker open on the board', async () => (await board.entries()).find((e) => e.destination_id === destinationId && e.state === 'open'), 30_000, 20);
      const seenAt = Date.now();
      // the other process was sending too, and never opened a breaker of its own
      expect(linesOf(other, 'delivery failed for good; dead-lettered', destinationId).length).toBeGreaterThan(0);
      // documented: the others stop within DELIVERY_SYNC_MS (plus a round trip) of the open being
      // published; requests already under way still arrive. Until the owner's reset is over,
      // nothing more reaches the destination from either process. A loaded machine runs the other
      // process's sync and its requests late by hundreds of ms, hence a second of grace: a process
      // that ignored the board would still send through the 3 s after it (the flow goes on)
      const bound = 5 * SYNC_MS;
      const windowEnd = open.since + RESET_MS - 500;
      await new Promise((res) => setTimeout(res, windowEnd - Date.now()));
      const late = r.requests.filter((q) => q.at > seenAt + bound && q.at < windowEnd);
      expect(late).toEqual([]);
      expect(linesOf(other, 'circuit breaker open', destinationId)).toEqual([]);
      expect(linesOf(other, 'breaker open; delivery waits', destinationId).length).toBeGreaterThan(0);

      // the owner's trial succeeds and closes its breaker; the other process follows
      healthy = true;
      await eventually('the other process delivering again', async () => (linesOf(other, 'delivered', destinationId).length > 0 ? true : undefined), 20_000, 100);
    } finally {
      flowing = false;
      await flow;
    }
  }, 90_000);
});
