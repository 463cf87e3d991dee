/**
 * The `broker_delivery` and `transform` scenarios of the benchmark suite.
 *
 * broker_delivery: for each broker type (amqp, nats, mqtt, kafka), a backlog of DeliveryTask
 * records for one destination of that type is produced onto deliveries.requested while the
 * service runs STAGES=api,deliver, and the messages are counted by the broker's own client
 * consuming them; against the broker's own client publishing the same messages (same bodies,
 * same acknowledgement: publisher confirms, JetStream acks, PUBACK, acks=all) with as many in
 * flight as the deliver stage allows one destination (DELIVERY_PER_DESTINATION, 32), in the same
 * run. The kafka type writes to a second cluster of its own (the service refuses its own).
 *
 * transform: the same backlog to a webhook destination with a trivial transformation against one
 * without, alternating; the figure is the throughput ratio and the service CPU each delivery adds.
 */
import path from 'node:path';
import type { Kafka, Producer } from 'kafkajs';
import amqp from 'amqplib';
import mqtt from 'mqtt';
import { connect as natsConnect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { topicNames } from '../core/topics';
import { startLocalKafka } from '../infra/kafka/local-kafka';
import { AvroCodec } from '../platform/avro/codec';
import { createKafka, ensureTopics } from '../platform/kafka/client';
import { epochMs, taggedBody } from './lib/load';
import { cpuBetween, cpuSnapshot } from './lib/procs';
import { backlogRate, produceDeliveryTasks } from './lib/tasks';
import { api, createFlows, type ReceiverClient, startInstance, type Infra, type ServiceInstance } from './lib/service';
import { median, round, sleep } from './lib/stats';

export interface DestinationBenchCtx {
  root: string;
  infra: Infra;
  producer: Producer;
  rec: ReceiverClient;
  receiverPid: number;
  receiverHookUrl: string;
  say(line: string): void;
  reps: number;
  tasks: number;
  logLevel: string;
}

export const BROKER_TYPES = ['amqp', 'nats', 'mqtt', 'kafka'] as const;
type BrokerType = (typeof BROKER_TYPES)[number];

/** Publishes in flight at once on the baseline: the deliver stage's share of one destination. */
const IN_FLIGHT = 32;

/** One consumer of the broker's own client, counting what arrives, with each arrival's time. */
interface Counter {
  arrivals: number[];
  close(): Promise<void>;
}

/** The broker's own client publishing one message, resolved at the broker's acknowledgement. */
interface Baseline {
  publish(body: Buffer, headers: Record<string, string>): Promise<void>;
  close(): Promise<void>;
}

/** Where one broker type is, for a destination and for its clients. */
interface Place {
  type: BrokerType;
  url: string;
  config: Record<string, unknown>;
  counter(): Promise<Counter>;
  baseline(): Promise<Baseline>;
  /** Drops what a repetition left (a queue's or a stream's messages; kafka: a new topic) before the next one. */
  reset(): Promise<void>;
  close(): Promise<void>;
}

async function amqpPlace(run: string): Promise<Place> {
  const conn = await amqp.connect('amqp://guest:guest@127.0.0.1:5672');
  const admin = await conn.createChannel();
  const queue = `bench.${run}`;
  await admin.assertQueue(queue, { durable: true });
  return {
    type: 'amqp',
    url: 'amqp://127.0.0.1:5672',
    config: { exchange: '', routing_key: queue },
    async counter() {
      const ch = await conn.createChannel();
      const arrivals: number[] = [];
      const { consumerTag } = await ch.consume(queue, () => void arrivals.push(epochMs()), { noAck: true });
      return { arrivals, close: async () => void (await ch.cancel(consumerTag), await ch.close()) };
    },
    async baseline() {
      const ch = await conn.createConfirmChannel();
      return {
        publish: (body, headers) =>
          new Promise<void>((resolve, reject) => {
            ch.publish('', queue, body, { persistent: true, mandatory: true, contentType: headers['content-type'], messageId: headers['webhook-id'], headers }, (err) => (err ? reject(err as Error) : resolve()));
          }),
        close: () => ch.close(),
      };
    },
    async reset() {
      await admin.purgeQueue(queue);
    },
    async close() {
      await admin.deleteQueue(queue).catch(() => undefined);
      await conn.close();
    },
  };
}

async function natsPlace(run: string): Promise<Place> {
  const nc = await natsConnect({ servers: '127.0.0.1:4222' });
  const jsm = await jetstreamManager(nc);
  const stream = `BENCH_${run.replace(/[^A-Za-z0-9]/g, '_')}`;
  const subject = `bench.${run}`;
  await jsm.streams.add({ name: stream, subjects: [subject] });
  const js = jetstream(nc);
  return {
    type: 'nats',
    url: 'nats://127.0.0.1:4222',
    config: { subject },
    async counter() {
      const arrivals: number[] = [];
      const consumer = await js.consumers.get(stream);
      const messages = await consumer.consume();
      void (async () => {
        for await (const _ of messages) arrivals.push(epochMs());
      })();
      return { arrivals, close: async () => void (await messages.close()) };
    },
    async baseline() {
      const { headers: natsHeaders } = await import('@nats-io/transport-node');
      return {
        publish: async (body, headers) => {
          const h = natsHeaders();
          for (const [k, v] of Object.entries(headers)) h.set(k, v);
          await js.publish(subject, body, { msgID: headers['webhook-id'], headers: h });
        },
        close: async () => undefined,
      };
    },
    async reset() {
      await jsm.streams.purge(stream);
    },
    async close() {
      await jsm.streams.delete(stream).catch(() => undefined);
      await nc.close();
    },
  };
}

async function mqttPlace(run: string): Promise<Place> {
  const topic = `bench/${run}`;
  return {
    type: 'mqtt',
    url: 'mqtt://127.0.0.1:1883',
    config: { topic },
    async counter() {
      const client = await mqtt.connectAsync('mqtt://127.0.0.1:1883', { protocolVersion: 5, clientId: `bench-sub-${run}-${Math.random().toString(36).slice(2)}`, clean: true });
      const arrivals: number[] = [];
      client.on('message', () => void arrivals.push(epochMs()));
      await client.subscribeAsync(topic, { qos: 1 });
      return { arrivals, close: () => client.endAsync() };
    },
    async baseline() {
      const client = await mqtt.connectAsync('mqtt://127.0.0.1:1883', { protocolVersion: 5, clientId: `bench-pub-${run}-${Math.random().toString(36).slice(2)}`, clean: true });
      return {
        publish: async (body, headers) => {
          await client.publishAsync(topic, body, { qos: 1, properties: { userProperties: headers, contentType: headers['content-type'] } });
        },
        close: () => client.endAsync(),
      };
    },
    async reset() {},
    async close() {},
  };
}

async function kafkaPlace(run: string, brokers: string[]): Promise<Place> {
  const kafka: Kafka = createKafka(brokers, `bench-dest-${run}`);
  let topic = '';
  let n = 0;
  const place: Place = {
    type: 'kafka',
    url: `kafka://${brokers.join(',')}`,
    get config() {
      return { topic };
    },
    async counter() {
      const consumer = kafka.consumer({ groupId: `bench-count-${run}-${n}`, maxWaitTimeInMs: 50 });
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      const arrivals: number[] = [];
      await consumer.run({ eachBatch: async ({ batch }) => void arrivals.push(...batch.messages.map(() => epochMs())) });
      return { arrivals, close: () => consumer.disconnect() };
    },
    async baseline() {
      const producer = kafka.producer({ allowAutoTopicCreation: false });
      await producer.connect();
      return {
        publish: async (body, headers) => {
          await producer.send({ topic, acks: -1, messages: [{ key: headers['webhook-id'], value: body, headers }] });
        },
        close: () => producer.disconnect(),
      };
    },
    async reset() {
      topic = `bench.dest.${run}.${n++}`;
      await ensureTopics(kafka, [{ topic, partitions: 3 }], 1);
    },
    async close() {},
  };
  return place;
}

/** Deliveries/s over arrivals from `from` up to the 95th-percentile one (the delivery scenario's rule). */
const rateOf = (arrivals: number[], from: number): number => backlogRate(arrivals, from).rate;

async function waitForCount(c: Counter, n: number, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (c.arrivals.length < n) {
    if (Date.now() > deadline) throw new Error(`${what}: ${c.arrivals.length} of ${n} messages arrived in time`);
    await sleep(50);
  }
}

/** A backlog of `n` tasks for `destinationId` on deliveries.requested; resolves once it is all produced (acks=all). */
function produceTasks(ctx: DestinationBenchCtx, svc: ServiceInstance, codec: AvroCodec, destinationId: string, n: number, run: string): Promise<number> {
  return produceDeliveryTasks(ctx.producer, codec, topicNames(svc.prefix).deliveryRequested, { ingesterId: 'ing_bench', destinationId }, n, run, (i) => `k${i}`);
}

/** The broker's own client publishing `n` messages like the deliveries', IN_FLIGHT at a time; publishes/s over the 5th-95th percentile acknowledgement. */
async function baselineRate(place: Place, n: number, run: string): Promise<number> {
  const client = await place.baseline();
  const acks: number[] = [];
  const started = epochMs();
  try {
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < n) {
          const i = next++;
          const id = `msg_${run}_${i}`;
          await client.publish(Buffer.from(taggedBody(run, i, epochMs())), { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,bench', 'x-correlation-id': 'cor_bench' });
          acks.push(epochMs());
        }
      }),
    );
  } finally {
    await client.close();
  }
  return rateOf(acks, started);
}

