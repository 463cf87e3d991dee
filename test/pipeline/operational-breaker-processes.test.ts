import { Redis } from 'ioredis';
import type { Admin, Producer } from 'kafkajs';
import { Webhook } from 'standardwebhooks';
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

/**
 * Both deliver processes sync with each other only every 10 s, so each sees the destination fail
 * on its own and opens a breaker of its own before it learns of the other's.
 */
const shared = { DELIVERY_SYNC_MS: '10000', RETRY_TIERS: '100ms', BREAKER_MIN_ATTEMPTS: '3', BREAKER_ERROR_PERCENT: '50', BREAKER_RESET_MS: '60000', DELIVERY_TIMEOUT_MS: '3000' };

/**
 * Two deliver processes of one deployment whose breakers both open for the same destination:
 * the tenant's ops endpoint gets one `destination.breaker_opened`, not one per process.
 */
describe('a breaker opening in two deliver processes', () => {
  let svc: TestService;
  let other: ServiceProcess;
  let producer: Producer;
  let admin: Admin;
  let redis: Redis;
  const codec = AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!);
  const receivers = receiverPool();

  beforeAll(async () => {
    svc = await startTestService(shared);
    other = spawnService(joiningEnv(svc.config, 'deliverer', { ...shared, STAGES: 'deliver' }));
    producer = createProducer(svc.service.kafka);
    admin = svc.service.kafka.admin();
    redis = new Redis(process.env.REDIS_URL!);
    await Promise.all([producer.connect(), admin.connect(), codec.register({ [svc.service.topics.deliveryRequested]: 'DeliveryTask' }), other.waitForOutput(/"msg":"service ready"/)]);
    await waitForGroupMembers(admin, svc.config.topicPrefix, 'deliver', 2);
  }, 120_000);
  afterAll(async () => {
    await Promise.all([other && stopService(other), producer?.disconnect(), admin?.disconnect(), redis?.quit()]);
    await Promise.all([svc?.stop(), receivers.closeAll()]);
  });

  it('tells the tenant once', async () => {
    const opsReceiver = await receivers.next();
    const ops = await svc.api('POST', `/v1/tenants/${svc.tenantId}/destinations`, { name: 'ops', url: opsReceiver.url, event_types: ['destination.breaker_opened'] });
    expect(ops.status).toBe(201);
    const failing = await receivers.next();
    failing.respondWith(500);
    const { destinationId, ingesterId } = await destinationWithIngester(svc, 'fails everywhere', failing.url, { retry_schedule_ms: [0] });

    // three deliveries on each partition: each process makes three failing attempts, once it has
    // the configuration they name (the destinations just made)
    const now = Date.now();
    const headers = { [CONFIG_VERSION_HEADER]: svc.service.store.version.toString() };
    const messages = await Promise.all(
      Array.from({ length: 6 }, async (_, i) => {
        const task: DeliveryTask = { delivery_id: newId('delivery'), event_id: newId('event'), tenant_id: svc.tenantId, ingester_id: ingesterId, destination_id: destinationId, correlation_id: 'cor_ops', attempt: 1, not_before: now, received_at: now, content_type: 'application/json', body: Buffer.from(JSON.stringify({ i })), replay_of: null, hops: 0 };
        return { partition: i % 2, key: destinationId, value: await codec.encode(svc.service.topics.deliveryRequested, 'DeliveryTask', task), headers };
      }),
    );
    await producer.send({ topic: svc.service.topics.deliveryRequested, acks: -1, messages });

    // both processes hold an open breaker of their own for the destination
    const board = new BreakerBoard(redis, svc.config.topicPrefix);
    const opened = await eventually('a breaker open in each process', async () => {
      const mine = (await board.entries()).filter((e) => e.destination_id === destinationId && e.state === 'open');
      return new Set(mine.map((e) => e.instance)).size === 2 ? mine : undefined;
    }, 30_000, 100);
    expect(opened).toHaveLength(2);

    await opsReceiver.waitForRequests(1, 30_000);
    // time for a second event to arrive, were there one
    await new Promise((r) => setTimeout(r, 3_000));
    const told = opsReceiver.requests.map((q) => {
      const headers = { 'webhook-id': String(q.headers['webhook-id']), 'webhook-timestamp': String(q.headers['webhook-timestamp']), 'webhook-signature': String(q.headers['webhook-signature']) };
      return new Webhook(ops.body.signing_secret).verify(q.body.toString('utf8'), headers) as { type: string; data: { destination_id: string } };
    });
    expect(told.map((t) => [t.type, t.data.destination_id])).toEqual([['destination.breaker_opened', destinationId]]);
    // and the other process did ask: it logged the breaker opening too
    expect(other.stdout().split('\n').some((l) => l.includes('"msg":"circuit breaker open"') && l.includes(destinationId))).toBe(true);
  }, 90_000);
});
