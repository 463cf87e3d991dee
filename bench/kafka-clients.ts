/**
 * One client, one task, one process: the Kafka client comparison of the benchmark suite runs
 * this script once per client and task, so that each figure is the CPU of that client alone.
 *
 *   produce  KC_COUNT records (key `r<i>`, a 1.3 KB value carrying i) to KC_TOPIC, KC_BATCH
 *            records per send, idempotent, acks=all, at most KC_INFLIGHT sends in flight;
 *   consume  read KC_TOPIC from the beginning with the new group KC_GROUP, committing after each
 *            batch; every record is checked (see `Tally`), and the run fails unless exactly
 *            KC_COUNT distinct records arrived with the expected contents;
 *   pass     consume as above and produce each batch to KC_TO (acks=all) before committing it,
 *            what a stage of the service does.
 *
 * KC_CLIENT is `kafkajs` (the service's client, with its settings and partitioner) or `platformatic`
 * (@platformatic/kafka). The process prints `kclient started` when the measured part begins
 * (the first send, or the first record received) and `kclient result {json}` at the end, with
 * the elapsed time, its own CPU time (process.cpuUsage) and the requests the broker answered
 * (Produce, Fetch, OffsetCommit, other) over that part, then exits.
 */
import { subscribe } from 'node:diagnostics_channel';
import { inspect } from 'node:util';
import { crc32 } from 'node:zlib';
import type { Consumer, Producer } from 'kafkajs';
import { createKafka, createProducer } from '../platform/kafka/client';
import { rawLoop } from './raw-kafkajs';
import { murmur2Partitioner } from '../platform/kafka/partitioner';

const env = (name: string) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};

const CLIENT = env('KC_CLIENT');
const MODE = env('KC_MODE');
const BROKERS = env('KC_BROKERS').split(',');
const TOPIC = env('KC_TOPIC');
const COUNT = Number(env('KC_COUNT'));
const BATCH = Number(process.env.KC_BATCH ?? 500);
const INFLIGHT = Number(process.env.KC_INFLIGHT ?? 4);
/** A reader that got nothing for this long gives up and reports what it has (a failed run). */
const IDLE_MS = Number(process.env.KC_IDLE_MS ?? 20_000);
/** The fetch limits of both clients (kafkajs' defaults), so that a fetch brings the same records. */
const MAX_BYTES = 10 * 1_048_576;
const MAX_BYTES_PER_PARTITION = 1_048_576;
const RECORD_BYTES = 1_300;

/** Record i: key `r<i>`, value a fixed 1.3 KB pattern with i in its first four bytes. */
function recordOf(i: number): { key: Buffer; value: Buffer } {
  const value = Buffer.allocUnsafe(RECORD_BYTES);
  for (let j = 4; j < RECORD_BYTES; j++) value[j] = (j * 31 + 7) & 0xff;
  value.writeUInt32BE(i, 0);
  return { key: Buffer.from(`r${i}`), value };
}

/** The checksum a reader must reach: the sum of the CRC-32 of every key and value. */
function expectedChecksum(n: number): number {
  let sum = 0;
  for (let i = 0; i < n; i++) {
    const r = recordOf(i);
    sum += crc32(r.key) + crc32(r.value);
  }
  return sum;
}

/**
 * What a reader saw: each record's index is read from its key and must match the one in its
 * value; a record seen twice, out of range or malformed is counted, never silently dropped.
 */
