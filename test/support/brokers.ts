import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import amqplib, { type ConsumeMessage } from 'amqplib';
import { jetstreamManager, StorageType } from '@nats-io/jetstream';
import { connect as natsConnect, type NatsConnection } from '@nats-io/transport-node';
import { Kafka, logLevel } from 'kafkajs';
import { connectAsync as mqttConnectAsync, type IClientOptions, type MqttClient } from 'mqtt';
import { startLocalKafkaCluster, type LocalKafkaSasl } from '../../infra/kafka/local-kafka';
import { spawnTethered, type ChildHandle } from '../../infra/process/child';
import { freePort, waitFor } from '../../infra/process/ports';
import { uniqueSuffix } from './ids';

/**
 * Brokers for tests of the broker destinations: the machine's shared RabbitMQ, NATS and
 * Mosquitto (tests run in parallel on them, each with its own names, and never stop them),
 * private instances a test may stop and start (NATS, Mosquitto, Kafka), a TCP proxy that cuts a
 * shared broker off, and ordinary clients that read back what was delivered.
 */

export type SharedBroker = 'rabbitmq' | 'nats' | 'mosquitto';

export const SHARED_BROKERS: Record<SharedBroker, { title: string; host: string; port: number; url: string; start: string }> = {
  rabbitmq: { title: 'RabbitMQ', host: '127.0.0.1', port: 5672, url: 'amqp://127.0.0.1:5672', start: 'rabbitmq-server -detached' },
  nats: {
    title: 'NATS (JetStream)',
    host: '127.0.0.1',
    port: 4222,
    url: 'nats://127.0.0.1:4222',
    start: 'start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log',
  },
  mosquitto: { title: 'Mosquitto', host: '127.0.0.1', port: 1883, url: 'mqtt://127.0.0.1:1883', start: 'mosquitto -d -c /etc/mosquitto/mosquitto.conf' },
};

/** The shared RabbitMQ's default user (it only logs in from loopback). */
export const RABBIT_AUTH = { type: 'basic' as const, username: 'guest', password: 'guest' };

function canConnect(host: string, port: number, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Fails, in one line saying how to start it, when the shared broker is not up. */
export async function requireBroker(name: SharedBroker): Promise<void> {
  const b = SHARED_BROKERS[name];
  if (await canConnect(b.host, b.port)) return;
  const err = new Error(`${b.title} is not running on ${b.host}:${b.port}; start it with: ${b.start}`);
  err.stack = err.message;
  throw err;
}

/** Resolves once `check` holds, polling; rejects saying `what` after `timeoutMs`. */
export async function eventually(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000, intervalMs = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`${what}: not within ${timeoutMs} ms`);
}

/**
 * Established TCP connections whose server end is on `port` on this machine: what a private
 * broker on that port sees (the connection closes on its side when the client's does).
 */
export function serverConnections(port: number): number {
  let count = 0;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const local = fields[1];
      const state = fields[3];
      if (!local || state !== '01') continue;
      if (parseInt(local.split(':')[1] ?? '', 16) === port) count++;
    }
  }
  return count;
}

/** Items arriving from a subscription, and a wait for a number of them. */
export interface Received<T> {
  readonly items: T[];
  /** Resolves with the items once there are `count`; rejects after `timeoutMs` saying how many came. */
  waitFor(count: number, timeoutMs?: number): Promise<T[]>;
}

