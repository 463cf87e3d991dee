import { createHash } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { leafBytes } from '../../core/evidence-leaf';
import { leafHash } from '../../core/merkle';
import { sendEvent } from '../support/flow';
import { eventually, startTestService, type TestService } from '../support/service';
import { uniqueSuffix } from '../support/ids';
import {
  amqpReader, mqttSubscriber, natsStream, RABBIT_AUTH, readKafkaTopic, requireBroker, SHARED_BROKERS, startPrivateKafka, startPrivateMosquitto, startPrivateNats, startTcpProxy,
  type PrivateKafka, type SeenMessage, type TcpProxy,
} from '../support/brokers';

/**
 * Broker destinations through the whole service: a webhook taken at a Hook URL is delivered to a
 * RabbitMQ exchange, a NATS JetStream subject, an MQTT topic and a Kafka topic of a second cluster,
 * and read back by each broker's ordinary client, signed as a webhook is, with an attempt row and
 * an evidence leaf; a broker cut off mid-stream gets every message once it is back; wrong
 * credentials give a clear failed attempt that never holds the secret.
 */

type Json = Record<string, any>;
type BrokerType = 'amqp' | 'nats' | 'mqtt' | 'kafka';

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('broker destinations', () => {
  let svc: TestService;
  let kafka: PrivateKafka;
  const proxies: TcpProxy[] = [];
  const closers: (() => Promise<unknown>)[] = [];
  const base = () => `/v1/tenants/${svc.tenantId}`;

  beforeAll(async () => {
    await Promise.all([requireBroker('rabbitmq'), requireBroker('nats'), requireBroker('mosquitto')]);
    [svc, kafka] = await Promise.all([
      // short waits between attempts, and a breaker that stays closed: the tests count retries
      startTestService({ RETRY_SCHEDULE: '0,300ms,300ms,500ms,1s,1s,1s,2s,2s,2s,3s,3s,3s', RETRY_TIERS: '100ms', BREAKER_MIN_ATTEMPTS: '10000', EVIDENCE_BATCH_AGE_MS: '50', DELIVERY_TIMEOUT_MS: '3000', LOG_LEVEL: 'warn' }),
      startPrivateKafka({ sasl: { users: { hookline: 'kafka-secret-pw' } } }),
    ]);
  }, 120_000);
  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    for (const p of proxies) await p.close().catch(() => undefined);
    await svc?.stop();
    await kafka?.close();
  });

  /** A destination of `type` routed from a new ingester; throws with the API's answer when refused. */
  async function flowTo(type: BrokerType, url: string, config: Json, auth?: Json): Promise<{ destinationId: string; secret: string; hookUrl: string }> {
    const name = `${type} ${uniqueSuffix()}`;
    const d = await svc.api('POST', `${base()}/destinations`, { name, type, url, config, ...(auth ? { auth } : {}) });
    if (d.status !== 201) throw new Error(`destination: ${d.status} ${JSON.stringify(d.body)}`);
    const i = await svc.api('POST', `${base()}/ingesters`, { name: `${name} in`, provider: 'none', config: {}, destination_ids: [d.body.id] });
    if (i.status !== 201) throw new Error(`ingester: ${i.status} ${JSON.stringify(i.body)}`);
    return { destinationId: d.body.id, secret: d.body.signing_secret, hookUrl: `${svc.url}/v1/hooks/${i.body.id}` };
  }

  /** Where one type is read back: its destination's url and config, through a proxy when given, and the reader. */
  async function readerFor(type: BrokerType, via?: TcpProxy): Promise<{ url: string; config: Json; auth?: Json; read(count: number, timeoutMs?: number): Promise<SeenMessage[]> }> {
    const port = (p: number) => via?.port ?? p;
    switch (type) {
      case 'amqp': {
        const reader = await amqpReader({ routingKey: `rk.${uniqueSuffix()}` });
        closers.push(() => reader.close());
        return { url: `amqp://127.0.0.1:${port(SHARED_BROKERS.rabbitmq.port)}`, config: { exchange: reader.exchange, routing_key: reader.routingKey }, auth: RABBIT_AUTH, read: (n, t) => reader.messages.waitFor(n, t) };
      }
      case 'nats': {
        const stream = await natsStream({});
        closers.push(() => stream.delete());
        return { url: `nats://127.0.0.1:${port(SHARED_BROKERS.nats.port)}`, config: { subject: stream.subject }, read: (n, t) => stream.waitFor(n, t) };
      }
      case 'mqtt': {
        const sub = await mqttSubscriber({ url: SHARED_BROKERS.mosquitto.url, topic: `hookline/test/${uniqueSuffix()}` });
        closers.push(() => sub.close());
        return { url: `mqtt://127.0.0.1:${port(SHARED_BROKERS.mosquitto.port)}`, config: { topic: sub.topic }, read: (n, t) => sub.messages.waitFor(n, t) };
      }
      case 'kafka': {
        const topic = `orders.${uniqueSuffix()}`;
        await kafka.createTopic(topic);
        return { url: kafka.url, config: { topic, key: '{{body.customer}}' }, read: (n, t) => readKafkaTopic(kafka.brokers, topic, n, t) };
      }
    }
  }

  const attemptsOf = async (destinationId: string): Promise<Json[]> => (await svc.api('GET', `${base()}/deliveries?destination_id=${destinationId}&limit=200`)).body.deliveries as Json[];

  it.each(['amqp', 'nats', 'mqtt', 'kafka'] as BrokerType[])('%s: delivered, read back by the broker\'s own client, signed, with its attempt row and evidence', async (type) => {
    const target = await readerFor(type);
    const flow = await flowTo(type, target.url, target.config, target.auth);
    const bodies = Array.from({ length: 5 }, (_, i) => ({ customer: `c${i % 2}`, n: i }));
    const events = await Promise.all(bodies.map((b) => sendEvent(flow.hookUrl, b)));
    const seen = await target.read(5, 30_000);
    expect(seen.map((m) => JSON.parse(m.body.toString('utf8')).n).sort()).toEqual([0, 1, 2, 3, 4]);
    const deliveries = await eventually('5 delivered attempts', async () => {
      const rows = (await attemptsOf(flow.destinationId)).filter((d) => events.includes(d.event_id) && d.status === 'delivered');
      return rows.length === 5 ? rows : undefined;
    });
    const wh = new Webhook(flow.secret);
    for (const m of seen) {
      const delivery = deliveries.find((d) => d.id === m.headers['webhook-id'])!;
      expect(delivery).toBeDefined();
      // the receiver's check of a webhook, on the broker message's headers
      expect(() => wh.verify(m.body.toString('utf8'), m.headers)).not.toThrow();
      expect(m.headers['content-type']).toBe('application/json');
      if (type === 'kafka') expect(String(m.extra.key)).toBe(JSON.parse(m.body.toString('utf8')).customer);
      const detail = (await svc.api('GET', `${base()}/deliveries/${delivery.id}`)).body;
      const attempt = detail.attempts.at(-1);
      expect(attempt).toMatchObject({ status: 'delivered', response_code: null, body_sha256: sha256(m.body) });
      const evidence = await eventually(`evidence of ${delivery.id}`, async () => {
        const r = await svc.api('GET', `${base()}/evidence/${delivery.id}`);
        return r.body.status === 'confirmed' ? r.body : undefined;
      });
      // the leaf sealed is the attempt as shown, the SHA-256 of the bytes the broker holds included
      const leaf = leafBytes({ tenant_id: svc.tenantId, delivery_id: delivery.id, event_id: detail.event_id, destination_id: flow.destinationId, attempt_number: attempt.attempt_number, status: 'delivered', response_code: null, attempted_at: attempt.attempted_at, body_sha256: sha256(m.body) });
      expect(evidence.leaf_hash).toBe(leafHash(leaf).toString('hex'));
    }
  }, 90_000);

  it.each(['amqp', 'nats', 'mqtt', 'kafka'] as BrokerType[])('%s: the broker stopped mid-stream: attempts fail and are retried, and every message arrives once it is back', async (type) => {
    // the service reaches the shared brokers through a proxy that plays the outage; the reader
    // reads them directly. The second Kafka cluster's broker is stopped for real.
    const proxy = type === 'kafka' ? undefined : await startTcpProxy({ host: '127.0.0.1', port: SHARED_BROKERS[type === 'amqp' ? 'rabbitmq' : type === 'nats' ? 'nats' : 'mosquitto'].port });
    if (proxy) proxies.push(proxy);
    const target = await readerFor(type, proxy);
    const flow = await flowTo(type, target.url, target.config, target.auth);
    const first = await Promise.all(Array.from({ length: 5 }, (_, n) => sendEvent(flow.hookUrl, { customer: 'a', n })));
    await target.read(5, 30_000);
    if (proxy) await proxy.cut();
    else await kafka.stop();
    const second = await Promise.all(Array.from({ length: 15 }, (_, i) => sendEvent(flow.hookUrl, { customer: 'b', n: 5 + i })));
    // while it is down, attempts fail with a reason and are scheduled again
    const failed = await eventually('a failed attempt while the broker is down', async () => (await attemptsOf(flow.destinationId)).find((d) => d.status === 'retrying'), 30_000);
    expect(failed.error_message).toEqual(expect.any(String));
    if (proxy) await proxy.restore();
    else {
      await kafka.start();
      await kafka.waitForLeader(String(target.config.topic));
    }
    // twins count among the messages read: read on until all 20 events are there (or the time is up)
    const numberOf = (m: SeenMessage) => JSON.parse(m.body.toString('utf8')).n as number;
    let seen = await target.read(20, 60_000);
    for (const deadline = Date.now() + 90_000; new Set(seen.map(numberOf)).size < 20 && Date.now() < deadline; ) {
      seen = await target.read(seen.length + 1, deadline - Date.now()).catch(() => seen);
    }
    const numbers = seen.map(numberOf);
    const unique = new Set(numbers);
    process.stderr.write(`${type} outage: 20 accepted, ${unique.size} delivered, ${numbers.length - unique.size} twins\n`);
    // nothing lost: every accepted event's message arrived
    expect([...unique].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    const events = [...first, ...second];
    await eventually('every delivery recorded as delivered', async () => {
      const rows = await attemptsOf(flow.destinationId);
      return events.every((e) => rows.some((d) => d.event_id === e && d.status === 'delivered')) ? true : undefined;
    }, 60_000);
  }, 240_000);

  it('closes a destination\'s connection when it is paused or deleted, and opens it again on resume', async () => {
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: SHARED_BROKERS.rabbitmq.port });
    proxies.push(proxy);
    const target = await readerFor('amqp', proxy);
    const flow = await flowTo('amqp', target.url, target.config, target.auth);
    const path = `${base()}/destinations/${flow.destinationId}`;
    await sendEvent(flow.hookUrl, { n: 1 });
    await target.read(1, 30_000);
    expect(proxy.openConnections()).toBe(1);
    // paused: the service's change feed releases the connection at once, not after the idle time
    expect((await svc.api('PATCH', path, { enabled: false })).status).toBe(200);
    await eventually('the paused destination\'s connection closed', async () => (proxy.openConnections() === 0 ? true : undefined), 10_000);
    // a webhook meanwhile is held, not sent, and goes out on resume over a new connection
    await sendEvent(flow.hookUrl, { n: 2 });
    expect((await svc.api('PATCH', path, { enabled: true })).status).toBe(200);
    const seen = await target.read(2, 30_000);
    expect(seen.map((m) => JSON.parse(m.body.toString('utf8')).n)).toEqual([1, 2]);
    expect([proxy.openConnections(), proxy.accepted()]).toEqual([1, 2]);
    expect((await svc.api('DELETE', path)).status).toBe(204);
    await eventually('the deleted destination\'s connection closed', async () => (proxy.openConnections() === 0 ? true : undefined), 10_000);
  }, 90_000);

  it.each(['amqp', 'nats', 'mqtt', 'kafka'] as BrokerType[])('%s: wrong credentials give a failed attempt that says so, without the secret', async (type) => {
    const secret = `wrong-${uniqueSuffix()}`;
    let url: string;
    let config: Json;
    if (type === 'amqp') {
      url = SHARED_BROKERS.rabbitmq.url;
      config = { exchange: '', routing_key: 'nowhere' };
    } else if (type === 'nats') {
      const nats = await startPrivateNats({ user: 'hookline', pass: 'the-right-one' });
      closers.push(() => nats.close());
      url = nats.url;
      config = { subject: 'orders' };
    } else if (type === 'mqtt') {
      const mosquitto = await startPrivateMosquitto({ users: { hookline: 'the-right-one' } });
      closers.push(() => mosquitto.close());
      url = mosquitto.url;
      config = { topic: 'orders' };
    } else {
      const topic = `orders.${uniqueSuffix()}`;
      await kafka.createTopic(topic);
      url = kafka.saslUrl;
      config = { topic, sasl_mechanism: 'plain' };
    }
    const flow = await flowTo(type, url, config, { type: 'basic', username: type === 'amqp' ? 'guest' : 'hookline', password: secret });
    const eventId = await sendEvent(flow.hookUrl, { n: 1 });
    const attempt = await eventually('a failed attempt', async () => (await attemptsOf(flow.destinationId)).find((d) => d.event_id === eventId && d.status !== 'delivered'), 30_000);
    expect(attempt.status).toBe('retrying');
    const detail = (await svc.api('GET', `${base()}/deliveries/${attempt.id}`)).body;
    expect(detail.attempts[0].error_message).toMatch(/authentication failed|not authorized|access.refused/i);
    expect(JSON.stringify(detail)).not.toContain(secret);
    // nor in the tenant's log lines
    const logs = await eventually('the attempt\'s log line', async () => {
      const page = (await svc.api('GET', `${base()}/logs?limit=200`)).body;
      return JSON.stringify(page).includes(attempt.id) ? page : undefined;
    });
    expect(JSON.stringify(logs)).not.toContain(secret);
    await svc.api('DELETE', `${base()}/destinations/${flow.destinationId}`);
  }, 90_000);
});