export interface BrokerRep {
  type: BrokerType;
  service: number;
  baseline: number;
  serviceCpuUs: number;
  /** Of the baseline's acknowledged messages, how many its reader got. */
  baselineArrived: number;
}

/** broker_delivery: every type's deliveries/s against its own client's publishes/s, per repetition. */
export async function runBrokerDelivery(ctx: DestinationBenchCtx): Promise<BrokerRep[]> {
  const run = `b${Date.now().toString(36)}`;
  ctx.say('broker_delivery: starting a second Kafka cluster for the kafka destination type');
  const second = await startLocalKafka(path.join(ctx.root, 'kafka-destination'), { heap: '512m' });
  const svc = await startInstance({ name: 'svc-brokers', root: ctx.root, prefix: 'benchb.', stages: 'api,deliver', infra: ctx.infra, logLevel: ctx.logLevel });
  const codec = AvroCodec.connect(ctx.infra.registryUrl);
  await codec.register({ [topicNames(svc.prefix).deliveryRequested]: 'DeliveryTask' });
  const places: Place[] = [];
  const reps: BrokerRep[] = [];
  try {
    places.push(await amqpPlace(run), await natsPlace(run), await mqttPlace(run), await kafkaPlace(run, second.brokers));
    for (let rep = 0; rep < ctx.reps; rep++) {
      for (const place of places) {
        await place.reset();
        // a destination per repetition: the kafka place's topic is fresh each time
        const d = await api(svc, 'POST', '/v1/tenants/demo/destinations', { name: `bench ${place.type} ${rep}`, type: place.type, url: place.url, config: place.config });
        if (d.status !== 201) throw new Error(`${place.type} destination: ${d.status} ${JSON.stringify(d.body)}`);
        const tag = `${run}r${rep}${place.type}`;
        const counter = await place.counter();
        let serviceRate: number;
        let cpuUs: number;
        try {
          const cpu0 = cpuSnapshot({ service: svc.proc.pid });
          const producedAt = await produceTasks(ctx, svc, codec, d.body.id as string, ctx.tasks, tag);
          await waitForCount(counter, ctx.tasks, Math.max(120_000, ctx.tasks * 50), `${place.type} through the service`);
          const cpu = cpuBetween(cpu0, cpuSnapshot({ service: svc.proc.pid }));
          serviceRate = rateOf(counter.arrivals, producedAt);
          cpuUs = (cpu.byPart.service ?? 0) / ctx.tasks;
        } finally {
          await counter.close();
        }
        await place.reset();
        const check = await place.counter();
        let base: number;
        let arrived: number;
        try {
          base = await baselineRate(place, ctx.tasks, tag);
          // every publish was acknowledged; how many reached the reader is recorded, not required:
          // Mosquitto drops QoS 1 messages for a subscriber that falls behind a publisher this fast
          await waitForCount(check, ctx.tasks, 15_000, `${place.type} from its own client`).catch(() => undefined);
          arrived = check.arrivals.length;
        } finally {
          await check.close();
        }
        reps.push({ type: place.type, service: serviceRate, baseline: base, serviceCpuUs: cpuUs, baselineArrived: arrived });
        ctx.say(`broker_delivery rep ${rep + 1}/${ctx.reps} ${place.type}: service ${Math.round(serviceRate)}/s, own client ${Math.round(base)}/s (ratio ${round(serviceRate / base)}), service CPU ${Math.round(cpuUs)} us/delivery`);
        await api(svc, 'DELETE', `/v1/tenants/demo/destinations/${d.body.id as string}`);
      }
    }
  } finally {
    for (const place of places) await place.close().catch(() => undefined);
    await svc.proc.stop();
    await second.stop().catch(() => undefined);
  }
  return reps;
}

