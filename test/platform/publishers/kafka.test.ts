import { createPublisher, type Publisher } from '../../../pipeline/deliver/publishers';
import { eventually, readKafkaTopic, serverConnections, startPrivateKafka, startTcpProxy, type PrivateKafka, type TcpProxy } from '../../support/brokers';
import { uniqueSuffix } from '../../support/ids';
import { brokerDestination, expectArrived, expectNoneLost, failureOf, LOOPBACK, NOTHING_PRIVATE, outbound, publishThroughOutage } from './fixtures';

const SASL_USER = 'tenant';
const SASL_PASSWORD = 'tenant-secret';

/**
 * The Kafka publisher against a cluster of the test's own (one KRaft node with a plaintext and a
 * SASL/PLAIN listener), never the service's: the tests stop its broker and count its connections.
 */
describe('Kafka publisher', () => {
  let kafka: PrivateKafka;
  let brokerPort: number;
  const publishers: Publisher[] = [];
  const proxies: TcpProxy[] = [];
  const publisher = (options: Partial<Parameters<typeof createPublisher>[0]> = {}) => {
    const p = createPublisher({ allow: LOOPBACK, ...options });
    publishers.push(p);
    return p;
  };
  const topic = async () => {
    const name = `test-topic-${uniqueSuffix()}`;
    await kafka.createTopic(name);
    return name;
  };

  beforeAll(async () => {
    kafka = await startPrivateKafka({ sasl: { users: { [SASL_USER]: SASL_PASSWORD } } });
    brokerPort = Number(kafka.brokers[0]!.split(':')[1]);
  }, 120_000);

  // each test's connections end with it: a later test counts the broker's connections
  afterEach(async () => {
    await Promise.all(publishers.splice(0).map((p) => p.close()));
  });

  afterAll(async () => {
    await Promise.all(proxies.map((p) => p.close()));
    await kafka?.close();
  }, 60_000);

  it('writes records with their key, body bytes and headers, acks=all, 200 at once', async () => {
    const name = await topic();
    const destination = brokerDestination('kafka', kafka.url, { topic: name });
    const pub = publisher();
    const run = uniqueSuffix();
    const sent = Array.from({ length: 200 }, (_, i) => outbound(run, i));
    await Promise.all(sent.map((m) => pub.publish(destination, m, 10_000)));
    const seen = await readKafkaTopic(kafka.brokers, name, 200);
    expect(seen).toHaveLength(200);
    expectArrived(seen, sent);
    const first = seen.find((m) => m.headers['webhook-id'] === sent[0]!.headers['webhook-id'])!;
    expect(first.extra.key).toBe(sent[0]!.key);
    expect(first.headers['content-type']).toBe('application/json');
  });

  it('fails clearly when the topic does not exist (it is not created)', async () => {
    const name = `test-missing-${uniqueSuffix()}`;
    const f = await failureOf(publisher().publish(brokerDestination('kafka', kafka.url, { topic: name }), outbound('m', 0), 10_000));
    expect(f.message).toBe(`topic "${name}" does not exist`);
  });

  it('fails while the broker is down and writes everything again once it is back, on the same publisher', async () => {
    const name = await topic();
    const pub = publisher({ connectTimeoutMs: 2_000 });
    const destination = brokerDestination('kafka', kafka.url, { topic: name });
    const run = await publishThroughOutage({
      publisher: pub,
      destination,
      midStream: true,
      timeoutMs: 5_000,
      down: () => kafka.stop(),
      up: async () => {
        await kafka.start();
        await kafka.waitForLeader(name);
      },
    });
    expect(run.failures.some((f) => f.message === `connection refused by 127.0.0.1:${brokerPort}`)).toBe(true);
    expectNoneLost(await readKafkaTopic(kafka.brokers, name, run.acknowledged.length, 30_000), run);
  }, 90_000);

  it('authenticates with SASL/PLAIN, and says that authentication failed without the password', async () => {
    const name = await topic();
    const pub = publisher();
    const ok = outbound(uniqueSuffix(), 0);
    await pub.publish(brokerDestination('kafka', kafka.saslUrl, { topic: name, sasl_mechanism: 'plain' }, { type: 'basic', username: SASL_USER, password: SASL_PASSWORD }), ok, 10_000);
    expectArrived(await readKafkaTopic(kafka.brokers, name, 1), [ok]);

    const password = `Wr0ng-${uniqueSuffix()}`;
    const destination = brokerDestination('kafka', kafka.saslUrl, { topic: name, sasl_mechanism: 'plain' }, { type: 'basic', username: SASL_USER, password });
    const f = await failureOf(pub.publish(destination, outbound('s', 1), 10_000));
    expect(f.message).toMatch(/^authentication failed: /);
    expect(f.message).not.toContain(password);
    expect(f.refused).toBe(false);
  });

  it("refuses an address the policy forbids, the service's own endpoint, and a broker the cluster advertises there", async () => {
    const name = await topic();
    await eventually('earlier clients gone', () => serverConnections(brokerPort) === 0, 10_000);
    const destination = brokerDestination('kafka', kafka.url, { topic: name });
    const byPolicy = await failureOf(publisher({ allow: NOTHING_PRIVATE }).publish(destination, outbound('p', 0), 5_000));
    expect(byPolicy.refused).toBe(true);

    const named = brokerDestination('kafka', `kafka://kafka-1.tenant.example:${brokerPort},kafka-2.tenant.example:${brokerPort}`, { topic: name });
    const byName = await failureOf(publisher({ allow: NOTHING_PRIVATE, resolve: async () => [{ address: '127.0.0.1', family: 4 }] }).publish(named, outbound('p', 1), 5_000));
    expect(byName.refused).toBe(true);
    expect(byName.message).toMatch(/^refused to connect to kafka-1\.tenant\.example: /);
    expect(byName.message).not.toContain('127.0.0.1');

    const own = await failureOf(publisher({ ownEndpoint: (_address, port) => port === brokerPort }).publish(destination, outbound('p', 2), 5_000));
    expect(own.refused).toBe(true);
    await new Promise((r) => setTimeout(r, 200));
    expect(serverConnections(brokerPort)).toBe(0);

    // the bootstrap server is allowed (a proxy); the broker its metadata names is the service's own
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: brokerPort });
    proxies.push(proxy);
    const viaProxy = brokerDestination('kafka', `kafka://127.0.0.1:${proxy.port}`, { topic: name });
    const advertised = await failureOf(publisher({ ownEndpoint: (_address, port) => port === brokerPort }).publish(viaProxy, outbound('p', 3), 10_000));
    expect(proxy.accepted()).toBeGreaterThan(0);
    expect(advertised.refused).toBe(true);
    expect(advertised.message).toMatch(/own endpoint/);
  });

  it('closes an idle connection, a released one, and one whose destination changed', async () => {
    const name = await topic();
    const pub = publisher({ idleMs: 300 });
    const destination = brokerDestination('kafka', kafka.url, { topic: name });
    const run = uniqueSuffix();
    await eventually('earlier clients gone', () => serverConnections(brokerPort) === 0, 10_000);

    await pub.publish(destination, outbound(run, 0), 5_000);
    const open = serverConnections(brokerPort);
    expect(open).toBeGreaterThan(0);
    await eventually('the idle connections closed', () => serverConnections(brokerPort) === 0, 5_000);

    await pub.publish(destination, outbound(run, 1), 5_000);
    await pub.release(destination.id);
    await eventually('the released connections closed', () => serverConnections(brokerPort) === 0, 5_000);

    await pub.publish(destination, outbound(run, 2), 5_000);
    const changed = { ...destination, config: { topic: name, key: '{{event_id}}' } };
    await pub.publish(changed, outbound(run, 3), 5_000);
    await eventually('the old client closed, the new one open', () => serverConnections(brokerPort) === open, 5_000);
    expect(await readKafkaTopic(kafka.brokers, name, 4)).toHaveLength(4);
  });
});
