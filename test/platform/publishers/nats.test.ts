import { createPublisher, type Publisher } from '../../../pipeline/deliver/publishers';
import { eventually, natsStream, requireBroker, SHARED_BROKERS, startPrivateNats, type NatsStream, type PrivateBroker } from '../../support/brokers';
import { uniqueSuffix } from '../../support/ids';
import { brokerDestination, expectArrived, expectNoneLost, failureOf, LOOPBACK, NOTHING_PRIVATE, outbound, publishThroughOutage } from './fixtures';

/**
 * The NATS JetStream publisher: deliveries on the machine's NATS, each test with a stream and
 * subject of its own; outages, credentials and connection counts on private servers.
 */
describe('NATS JetStream publisher', () => {
  const publishers: Publisher[] = [];
  const streams: NatsStream[] = [];
  const privates: PrivateBroker[] = [];
  const publisher = (options: Partial<Parameters<typeof createPublisher>[0]> = {}) => {
    const p = createPublisher({ allow: LOOPBACK, ...options });
    publishers.push(p);
    return p;
  };
  const stream = async (options: Parameters<typeof natsStream>[0] = {}) => {
    const s = await natsStream(options);
    streams.push(s);
    return s;
  };
  const privateNats = async (options: Parameters<typeof startPrivateNats>[0] = {}) => {
    const b = await startPrivateNats(options);
    privates.push(b);
    return b;
  };

  beforeAll(async () => {
    await requireBroker('nats');
  });

  // each test's connections end with it: a later test counts the broker's connections
  afterEach(async () => {
    await Promise.all(publishers.splice(0).map((p) => p.close()));
  });

  afterAll(async () => {
    await Promise.all(streams.map((s) => s.delete()));
    await Promise.all(privates.map((b) => b.close()));
  });

  it('delivers to the stream that captures the subject, with headers and the delivery id as Nats-Msg-Id, 200 at once', async () => {
    const s = await stream();
    const pub = publisher();
    const destination = brokerDestination('nats', SHARED_BROKERS.nats.url, { subject: s.subject });
    const run = uniqueSuffix();
    const sent = Array.from({ length: 200 }, (_, i) => outbound(run, i));
    await Promise.all(sent.map((m) => pub.publish(destination, m, 10_000)));
    const seen = await s.waitFor(200);
    expect(seen).toHaveLength(200);
    expectArrived(seen, sent);
    for (const m of seen) expect(m.headers['Nats-Msg-Id']).toBe(m.headers['webhook-id']);
    expect(seen[0]!.headers['content-type']).toBe('application/json');
  });

  it('counts a twin the stream already holds (same delivery id) as delivered, and keeps one copy', async () => {
    const s = await stream();
    const pub = publisher();
    const destination = brokerDestination('nats', SHARED_BROKERS.nats.url, { subject: s.subject });
    const m = outbound(uniqueSuffix(), 0);
    await pub.publish(destination, m, 5_000);
    await pub.publish(destination, m, 5_000);
    expect(await s.read()).toHaveLength(1);
  });

  it('fails clearly when no stream captures the subject', async () => {
    const subject = `test.${uniqueSuffix()}.nobody`;
    const f = await failureOf(publisher().publish(brokerDestination('nats', SHARED_BROKERS.nats.url, { subject }), outbound('n', 0), 5_000));
    expect(f.message).toBe(`no JetStream stream captures subject "${subject}" (the server answered: no responders)`);
    expect(f.refused).toBe(false);
  });

  it('fails while the server is down and delivers everything again once it is back, on the same publisher', async () => {
    const server = await privateNats();
    const s = await stream({ url: server.url });
    const pub = publisher({ connectTimeoutMs: 2_000 });
    const destination = brokerDestination('nats', server.url, { subject: s.subject });
    const run = await publishThroughOutage({
      publisher: pub,
      destination,
      midStream: true,
      down: () => server.stop(),
      up: async () => {
        await server.start();
        await s.read();
      },
    });
    expect(run.failures.some((f) => f.message === `connection refused by 127.0.0.1:${server.port}`)).toBe(true);
    // a server shutting down stops JetStream before it closes its clients: a publish caught between
    // the two is answered "no responders", which the publisher reports as no stream (and retries)
    for (const f of run.failures) {
      expect(f.message).toMatch(/^(connection refused by|connection to 127\.0\.0\.1:\d+ closed|no acknowledgement from the broker|no JetStream stream captures subject)/);
      expect(f.refused).toBe(false);
    }
    expectNoneLost(await s.waitFor(new Set(run.acknowledged.map((m) => m.headers['webhook-id'])).size), run);
  });

  it('says that authentication failed, for a wrong password and a wrong token, without them', async () => {
    const server = await privateNats({ user: 'hookline', pass: 'right-pass' });
    const s = await stream({ url: server.url, user: 'hookline', pass: 'right-pass' });
    const pub = publisher();
    const ok = brokerDestination('nats', server.url, { subject: s.subject }, { type: 'basic', username: 'hookline', password: 'right-pass' });
    await pub.publish(ok, outbound('a', 0), 5_000);

    const password = `Wr0ng-${uniqueSuffix()}`;
    const wrong = await failureOf(pub.publish(brokerDestination('nats', server.url, { subject: s.subject }, { type: 'basic', username: 'hookline', password }), outbound('a', 1), 5_000));
    expect(wrong.message).toMatch(/^authentication failed: /);
    expect(wrong.message).not.toContain(password);

    const token = `T0ken-${uniqueSuffix()}`;
    const byToken = await failureOf(pub.publish(brokerDestination('nats', server.url, { subject: s.subject }, { type: 'bearer', token }), outbound('a', 2), 5_000));
    expect(byToken.message).toMatch(/^authentication failed: /);
    expect(byToken.message).not.toContain(token);
  });

  it("refuses an address the policy forbids, and the service's own endpoint, dialling nothing", async () => {
    const server = await privateNats();
    const s = await stream({ url: server.url });
    const base = server.connections();
    const destination = brokerDestination('nats', server.url, { subject: s.subject });

    const byPolicy = await failureOf(publisher({ allow: NOTHING_PRIVATE }).publish(destination, outbound('p', 0), 5_000));
    expect(byPolicy.refused).toBe(true);

    const named = brokerDestination('nats', `nats://nats.tenant.example:${server.port}`, { subject: s.subject });
    const byName = await failureOf(publisher({ allow: NOTHING_PRIVATE, resolve: async () => [{ address: '127.0.0.1', family: 4 }] }).publish(named, outbound('p', 1), 5_000));
    expect(byName.refused).toBe(true);
    expect(byName.message).toMatch(/^refused to connect to nats\.tenant\.example: /);
    expect(byName.message).not.toContain('127.0.0.1');

    const own = await failureOf(publisher({ ownEndpoint: (_address, port) => port === server.port }).publish(destination, outbound('p', 2), 5_000));
    expect(own.refused).toBe(true);
    expect(own.message).toMatch(/own endpoint/);
    await new Promise((r) => setTimeout(r, 100));
    expect(server.connections()).toBe(base);
  });

  it('closes an idle connection, a released one, and one whose destination changed', async () => {
    const server = await privateNats();
    const s = await stream({ url: server.url });
    const pub = publisher({ idleMs: 300 });
    const destination = brokerDestination('nats', server.url, { subject: s.subject });
    const run = uniqueSuffix();
    const base = server.connections();

    await pub.publish(destination, outbound(run, 0), 5_000);
    expect(server.connections()).toBe(base + 1);
    await eventually('the idle connection closed', () => server.connections() === base, 5_000);

    await pub.publish(destination, outbound(run, 1), 5_000);
    await pub.release(destination.id);
    await eventually('the released connection closed', () => server.connections() === base, 2_000);

    await pub.publish(destination, outbound(run, 2), 5_000);
    const changed = { ...destination, config: { subject: s.subject, tls: false } };
    await pub.publish(changed, outbound(run, 3), 5_000);
    await eventually('the old connection closed, the new one open', () => server.connections() === base + 1, 2_000);
    expect(await s.read()).toHaveLength(4);
  });
});