export interface TransformRep {
  plain: number;
  transformed: number;
  plainCpuUs: number;
  transformedCpuUs: number;
}

/** transform: deliveries/s and service CPU per delivery, with a trivial transformation and without, alternating. */
export async function runTransform(ctx: DestinationBenchCtx): Promise<TransformRep[]> {
  const svc = await startInstance({ name: 'svc-transform', root: ctx.root, prefix: 'bencht.', stages: 'api,deliver', infra: ctx.infra, logLevel: ctx.logLevel });
  const codec = AvroCodec.connect(ctx.infra.registryUrl);
  await codec.register({ [topicNames(svc.prefix).deliveryRequested]: 'DeliveryTask' });
  const reps: TransformRep[] = [];
  try {
    const [plain, shaped] = await createFlows(svc, ctx.receiverHookUrl, 2, 3);
    if (!plain || !shaped) throw new Error('two destinations are needed');
    const code = 'function transform(event) { return { body: event.body }; }';
    const set = await api(svc, 'PATCH', `/v1/tenants/demo/destinations/${shaped.destinationId}`, { transformation: code });
    if (set.status !== 200) throw new Error(`transformation: ${set.status} ${JSON.stringify(set.body)}`);
    // the deliver stage reads the change from the config topic
    await sleep(1_000);
    const once = async (destinationId: string, tag: string): Promise<{ rate: number; cpuUs: number }> => {
      await ctx.rec.reset(tag);
      const cpu0 = cpuSnapshot({ service: svc.proc.pid });
      const producedAt = await produceTasks(ctx, svc, codec, destinationId, ctx.tasks, tag);
      const got = await ctx.rec.waitFor(ctx.tasks, Math.max(120_000, ctx.tasks * 50));
      if (got < ctx.tasks) throw new Error(`transform: ${got} of ${ctx.tasks} delivered in time; see ${svc.proc.logFile}`);
      const cpu = cpuBetween(cpu0, cpuSnapshot({ service: svc.proc.pid }));
      return { rate: rateOf((await ctx.rec.detail()).arrivals, producedAt), cpuUs: (cpu.byPart.service ?? 0) / ctx.tasks };
    };
    for (let rep = 0; rep < ctx.reps; rep++) {
      const tag = `t${Date.now().toString(36)}`;
      // alternating which goes first, so a slow moment of the machine hits both alike
      const first = rep % 2 === 0;
      const a = await once(first ? plain.destinationId : shaped.destinationId, `${tag}a`);
      const b = await once(first ? shaped.destinationId : plain.destinationId, `${tag}b`);
      const [p, t] = first ? [a, b] : [b, a];
      reps.push({ plain: p.rate, transformed: t.rate, plainCpuUs: p.cpuUs, transformedCpuUs: t.cpuUs });
      ctx.say(`transform rep ${rep + 1}/${ctx.reps}: without ${Math.round(p.rate)}/s (${Math.round(p.cpuUs)} us CPU each), with ${Math.round(t.rate)}/s (${Math.round(t.cpuUs)} us)`);
    }
  } finally {
    await svc.proc.stop();
  }
  return reps;
}

export function medianOf<T>(xs: T[], f: (x: T) => number): number {
  return median(xs.map(f));
}
