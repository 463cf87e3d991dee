import { createPublisher, PublishFailed, type Publisher } from '../../../pipeline/deliver/publishers';
import { amqpReader, eventually, RABBIT_AUTH, requireBroker, startSilentServer, startTcpProxy, type AmqpReader, type TcpProxy } from '../../support/brokers';
import { uniqueSuffix } from '../../support/ids';
import { brokerDestination, expectArrived, expectNoneLost, failureOf, LOOPBACK, NOTHING_PRIVATE, outbound, publishThroughOutage } from './fixtures';

/**
 * The AMQP publisher against the machine's RabbitMQ, through a TCP proxy of the test's own where
 * a test counts or cuts connections (the shared broker itself is never stopped).
 */
describe('AMQP publisher (RabbitMQ)', () => {
  let proxy: TcpProxy;
  const publishers: Publisher[] = [];
  const readers: AmqpReader[] = [];
  const publisher = (options: Partial<Parameters<typeof createPublisher>[0]> = {}) => {
    const p = createPublisher({ allow: LOOPBACK, ...options });
    publishers.push(p);
    return p;
  };
  const reader = async (routingKey: string) => {
    const r = await amqpReader({ routingKey });
    readers.push(r);
    return r;
  };
  const viaProxy = (r: AmqpReader, routingKey = r.routingKey) => brokerDestination('amqp', `amqp://127.0.0.1:${proxy.port}/`, { exchange: r.exchange, routing_key: routingKey }, RABBIT_AUTH);

  beforeAll(async () => {
    await requireBroker('rabbitmq');
    proxy = await startTcpProxy({ host: '127.0.0.1', port: 5672 });
  });

  // each test's connections end with it: a later test counts the broker's connections
  afterEach(async () => {
    await Promise.all(publishers.splice(0).map((p) => p.close()));
  });

  afterAll(async () => {
    await Promise.all(readers.map((r) => r.close()));
    await proxy?.close();
  });

  it('delivers persistent messages with their headers and properties, 200 at once over one connection', async () => {
    const r = await reader('orders');
    const pub = publisher();
    const destination = viaProxy(r);
    const accepted = proxy.accepted();
    const run = uniqueSuffix();
    const sent = Array.from({ length: 200 }, (_, i) => outbound(run, i));
    const results = await Promise.all(sent.map((m) => pub.publish(destination, m, 10_000)));
    expect(results.every((x) => x.durationMs >= 0)).toBe(true);
    expect(proxy.accepted() - accepted).toBe(1);
    const seen = await r.messages.waitFor(200);
    expectArrived(seen, sent);
    const first = seen.find((m) => m.headers['webhook-id'] === sent[0]!.headers['webhook-id'])!;
    expect(first.extra).toMatchObject({ contentType: 'application/json', messageId: sent[0]!.headers['webhook-id'], deliveryMode: 2, timestamp: 1_700_000_000, routingKey: 'orders' });
  });

  it('fails a message no queue takes, and one to an exchange that does not exist, then delivers again on the same connection', async () => {
    const r = await reader('bound');
    const pub = publisher();
    const run = uniqueSuffix();
    const unroutable = await failureOf(pub.publish(viaProxy(r, 'nobody-listens'), outbound(run, 0), 5_000));
    expect(unroutable.message).toBe(`no queue took the message (exchange "${r.exchange}", routing key "nobody-listens")`);
    expect(unroutable.refused).toBe(false);

    const missing = brokerDestination('amqp', `amqp://127.0.0.1:${proxy.port}`, { exchange: `no-such-${run}`, routing_key: 'x' }, RABBIT_AUTH);
    const notFound = await Promise.all([0, 1, 2].map((i) => failureOf(pub.publish(missing, outbound(run, 10 + i), 5_000))));
    for (const f of notFound) expect(f.message).toMatch(new RegExp(`^exchange "no-such-${run}" does not exist: NOT_FOUND`));
    // the broker closed that destination's channel; a new one is made for the next publish
    const again = brokerDestination('amqp', missing.url, { exchange: r.exchange, routing_key: 'bound' }, RABBIT_AUTH, missing.id);
    const ok = outbound(run, 20);
    await pub.publish(again, ok, 5_000);
    expectArrived(await r.messages.waitFor(1), [ok]);
  });

  it('fails while the broker is cut off and delivers everything again once it is back, on the same publisher', async () => {
    const r = await reader('outage');
    const pub = publisher({ connectTimeoutMs: 2_000 });
    const destination = viaProxy(r);
    const run = await publishThroughOutage({ publisher: pub, destination, midStream: true, down: () => proxy.cut(), up: () => proxy.restore() });
    expect(run.failures.length).toBeGreaterThanOrEqual(3);
    for (const f of run.failures) expect(f.message).toMatch(/connection (refused by 127\.0\.0\.1|to 127\.0\.0\.1:\d+ (closed|was reset))|no acknowledgement from the broker/);
    expect(run.failures.some((f) => f.message === `connection refused by 127.0.0.1:${proxy.port}`)).toBe(true);
    const seen = await r.messages.waitFor(run.acknowledged.length);
    expectNoneLost(seen, run);
  });

  it('says that authentication failed, without the password', async () => {
    const r = await reader('auth');
    const password = `Wr0ng-${uniqueSuffix()}`;
    const destination = brokerDestination('amqp', 'amqp://127.0.0.1:5672', { exchange: r.exchange, routing_key: 'auth' }, { type: 'basic', username: 'guest', password });
    const f = await failureOf(publisher().publish(destination, outbound(uniqueSuffix(), 0), 5_000));
    expect(f.message).toMatch(/^authentication failed: ACCESS_REFUSED/);
    expect(f.message).not.toContain(password);
    expect(String((f.cause as Error | undefined)?.message ?? '')).not.toContain(password);
    expect(f.refused).toBe(false);
  });

  it('says which virtual host the broker refused', async () => {
    const r = await reader('vhost');
    const destination = brokerDestination('amqp', 'amqp://127.0.0.1:5672/no-such-vhost', { exchange: r.exchange, routing_key: 'vhost' }, RABBIT_AUTH);
    const f = await failureOf(publisher().publish(destination, outbound(uniqueSuffix(), 0), 5_000));
    expect(f.message).toMatch(/virtual host "no-such-vhost"/);
  });

  it('refuses an address the policy forbids, and the service\'s own endpoint, dialling nothing', async () => {
    const r = await reader('policy');
    const accepted = proxy.accepted();
    const literal = await failureOf(createPublisher({ allow: NOTHING_PRIVATE }).publish(viaProxy(r), outbound('p', 0), 5_000));
    expect(literal.refused).toBe(true);
    expect(literal.message).toMatch(/^refused to connect to 127\.0\.0\.1/);

    // a name that resolves to loopback: the message names the host, never the address
    const byName = createPublisher({ allow: NOTHING_PRIVATE, resolve: async () => [{ address: '127.0.0.1', family: 4 }] });
    const named = brokerDestination('amqp', `amqp://rabbit.tenant.example:${proxy.port}`, { exchange: r.exchange, routing_key: 'policy' }, RABBIT_AUTH);
    const f = await failureOf(byName.publish(named, outbound('p', 1), 5_000));
    expect(f.refused).toBe(true);
    expect(f.message).toContain('rabbit.tenant.example');
    expect(f.message).not.toContain('127.0.0.1');
    await byName.close();

    const own = createPublisher({ allow: LOOPBACK, ownEndpoint: (address, port) => address === '127.0.0.1' && port === proxy.port });
    const looped = await failureOf(own.publish(viaProxy(r), outbound('p', 2), 5_000));
    expect(looped.refused).toBe(true);
    expect(looped.message).toBe("refused to connect to 127.0.0.1: it reaches this service's own endpoint");
    await own.close();
    expect(proxy.accepted()).toBe(accepted);
  });

  it('closes an idle connection, a released one, and one whose destination changed', async () => {
    const r = await reader('idle');
    const pub = publisher({ idleMs: 300 });
    const destination = viaProxy(r);
    const run = uniqueSuffix();
    const open = proxy.openConnections();

    await pub.publish(destination, outbound(run, 0), 5_000);
    expect(proxy.openConnections()).toBe(open + 1);
    await eventually('the idle connection closed', () => proxy.openConnections() === open, 5_000);

    await pub.publish(destination, outbound(run, 1), 5_000);
    expect(proxy.openConnections()).toBe(open + 1);
    await pub.release(destination.id);
    await eventually('the released connection closed', () => proxy.openConnections() === open, 2_000);

    // the same destination with another routing key: a new connection, the old one closed
    const accepted = proxy.accepted();
    await pub.publish(destination, outbound(run, 2), 5_000);
    const changed = { ...destination, config: { exchange: r.exchange, routing_key: 'idle-too' } };
    await failureOf(pub.publish(changed, outbound(run, 3), 5_000));
    expect(proxy.accepted() - accepted).toBe(2);
    await eventually('the old connection closed', () => proxy.openConnections() === open + 1, 2_000);
    await r.messages.waitFor(3);
  });

  it('times out on a broker that never answers without holding up another destination', async () => {
    const silent = await startSilentServer();
    try {
      const r = await reader('healthy');
      const pub = publisher({ connectTimeoutMs: 5_000 });
      const hung = brokerDestination('amqp', `amqp://127.0.0.1:${silent.port}`, { exchange: 'x', routing_key: 'y' }, RABBIT_AUTH);
      const started = Date.now();
      const stuck = failureOf(pub.publish(hung, outbound('t', 0), 800));
      const healthy = await pub.publish(viaProxy(r), outbound('t', 1), 5_000);
      expect(healthy.durationMs).toBeLessThan(800);
      const f = await stuck;
      expect(f.message).toMatch(/^no acknowledgement from the broker within 800 ms/);
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(silent.accepted()).toBe(1);
    } finally {
      await silent.close();
    }
  });

  it('rejects publishes after close', async () => {
    const pub = createPublisher({ allow: LOOPBACK });
    await pub.close();
    const f = await failureOf(pub.publish(brokerDestination('amqp', 'amqp://127.0.0.1', { exchange: '', routing_key: 'q' }), outbound('c', 0), 1_000));
    expect(f).toBeInstanceOf(PublishFailed);
    expect(f.message).toMatch(/closed/);
  });
});
