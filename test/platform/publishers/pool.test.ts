import type { Destination } from '../../../core/model';
import { ConnectionPool, type BrokerConnection, type Connector } from '../../../pipeline/deliver/publishers/pool';
import type { OutboundMessage } from '../../../pipeline/deliver/publishers/publisher';
import { brokerDestination, failureOf, outbound } from './fixtures';

/** A connection whose sends the test settles by hand. */
class ScriptedConnection implements BrokerConnection {
  open = true;
  closed = false;
  readonly sends: { message: OutboundMessage; ack(): void; fail(err: Error): void }[] = [];

  send(message: OutboundMessage): Promise<void> {
    return new Promise((resolve, reject) => this.sends.push({ message, ack: resolve, fail: reject }));
  }

  async close(): Promise<void> {
    this.open = false;
    this.closed = true;
  }
}

/** A connector the test answers: each connect waits for `next()` to give it a connection or an error. */
function scriptedConnector() {
  const attempts: { destination: Destination; succeed(c: ScriptedConnection): void; fail(err: Error): void }[] = [];
  const connector: Connector = {
    connect: (destination) => new Promise((resolve, reject) => attempts.push({ destination, succeed: resolve, fail: reject })),
  };
  return { connector, attempts };
}

const tick = () => new Promise((r) => setImmediate(r));

/**
 * The pool's own rules, with connections the test scripts: sharing one connect, dropping what
 * failed, reconnecting on a change, timeouts, and what a failure may say.
 */