class Tally {
  readonly seen: Uint8Array;
  distinct = 0;
  duplicates = 0;
  malformed = 0;
  checksum = 0;
  constructor(readonly n: number) {
    this.seen = new Uint8Array(n);
  }
  add(key: Buffer | null | undefined, value: Buffer | null | undefined): void {
    if (!key || !value || value.length !== RECORD_BYTES) {
      this.malformed++;
      return;
    }
    const i = Number(key.toString('latin1', 1));
    if (!Number.isInteger(i) || i < 0 || i >= this.n || value.readUInt32BE(0) !== i) {
      this.malformed++;
      return;
    }
    if (this.seen[i]) this.duplicates++;
    else {
      this.seen[i] = 1;
      this.distinct++;
    }
    this.checksum += crc32(key) + crc32(value);
  }
  get complete(): boolean {
    return this.distinct + this.duplicates + this.malformed >= this.n;
  }
  verdict(expected: number): { ok: boolean; distinct: number; duplicates: number; malformed: number; checksum_ok: boolean } {
    const checksumOk = this.checksum === expected;
    return { ok: this.distinct === this.n && this.duplicates === 0 && this.malformed === 0 && checksumOk, distinct: this.distinct, duplicates: this.duplicates, malformed: this.malformed, checksum_ok: checksumOk };
  }
}

/**
 * Requests the broker answered, by API name, as each client reports them: kafkajs' REQUEST
 * event of its producer and consumer, @platformatic/kafka's diagnostics channel of answered
 * requests. Either is built for every request whether or not anyone listens; counting is one
 * addition per request, so the counts leave the measured CPU as it was.
 */
const answered = new Map<string, number>();
function countRequest(api: string): void {
  answered.set(api, (answered.get(api) ?? 0) + 1);
}

/** Requests answered since `before`: the three of a stage's hop by name, the rest together. */
function requestsSince(before: ReadonlyMap<string, number>): Record<string, number> {
  const out: Record<string, number> = { Produce: 0, Fetch: 0, OffsetCommit: 0, other: 0 };
  for (const [api, n] of answered) {
    const key = api in out && api !== 'other' ? api : 'other';
    out[key]! += n - (before.get(api) ?? 0);
  }
  return out;
}

/** The measured part: wall time, this process's CPU and the requests answered from `start` to `finish`. */
class Window {
  private t0 = 0;
  private cpu0: NodeJS.CpuUsage | undefined;
  private requests0: ReadonlyMap<string, number> = new Map();
  start(): void {
    if (this.cpu0) return;
    this.t0 = performance.now();
    this.cpu0 = process.cpuUsage();
    this.requests0 = new Map(answered);
    process.stdout.write('kclient started\n');
  }
  finish(count: number, extra: Record<string, unknown> = {}): void {
    const ms = performance.now() - this.t0;
    const cpu = process.cpuUsage(this.cpu0);
    const cpuUs = cpu.user + cpu.system;
    const requests = requestsSince(this.requests0);
    process.stdout.write(`kclient result ${JSON.stringify({ client: CLIENT, mode: MODE, count, ms, per_s: (count / ms) * 1000, cpu_us: cpuUs, cpu_us_per_record: cpuUs / count, requests, ...extra })}\n`);
  }
}

/** Calls `giveUp` once the tally has not moved for IDLE_MS. */
function idleWatch(tally: Tally, giveUp: () => void): NodeJS.Timeout {
  let last = -1;
  let at = Date.now();
  return setInterval(() => {
    const now = tally.distinct + tally.duplicates + tally.malformed;
    if (now !== last) {
      last = now;
      at = Date.now();
    } else if (Date.now() - at > IDLE_MS) giveUp();
  }, 1_000);
}

/** Runs `send` over the batches of `count` records with at most `inflight` of them pending. */
async function sendAll(count: number, inflight: number, send: (from: number, to: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const from = next;
      next = Math.min(count, next + BATCH);
      await send(from, next);
    }
  };
  await Promise.all(Array.from({ length: inflight }, lane));
}

// ---------------------------------------------------------------------------------------------
// kafkajs, as the service uses it

async function kafkajsProduce(): Promise<void> {
  const kafka = createKafka(BROKERS, `kc-produce-${process.pid}`);
  const producer: Producer = createProducer(kafka, { createPartitioner: murmur2Partitioner });
  producer.on(producer.events.REQUEST, (e) => countRequest(e.payload.apiName));
  await producer.connect();
  const records = Array.from({ length: COUNT }, (_, i) => recordOf(i));
  const w = new Window();
  w.start();
  await sendAll(COUNT, INFLIGHT, (from, to) => producer.sendBatch({ acks: -1, topicMessages: [{ topic: TOPIC, messages: records.slice(from, to) }] }));
  w.finish(COUNT);
  await producer.disconnect();
}