function collector<T>(): Received<T> & { push(item: T): void } {
  const items: T[] = [];
  const waiters = new Set<() => void>();
  return {
    items,
    push(item) {
      items.push(item);
      for (const w of [...waiters]) w();
    },
    waitFor(count, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (items.length < count) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(items);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`${items.length} of ${count} messages arrived within ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
  };
}

// ---------------------------------------------------------------- a proxy that can be cut

export interface TcpProxy {
  readonly port: number;
  /** Connections open through the proxy now (each one a client and its upstream). */
  openConnections(): number;
  /** Connections ever accepted. */
  accepted(): number;
  /** Closes every connection and stops listening: new connections are refused, as by a broker that is down. */
  cut(): Promise<void>;
  /** Listens again on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

/** A TCP proxy on a free loopback port to `target`, which a test cuts to play a broker outage. */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();
  let accepted = 0;
  const server = net.createServer((client) => {
    accepted++;
    const upstream = net.connect(target);
    const pair = { client, upstream };
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  const dropAll = () => {
    for (const { client, upstream } of [...pairs]) {
      client.destroy();
      upstream.destroy();
    }
    pairs.clear();
  };
  return {
    port,
    openConnections: () => pairs.size,
    accepted: () => accepted,
    async cut() {
      const closed = server.listening ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
      dropAll();
      await closed;
    },
    async restore() {
      if (!server.listening) await listen(port);
    },
    async close() {
      const closed = server.listening ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
      dropAll();
      await closed;
    },
  };
}

/** A server that accepts connections and never says a word: a broker that hangs. */
export async function startSilentServer(): Promise<{ port: number; accepted(): number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  const server = net.createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('error', () => undefined).on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as net.AddressInfo).port,
    accepted: () => accepted,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// ---------------------------------------------------------------- private brokers

/** A broker of the test's own, on a free loopback port, which the test may stop and start again. */
export interface PrivateBroker {
  readonly port: number;
  readonly url: string;
  /** Connections the broker has open now. */
  connections(): number;
  stop(): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  /** Stops it for good and removes its files. */
  close(): Promise<void>;
}

function privateBroker(
  name: string,
  port: number,
  url: string,
  dir: string,
  spawnIt: () => ChildHandle,
  ready: () => Promise<void>,
): Promise<PrivateBroker> {
  let child: ChildHandle | undefined;
  const start = async () => {
    if (child) throw new Error(`${name} is running`);
    const started = spawnIt();
    child = started;
    let exited = false;
    void started.exited.then(() => {
      exited = true;
    });
    await waitFor(
      name,
      async () => {
        if (exited) throw new Error(`${name} exited; see ${dir}`);
        if (!(await canConnect('127.0.0.1', port, 500))) throw new Error(`not listening on ${port}`);
        await ready();
      },
      20_000,
      50,
    );
  };
  const stop = async () => {
    const running = child;
    child = undefined;
    await running?.stop(5_000);
  };
  return start().then(() => ({
    port,
    url,
    connections: () => serverConnections(port),
    stop,
    start,
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  }));
}

/** A private NATS server with JetStream (file store under its own folder, kept across restarts). */
export async function startPrivateNats(options: { user?: string; pass?: string } = {}): Promise<PrivateBroker> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hookline-nats-'));
  const args = ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', path.join(dir, 'store')];
  if (options.user !== undefined) args.push('--user', options.user, '--pass', options.pass ?? '');
  const url = `nats://127.0.0.1:${port}`;
  return privateBroker(
    'private nats-server',
    port,
    url,
    dir,
    () => spawnTethered('nats-private', '/usr/sbin/nats-server', args, { logFile: path.join(dir, 'nats.log') }),
    async () => {
      // ready once JetStream answers, not only the port
      const nc = await natsConnect({ servers: url, user: options.user, pass: options.pass, reconnect: false, timeout: 1_000 });
      try {
        await (await jetstreamManager(nc)).getAccountInfo();
      } finally {
        await nc.close();
      }
    },
  );
}

/**
 * A private Mosquitto. With `users`, anonymous clients are refused and the users log in with
 * their passwords (a password file made by mosquitto_passwd); `acl` is an ACL file's text.
 */
export async function startPrivateMosquitto(options: { users?: Record<string, string>; acl?: string } = {}): Promise<PrivateBroker> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hookline-mosquitto-'));
  const lines = [
    // as root, mosquitto drops to its own user, which may not read the test's private folder
    ...(process.getuid?.() === 0 ? ['user root'] : []),
    `listener ${port} 127.0.0.1`,
    'persistence false',
    `log_dest file ${path.join(dir, 'mosquitto.log')}`,
  ];
  if (options.users) {
    const passwords = path.join(dir, 'passwd');
    writeFileSync(passwords, '');
    for (const [user, password] of Object.entries(options.users)) {
      const r = spawnSync('mosquitto_passwd', ['-b', passwords, user, password], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`mosquitto_passwd failed: ${r.stderr.trim()}`);
    }
    lines.push('allow_anonymous false', `password_file ${passwords}`);
  } else {
    lines.push('allow_anonymous true');
  }
  if (options.acl !== undefined) {
    const aclFile = path.join(dir, 'acl');
    writeFileSync(aclFile, options.acl);
    lines.push(`acl_file ${aclFile}`);
  }
  const conf = path.join(dir, 'mosquitto.conf');
  writeFileSync(conf, `${lines.join('\n')}\n`);
  return privateBroker(
    'private mosquitto',
    port,
    `mqtt://127.0.0.1:${port}`,
    dir,
    () => spawnTethered('mosquitto-private', '/usr/sbin/mosquitto', ['-c', conf], { logFile: path.join(dir, 'stdout.log') }),
    async () => undefined,
  );
}

export interface PrivateKafka {
  brokers: string[];
  /** The SASL/PLAIN listener, when started with `sasl`. */
  saslBrokers: string[];
  /** `kafka://` URLs of the two listeners, for a destination. */
  url: string;
  saslUrl: string;
  createTopic(topic: string): Promise<void>;
  /** Resolves once every partition of `topic` has a leader (after a restart). */
  waitForLeader(topic: string): Promise<void>;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

function adminClient(brokers: string[]): Kafka {
  return new Kafka({ clientId: `test-admin-${uniqueSuffix()}`, brokers, logLevel: logLevel.NOTHING, retry: { retries: 5, initialRetryTime: 100 } });
}

/**
 * A Kafka cluster of the test's own (one KRaft node, small heap), separate from the service's:
 * its broker may be stopped and started again on the same ports, and with `sasl` it has a
 * SASL/PLAIN listener too.
 */
export async function startPrivateKafka(options: { sasl?: LocalKafkaSasl } = {}): Promise<PrivateKafka> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hookline-kafka-'));
  const cluster = await startLocalKafkaCluster(dir, { nodes: 1, heap: '256m', sasl: options.sasl });
  const node = cluster.nodes[0]!;
  const saslBrokers = cluster.saslBrokers ?? [];
  const waitForLeader = async (topic: string) => {
    const admin = adminClient(cluster.brokers).admin();
    try {
      await waitFor(
        `a leader for ${topic}`,
        async () => {
          await admin.connect();
          const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
          if (topics.some((t) => t.partitions.some((p) => p.leader < 0))) throw new Error('no leader yet');
        },
        30_000,
        100,
      );
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  };
  return {
    brokers: cluster.brokers,
    saslBrokers,
    url: `kafka://${cluster.brokers.join(',')}`,
    saslUrl: `kafka://${saslBrokers.join(',')}`,
    async createTopic(topic) {
      const admin = adminClient(cluster.brokers).admin();
      await admin.connect();
      try {
        await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: true });
      } finally {
        await admin.disconnect();
      }
      await waitForLeader(topic);
    },
    waitForLeader,
    stop: () => node.stop(),
    start: () => node.start(),
    async close() {
      await cluster.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------- readers

export interface SeenMessage {
  body: Buffer;
  /** Headers (AMQP, NATS, Kafka) or MQTT 5 user properties, as strings. */
  headers: Record<string, string>;
  /** What else the broker carried: AMQP properties, the MQTT content type, the Kafka key. */
  extra: Record<string, unknown>;
}

function stringHeaders(from: Record<string, unknown> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(from ?? {})) {
    if (v === undefined || v === null) continue;
    out[k] = Buffer.isBuffer(v) ? v.toString('utf8') : Array.isArray(v) ? v.map(String).join(',') : String(v);
  }
  return out;
}

export interface AmqpReader {
  exchange: string;
  routingKey: string;
  messages: Received<SeenMessage>;
  close(): Promise<void>;
}

/**
 * A direct exchange of the test's own on the shared RabbitMQ (a unique name unless given), with
 * an exclusive queue bound to `routingKey` whose messages are collected. Closing deletes the
 * exchange.
 */
export async function amqpReader(options: { routingKey: string; exchange?: string }): Promise<AmqpReader> {
  const exchange = options.exchange ?? `test-x-${uniqueSuffix()}`;
  const conn = await amqplib.connect(`amqp://guest:guest@127.0.0.1:${SHARED_BROKERS.rabbitmq.port}`);
  const channel = await conn.createChannel();
  await channel.assertExchange(exchange, 'direct', { durable: false, autoDelete: false });
  const { queue } = await channel.assertQueue('', { exclusive: true, durable: false });
  await channel.bindQueue(queue, exchange, options.routingKey);
  const messages = collector<SeenMessage>();
  await channel.consume(
    queue,
    (msg: ConsumeMessage | null) => {
      if (!msg) return;
      const { headers, ...properties } = msg.properties;
      messages.push({ body: msg.content, headers: stringHeaders(headers as Record<string, unknown>), extra: { ...properties, routingKey: msg.fields.routingKey } });
    },
    { noAck: true },
  );
  return {
    exchange,
    routingKey: options.routingKey,
    messages,
    async close() {
      await channel.deleteExchange(exchange).catch(() => undefined);
      await conn.close().catch(() => undefined);
    },
  };
}

export interface NatsStream {
  name: string;
  subject: string;
  /** Everything the stream holds, read with a connection of its own (so it works after a restart). */
  read(): Promise<SeenMessage[]>;
  /** Resolves once the stream holds `count` messages. */
  waitFor(count: number, timeoutMs?: number): Promise<SeenMessage[]>;
  delete(): Promise<void>;
}

/** A JetStream stream of the test's own capturing one subject of its own (file storage). */
export async function natsStream(options: { url?: string; user?: string; pass?: string; subject?: string } = {}): Promise<NatsStream> {
  const url = options.url ?? SHARED_BROKERS.nats.url;
  const suffix = uniqueSuffix();
  const name = `TEST_${suffix}`;
  const subject = options.subject ?? `test.${suffix}.events`;
  const withManager = async <T>(fn: (jsm: Awaited<ReturnType<typeof jetstreamManager>>, nc: NatsConnection) => Promise<T>): Promise<T> => {
    const nc = await natsConnect({ servers: url, user: options.user, pass: options.pass, reconnect: false, timeout: 2_000 });
    try {
      return await fn(await jetstreamManager(nc), nc);
    } finally {
      await nc.close();
    }
  };
  await withManager((jsm) => jsm.streams.add({ name, subjects: [subject], storage: StorageType.File }));
  const read = () =>
    withManager(async (jsm) => {
      const info = await jsm.streams.info(name);
      const out: SeenMessage[] = [];
      for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
        const m = await jsm.streams.getMessage(name, { seq });
        if (!m) continue;
        const headers: Record<string, string> = {};
        for (const k of m.header?.keys() ?? []) headers[k] = m.header.get(k);
        out.push({ body: Buffer.from(m.data), headers, extra: { subject: m.subject, seq: m.seq } });
      }
      return out;
    });
  return {
    name,
    subject,
    read,
    async waitFor(count, timeoutMs = 10_000) {
      let last: SeenMessage[] = [];
      try {
        await eventually(`${count} messages in stream ${name}`, async () => (last = await read()).length >= count, timeoutMs, 100);
      } catch {
        throw new Error(`${last.length} of ${count} messages arrived in stream ${name} within ${timeoutMs} ms`);
      }
      return last;
    },
    async delete() {
      await withManager((jsm) => jsm.streams.delete(name)).catch(() => undefined);
    },
  };
}

export interface MqttSubscriber {
  topic: string;
  messages: Received<SeenMessage>;
  /** Subscriptions the broker acknowledged: one, and one more after each reconnect (after a broker restart). */
  subscriptions(): number;
  close(): Promise<void>;
}

/** An mqtt.js client subscribed at QoS 1 to `topic`, collecting what arrives; it reconnects and subscribes again by itself. */
export async function mqttSubscriber(options: { url?: string; topic?: string; protocolVersion?: 4 | 5; username?: string; password?: string }): Promise<MqttSubscriber> {
  const topic = options.topic ?? `test/${uniqueSuffix()}/events`;
  const clientOptions: IClientOptions = {
    protocolVersion: options.protocolVersion ?? 5,
    clientId: `test-sub-${uniqueSuffix()}`,
    clean: true,
    reconnectPeriod: 200,
    connectTimeout: 5_000,
    // subscribed again below, where the SUBACK can be awaited
    resubscribe: false,
    ...(options.username ? { username: options.username, password: options.password } : {}),
  };
  const client: MqttClient = await mqttConnectAsync(options.url ?? SHARED_BROKERS.mosquitto.url, clientOptions);
  let subscriptions = 0;
  const subscribe = () =>
    client.subscribeAsync(topic, { qos: 1 }).then(
      () => {
        subscriptions++;
      },
      () => undefined,
    );
  client.on('error', () => undefined);
  const messages = collector<SeenMessage>();
  client.on('message', (_topic, payload, packet) => {
    const properties = packet.properties ?? {};
    messages.push({
      body: Buffer.from(payload),
      headers: stringHeaders(properties.userProperties as Record<string, unknown> | undefined),
      extra: { contentType: properties.contentType, qos: packet.qos, topic: _topic },
    });
  });
  await subscribe();
  client.on('connect', () => void subscribe());
  return {
    topic,
    messages,
    subscriptions: () => subscriptions,
    async close() {
      await client.endAsync(true).catch(() => undefined);
    },
  };
}

/**
 * Every record of `topic` from the start, read by a kafkajs consumer of a group of its own,
 * once there are `count` (rejects after `timeoutMs` saying how many there were).
 */
export async function readKafkaTopic(brokers: string[], topic: string, count: number, timeoutMs = 20_000): Promise<SeenMessage[]> {
  const kafka = adminClient(brokers);
  const consumer = kafka.consumer({ groupId: `test-reader-${uniqueSuffix()}`, retry: { retries: 3 } });
  const seen = collector<SeenMessage>();
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message, partition }) => {
        seen.push({ body: message.value ?? Buffer.alloc(0), headers: stringHeaders(message.headers as Record<string, unknown>), extra: { key: message.key?.toString(), partition } });
      },
    });
    return [...(await seen.waitFor(count, timeoutMs))];
  } finally {
    await consumer.disconnect().catch(() => undefined);
  }
}
