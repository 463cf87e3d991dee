import { createPublisher, type Publisher } from '../../../pipeline/deliver/publishers';
import { eventually, mqttSubscriber, requireBroker, SHARED_BROKERS, startPrivateMosquitto, type MqttSubscriber, type PrivateBroker } from '../../support/brokers';
import { uniqueSuffix } from '../../support/ids';
import { brokerDestination, expectArrived, expectNoneLost, failureOf, LOOPBACK, NOTHING_PRIVATE, outbound, publishThroughOutage } from './fixtures';

/**
 * The MQTT publisher: deliveries on the machine's Mosquitto, each test on a topic of its own;
 * outages, credentials, ACLs and connection counts on private Mosquittos.
 */
describe('MQTT publisher (Mosquitto)', () => {
  const publishers: Publisher[] = [];
  const subscribers: MqttSubscriber[] = [];
  const privates: PrivateBroker[] = [];
  const publisher = (options: Partial<Parameters<typeof createPublisher>[0]> = {}) => {
    const p = createPublisher({ allow: LOOPBACK, ...options });
    publishers.push(p);
    return p;
  };
  const subscriber = async (options: Parameters<typeof mqttSubscriber>[0] = {}) => {
    const s = await mqttSubscriber(options);
    subscribers.push(s);
    return s;
  };
  const privateMosquitto = async (options: Parameters<typeof startPrivateMosquitto>[0] = {}) => {
    const b = await startPrivateMosquitto(options);
    privates.push(b);
    return b;
  };

  beforeAll(async () => {
    await requireBroker('mosquitto');
  });

  // each test's connections end with it: a later test counts the broker's connections
  afterEach(async () => {
    await Promise.all(publishers.splice(0).map((p) => p.close()));
  });

  afterAll(async () => {
    await Promise.all(subscribers.map((s) => s.close()));
    await Promise.all(privates.map((b) => b.close()));
  });

  it('delivers at QoS 1 under MQTT 5 with the headers as user properties and the content type, 200 at once', async () => {
    const sub = await subscriber();
    const pub = publisher();
    const destination = brokerDestination('mqtt', SHARED_BROKERS.mosquitto.url, { topic: sub.topic });
    const run = uniqueSuffix();
    const sent = Array.from({ length: 200 }, (_, i) => outbound(run, i));
    await Promise.all(sent.map((m) => pub.publish(destination, m, 10_000)));
    const seen = await sub.messages.waitFor(200);
    expectArrived(seen, sent);
    expect(seen[0]!.extra).toMatchObject({ contentType: 'application/json', qos: 1 });
  });

  it('delivers under MQTT 3.1.1, which carries no headers', async () => {
    const sub = await subscriber({ protocolVersion: 4 });
    const destination = brokerDestination('mqtt', SHARED_BROKERS.mosquitto.url, { topic: sub.topic, protocol_version: 4 });
    const m = outbound(uniqueSuffix(), 0);
    await publisher().publish(destination, m, 5_000);
    const [seen] = await sub.messages.waitFor(1);
    expect(seen!.body.equals(m.body)).toBe(true);
    expect(seen!.headers).toEqual({});
  });

  it('fails with the reason code when the broker refuses the message (an ACL)', async () => {
    const broker = await privateMosquitto({ users: { writer: 'writer-pass' }, acl: 'user writer\ntopic write allowed/#\n' });
    const auth = { type: 'basic' as const, username: 'writer', password: 'writer-pass' };
    const pub = publisher();
    await pub.publish(brokerDestination('mqtt', broker.url, { topic: 'allowed/x' }, auth), outbound('acl', 0), 5_000);
    const f = await failureOf(pub.publish(brokerDestination('mqtt', broker.url, { topic: 'denied/x' }, auth), outbound('acl', 1), 5_000));
    expect(f.message).toBe('the broker refused the message on topic "denied/x": Not authorized (reason code 0x87)');
  });

  it('fails while the broker is down and delivers everything again once it is back, on the same publisher', async () => {
    const broker = await privateMosquitto();
    const sub = await subscriber({ url: broker.url });
    const pub = publisher({ connectTimeoutMs: 2_000 });
    const destination = brokerDestination('mqtt', broker.url, { topic: sub.topic });
    const run = await publishThroughOutage({
      publisher: pub,
      destination,
      // Mosquitto without persistence forgets what it had not forwarded yet when it stops:
      // the broker goes down between publishes, once the subscriber has everything
      midStream: false,
      down: async () => {
        await sub.messages.waitFor(5);
        await broker.stop();
      },
      up: async () => {
        await broker.start();
        await eventually('the subscriber subscribed again', () => sub.subscriptions() >= 2, 10_000);
      },
    });
    expect(run.failures.every((f) => f.message === `connection refused by 127.0.0.1:${broker.port}` || f.message.startsWith(`connection to 127.0.0.1:${broker.port} closed`))).toBe(true);
    expect(run.failures.some((f) => f.message === `connection refused by 127.0.0.1:${broker.port}`)).toBe(true);
    expectNoneLost(await sub.messages.waitFor(run.acknowledged.length), run);
  });

  it('says that authentication failed, without the password, under MQTT 5 and 3.1.1', async () => {
    const broker = await privateMosquitto({ users: { alice: 'alice-pass' } });
    const pub = publisher();
    await pub.publish(brokerDestination('mqtt', broker.url, { topic: 't/a' }, { type: 'basic', username: 'alice', password: 'alice-pass' }), outbound('a', 0), 5_000);
    for (const protocol_version of [5, 4] as const) {
      const password = `Wr0ng-${uniqueSuffix()}`;
      const destination = brokerDestination('mqtt', broker.url, { topic: 't/a', protocol_version }, { type: 'basic', username: 'alice', password });
      const f = await failureOf(pub.publish(destination, outbound('a', 1), 5_000));
      expect(f.message).toMatch(/^authentication failed: /);
      expect(f.message).not.toContain(password);
    }
  });

  it("refuses an address the policy forbids, and the service's own endpoint, dialling nothing", async () => {
    const broker = await privateMosquitto();
    const base = broker.connections();
    const destination = brokerDestination('mqtt', broker.url, { topic: 't/p' });
    const byPolicy = await failureOf(publisher({ allow: NOTHING_PRIVATE }).publish(destination, outbound('p', 0), 5_000));
    expect(byPolicy.refused).toBe(true);

    const named = brokerDestination('mqtt', `mqtts://mqtt.tenant.example:${broker.port}`, { topic: 't/p' });
    const byName = await failureOf(publisher({ allow: NOTHING_PRIVATE, resolve: async () => [{ address: '127.0.0.1', family: 4 }] }).publish(named, outbound('p', 1), 5_000));
    expect(byName.refused).toBe(true);
    expect(byName.message).toMatch(/^refused to connect to mqtt\.tenant\.example: /);
    expect(byName.message).not.toContain('127.0.0.1');

    const own = await failureOf(publisher({ ownEndpoint: (_address, port) => port === broker.port }).publish(destination, outbound('p', 2), 5_000));
    expect(own.refused).toBe(true);
    await new Promise((r) => setTimeout(r, 100));
    expect(broker.connections()).toBe(base);
  });

  it('closes an idle connection, a released one, and one whose destination changed', async () => {
    const broker = await privateMosquitto();
    const sub = await subscriber({ url: broker.url });
    const pub = publisher({ idleMs: 300 });
    const destination = brokerDestination('mqtt', broker.url, { topic: sub.topic });
    const run = uniqueSuffix();
    const base = broker.connections();

    await pub.publish(destination, outbound(run, 0), 5_000);
    expect(broker.connections()).toBe(base + 1);
    await eventually('the idle connection closed', () => broker.connections() === base, 5_000);

    await pub.publish(destination, outbound(run, 1), 5_000);
    await pub.release(destination.id);
    await eventually('the released connection closed', () => broker.connections() === base, 2_000);

    await pub.publish(destination, outbound(run, 2), 5_000);
    const changed = { ...destination, config: { topic: sub.topic, protocol_version: 4 } };
    await pub.publish(changed, outbound(run, 3), 5_000);
    await eventually('the old connection closed, the new one open', () => broker.connections() === base + 1, 2_000);
    await sub.messages.waitFor(4);
  });
});