async function kafkajsConsume(passTo: string | undefined): Promise<void> {
  const expected = expectedChecksum(COUNT);
  const kafka = createKafka(BROKERS, `kc-${MODE}-${process.pid}`);
  let producer: Producer | undefined;
  if (passTo) {
    producer = createProducer(kafka, { createPartitioner: murmur2Partitioner });
    producer.on(producer.events.REQUEST, (e) => countRequest(e.payload.apiName));
    await producer.connect();
  }
  const consumer: Consumer = kafka.consumer({ groupId: env('KC_GROUP'), maxWaitTimeInMs: 50, sessionTimeout: 10_000, heartbeatInterval: 3_000, maxBytes: MAX_BYTES, maxBytesPerPartition: MAX_BYTES_PER_PARTITION, allowAutoTopicCreation: false });
  consumer.on(consumer.events.REQUEST, (e) => countRequest(e.payload.apiName));
  await consumer.connect();
  await consumer.subscribe({ topics: [TOPIC], fromBeginning: true });
  const tally = new Tally(COUNT);
  const w = new Window();
  let commits = 0;
  let done: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const idle = idleWatch(tally, () => done());
  await rawLoop(consumer, {
    to: producer ? { producer, topic: passTo! } : undefined,
    fetched: (messages) => {
      w.start();
      for (const m of messages) tally.add(m.key, m.value);
    },
    done: () => {
      commits++;
      if (tally.complete) done();
    },
  });
  await finished;
  clearInterval(idle);
  const verdict = tally.verdict(expected);
  w.finish(tally.distinct, { commits, ...verdict });
  await consumer.disconnect();
  await producer?.disconnect();
  if (!verdict.ok) throw new Error(`read back wrong: ${JSON.stringify(verdict)}`);
}

// ---------------------------------------------------------------------------------------------
// @platformatic/kafka, with the same batching

/**
 * Counts the requests every client of this process gets answered: `channel` is the one
 * published as each answer arrives (process-wide), `names` the API names by key.
 */
function countPlatformaticRequests(channel: string | symbol, names: Readonly<Record<number, string>>): void {
  subscribe(channel, (message) => {
    const apiKey = (message as { apiKey?: number }).apiKey;
    countRequest((apiKey === undefined ? undefined : names[apiKey]) ?? 'unknown');
  });
}

async function platformaticProduce(): Promise<void> {
  const pk = await import('@platformatic/kafka');
  countPlatformaticRequests(pk.connectionsApiChannel.asyncStart.name, pk.protocolAPIsById);
  const producer = new pk.Producer({ clientId: `kc-produce-${process.pid}`, bootstrapBrokers: BROKERS, idempotent: true, acks: pk.ProduceAcks.ALL, autocreateTopics: false });
  const records = Array.from({ length: COUNT }, (_, i) => ({ topic: TOPIC, ...recordOf(i) }));
  // the idempotent producer's id is fetched by the first send; do it before the clock starts, as kafkajs' connect does
  await producer.initIdempotentProducer({});
  const w = new Window();
  w.start();
  // As many sends in flight as kafkajs gets: since 2.3 the idempotent producer advances its
  // sequence numbers when it builds a request (1.x did on the answer, so concurrent sends
  // repeated numbers), and it keeps one request in flight per broker connection, as kafkajs does.
  await sendAll(COUNT, INFLIGHT, (from, to) => producer.send({ messages: records.slice(from, to) }));
  w.finish(COUNT);
  await producer.close();
}