describe('broker connection pool', () => {
  const pools: ConnectionPool[] = [];
  const poolWith = (connector: Connector, options: { idleMs?: number; connectTimeoutMs?: number } = {}) => {
    const pool = new ConnectionPool({
      connectors: { kafka: connector, amqp: connector, nats: connector, mqtt: connector },
      idleMs: options.idleMs ?? 60_000,
      connectTimeoutMs: options.connectTimeoutMs ?? 5_000,
    });
    pools.push(pool);
    return pool;
  };
  const destination = brokerDestination('nats', 'nats://nats.example.com:4222', { subject: 'orders' }, { type: 'basic', username: 'u', password: 'pa55&word' }, 'dst_pool');

  afterEach(async () => {
    await Promise.all(pools.splice(0).map((p) => p.close()));
  });

  it('shares one connect among concurrent publishes, and connects again after it failed', async () => {
    const { connector, attempts } = scriptedConnector();
    const pool = poolWith(connector);
    const first = [0, 1, 2].map((i) => failureOf(pool.publish(destination, outbound('p', i), 5_000)));
    await tick();
    expect(attempts).toHaveLength(1);
    attempts[0]!.fail(new Error('connect ECONNREFUSED'));
    for (const f of await Promise.all(first)) expect(f.message).toBe('connect ECONNREFUSED');

    const next = pool.publish(destination, outbound('p', 3), 5_000);
    await tick();
    expect(attempts).toHaveLength(2);
    const c = new ScriptedConnection();
    attempts[1]!.succeed(c);
    await tick();
    c.sends[0]!.ack();
    await expect(next).resolves.toEqual({ durationMs: expect.any(Number) });
  });

  it('replaces a connection that closed, and one whose destination changed once its sends ended', async () => {
    const { connector, attempts } = scriptedConnector();
    const pool = poolWith(connector);
    const a = new ScriptedConnection();
    const p1 = pool.publish(destination, outbound('c', 0), 5_000);
    await tick();
    attempts[0]!.succeed(a);
    await tick();
    a.sends[0]!.ack();
    await p1;

    a.open = false; // the broker went away
    const p2 = pool.publish(destination, outbound('c', 1), 5_000);
    await tick();
    expect(attempts).toHaveLength(2);
    expect(a.closed).toBe(true);
    const b = new ScriptedConnection();
    attempts[1]!.succeed(b);
    await tick();
    // in flight on b while the destination changes: b stays open until its send ends
    const changed = { ...destination, config: { subject: 'orders.v2' } };
    const p3 = pool.publish(changed, outbound('c', 2), 5_000);
    await tick();
    expect(attempts).toHaveLength(3);
    expect(attempts[2]!.destination.config).toEqual({ subject: 'orders.v2' });
    expect(b.closed).toBe(false);
    b.sends[0]!.ack();
    await p2;
    await tick();
    expect(b.closed).toBe(true);
    const c = new ScriptedConnection();
    attempts[2]!.succeed(c);
    await tick();
    c.sends[0]!.ack();
    await p3;
  });

  it('gives up on a slow connect, and closes the connection that comes too late', async () => {
    const { connector, attempts } = scriptedConnector();
    const pool = poolWith(connector, { connectTimeoutMs: 100 });
    const f = await failureOf(pool.publish(destination, outbound('s', 0), 5_000));
    expect(f.message).toBe('could not connect to nats.example.com:4222 within 100 ms');
    const late = new ScriptedConnection();
    attempts[0]!.succeed(late);
    await tick();
    expect(late.closed).toBe(true);
  });

  it('fails a send without an acknowledgement in time, and drops a connection that acknowledged nothing since', async () => {
    const { connector, attempts } = scriptedConnector();
    const pool = poolWith(connector);
    const publishing = failureOf(pool.publish(destination, outbound('t', 0), 150));
    await tick();
    const silent = new ScriptedConnection();
    attempts[0]!.succeed(silent);
    const f = await publishing;
    expect(f.message).toBe('no acknowledgement from the broker within 150 ms');
    expect(silent.closed).toBe(true);
    const again = failureOf(pool.publish(destination, outbound('t', 1), 150));
    await tick();
    expect(attempts).toHaveLength(2);
    attempts[1]!.fail(new Error('connect ECONNREFUSED'));
    expect((await again).message).toBe('connect ECONNREFUSED');
  });

  it('closes idle and released connections', async () => {
    const { connector, attempts } = scriptedConnector();
    const pool = poolWith(connector, { idleMs: 100 });
    const idle = new ScriptedConnection();
    const p = pool.publish(destination, outbound('i', 0), 5_000);
    await tick();
    attempts[0]!.succeed(idle);
    await tick();
    idle.sends[0]!.ack();
    await p;
    expect(idle.closed).toBe(false);
    await new Promise((r) => setTimeout(r, 300));
    expect(idle.closed).toBe(true);

    const released = new ScriptedConnection();
    const q = pool.publish(destination, outbound('i', 1), 5_000);
    await tick();
    attempts[1]!.succeed(released);
    await tick();
    released.sends[0]!.ack();
    await q;
    await pool.release(destination.id);
    expect(released.closed).toBe(true);
    expect(pool.openCount()).toBe(0);
  });

  it('never says the password or token, nor credentials in a URL, on one line', async () => {
    const { connector, attempts } = scriptedConnector();
    const pool = poolWith(connector);
    const publishing = failureOf(pool.publish(destination, outbound('x', 0), 5_000));
    await tick();
    attempts[0]!.fail(new Error('login to nats://u:pa55%26word@nats.example.com failed\nwith password "pa55&word" (pa55%26word)'));
    const f = await publishing;
    expect(f.message).toBe('login to nats://nats.example.com failed with password "***" (***)');
    expect(JSON.stringify({ message: f.message, cause: String((f.cause as Error).message) })).not.toContain('pa55');

    const bearer = brokerDestination('nats', 'nats://nats.example.com', { subject: 'a' }, { type: 'bearer', token: 's3cr3t-token' }, 'dst_token');
    const byToken = failureOf(pool.publish(bearer, outbound('x', 1), 5_000));
    await tick();
    attempts[1]!.fail(new Error('token s3cr3t-token rejected'));
    expect((await byToken).message).toBe('token *** rejected');
  });

  it('rejects a webhook destination, and every publish after close', async () => {
    const { connector } = scriptedConnector();
    const pool = poolWith(connector);
    const webhook = await failureOf(pool.publish(brokerDestination('webhook', 'https://example.com/hook', {}), outbound('w', 0), 1_000));
    expect(webhook.message).toMatch(/over HTTP/);
    await pool.close();
    expect((await failureOf(pool.publish(destination, outbound('w', 1), 1_000))).message).toBe('the broker publisher is closed');
  });
});