async function platformaticConsume(passTo: string | undefined): Promise<void> {
  const pk = await import('@platformatic/kafka');
  countPlatformaticRequests(pk.connectionsApiChannel.asyncStart.name, pk.protocolAPIsById);
  const expected = expectedChecksum(COUNT);
  const producer = passTo ? new pk.Producer({ clientId: `kc-pass-${process.pid}`, bootstrapBrokers: BROKERS, idempotent: true, acks: pk.ProduceAcks.ALL, autocreateTopics: false }) : undefined;
  if (producer) await producer.initIdempotentProducer({});
  const consumer = new pk.Consumer({ groupId: env('KC_GROUP'), clientId: `kc-${MODE}-${process.pid}`, bootstrapBrokers: BROKERS, maxWaitTime: 50, sessionTimeout: 10_000, heartbeatInterval: 3_000, maxBytes: MAX_BYTES, maxBytesPerPartition: MAX_BYTES_PER_PARTITION, autocommit: false });
  const stream = await consumer.consume({ topics: [TOPIC], mode: pk.MessagesStreamModes.COMMITTED, fallbackMode: pk.MessagesStreamFallbackModes.EARLIEST, autocommit: false });
  const tally = new Tally(COUNT);
  const w = new Window();
  let commits = 0;
  type Msg = { topic: string; partition: number; offset: bigint; key: Buffer; value: Buffer };
  const flush = async (batch: Msg[]) => {
    if (producer) await producer.send({ messages: batch.map((m) => ({ topic: passTo!, key: m.key, value: m.value })) });
    const last = new Map<string, Msg>();
    for (const m of batch) last.set(`${m.topic}:${m.partition}`, m);
    await consumer.commit({ offsets: [...last.values()].map((m) => ({ topic: m.topic, partition: m.partition, offset: m.offset + 1n, leaderEpoch: -1 })) });
    commits++;
  };
  // Records arrive one by one ('data' events, no promise per record). A batch ends when BATCH
  // records are pending or the stream holds no more fetched records, the nearest this stream
  // comes to kafkajs' per-fetch batches. Batches are produced and committed in order, one at a
  // time, while the next one fills: the overlap kafkajs gets from handling several partitions'
  // batches at once. The stream pauses while two batches wait.
  await new Promise<void>((resolve, reject) => {
    let pending: Msg[] = [];
    let chain = Promise.resolve();
    let outstanding = 0;
    let ended = false;
    const end = (err?: unknown) => {
      if (ended) return;
      ended = true;
      clearInterval(idle);
      stream.pause();
      if (err) reject(err);
      else resolve();
    };
    const idle = idleWatch(tally, () => end());
    const submit = (batch: Msg[]) => {
      outstanding++;
      if (outstanding >= 2) stream.pause();
      chain = chain.then(() => flush(batch)).then(() => {
        outstanding--;
        if (tally.complete && outstanding === 0) end();
        else if (outstanding < 2) stream.resume();
      });
      chain.catch(end);
    };
    stream.on('error', end);
    stream.on('data', (m) => {
      if (ended) return;
      w.start();
      tally.add(m.key, m.value);
      pending.push(m);
      if (pending.length >= BATCH || stream.readableLength === 0 || tally.complete) {
        const batch = pending;
        pending = [];
        submit(batch);
      }
    });
  });
  const verdict = tally.verdict(expected);
  w.finish(tally.distinct, { commits, ...verdict });
  await stream.close().catch(() => undefined);
  await consumer.close();
  await producer?.close();
  if (!verdict.ok) throw new Error(`read back wrong: ${JSON.stringify(verdict)}`);
}

async function main(): Promise<void> {
  const passTo = MODE === 'pass' ? env('KC_TO') : undefined;
  if (CLIENT === 'kafkajs') await (MODE === 'produce' ? kafkajsProduce() : kafkajsConsume(passTo));
  else if (CLIENT === 'platformatic') await (MODE === 'produce' ? platformaticProduce() : platformaticConsume(passTo));
  else throw new Error(`KC_CLIENT: unknown client ${CLIENT}`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n${inspect(err, { depth: 6 })}\n`);
    process.exit(1);
  },
);
