import { randomBytes } from 'node:crypto';
import type { Message } from 'kafkajs';
import { createKafka, ensureTopics } from '../../platform/kafka/client';
import { murmur2Partitioner } from '../../platform/kafka/partitioner';
import { readTopic } from '../../platform/kafka/topic-table';
import { uniqueSuffix } from '../support/ids';

// kafkajs as patched by patches/kafkajs+2.2.4.patch (its record encoding and CRC-32C)
// eslint-disable-next-line @typescript-eslint/no-require-imports
const crc32C = require('kafkajs/src/protocol/recordBatch/crc32C') as (b: Buffer) => number;

/** CRC-32C the slow, obvious way: one bit at a time, reflected polynomial 0x82F63B78. */
function bitwiseCrc32C(data: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of data) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

describe('kafkajs record encoding (patched)', () => {
  it('computes CRC-32C as RFC 3720 and a bitwise reference do', () => {
    // RFC 3720, appendix B.4, and the common check value
    expect(crc32C(Buffer.alloc(32, 0))).toBe(0x8a9136aa);
    expect(crc32C(Buffer.alloc(32, 0xff))).toBe(0x62a8ab43);
    expect(crc32C(Buffer.from(Array.from({ length: 32 }, (_, i) => i)))).toBe(0x46dd794e);
    expect(crc32C(Buffer.from(Array.from({ length: 32 }, (_, i) => 31 - i)))).toBe(0x113fdb5c);
    expect(crc32C(Buffer.from('123456789'))).toBe(0xe3069283);
    for (let n = 0; n < 300; n++) {
      const data = randomBytes(n);
      expect(crc32C(data)).toBe(bitwiseCrc32C(data));
    }
  });

  it('decodes record headers into the object kafkajs 2.2.4 made, repeated and odd names included', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const encodeRecord = require('kafkajs/src/protocol/recordBatch/record/v0') as (r: object) => { buffer: Buffer };
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const decodeRecord = require('kafkajs/src/protocol/recordBatch/record/v0/decoder') as (d: unknown, ctx: object) => { headers: Record<string, unknown> };
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const Decoder = require('kafkajs/src/protocol/decoder') as new (b: Buffer) => { readVarInt(): number };
    /** kafkajs 2.2.4's own fold of the header pairs, spreading the object again for each. */
    const reference = (pairs: [string, Buffer][]) =>
      pairs.reduce<Record<string, unknown>>((obj, [key, value]) => ({ ...obj, [key]: obj[key] === undefined ? value : Array.isArray(obj[key]) ? (obj[key] as Buffer[]).concat([value]) : [obj[key], value] }), {});
    const cases: Record<string, string | string[]>[] = [
      {},
      { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'hookline-config-version': '12', 'hookline-chained': 'filter' },
      { 'x-many': ['a', 'b', 'c'], 'x-empty': '' },
      { toString: 'v', constructor: ['p', 'q'] },
      JSON.parse('{"__proto__": "x", "a": "1"}') as Record<string, string>,
    ];
    const own = (o: object) => [Object.getPrototypeOf(o) === Object.prototype, Object.getOwnPropertyNames(o).map((k) => [k, (o as Record<string, unknown>)[k]])];
    for (const headers of cases) {
      const bytes = encodeRecord({ offsetDelta: 1, timestampDelta: 5, key: Buffer.from('k'), value: Buffer.from('v'), headers }).buffer;
      const decoder = new Decoder(bytes);
      decoder.readVarInt(); // the record's length
      const pairs = Object.keys(headers).flatMap((k) => [headers[k]!].flat().map((v): [string, Buffer] => [k, Buffer.from(v)]));
      expect(own(decodeRecord(decoder, { firstOffset: '0', firstTimestamp: '0' }).headers)).toEqual(own(reference(pairs)));
    }
  });

  // the broker checks every batch's CRC on produce (a wrong one is refused as corrupt), and the
  // consumer reads the records back with the patched decoder
  it('writes a request as its size, then header and payload, in one buffer: the bytes kafkajs wrote in two', async () => {
    interface KafkaEncoder {
      writeInt16(v: number): KafkaEncoder;
      writeInt32(v: number): KafkaEncoder;
      writeString(v: string | null): KafkaEncoder;
      writeBytes(v: Buffer): KafkaEncoder;
      writeEncoder(e: KafkaEncoder): KafkaEncoder;
      size(): number;
      buffer: Buffer;
    }
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const encodeRequest = require('kafkajs/src/protocol/request') as (r: unknown) => Promise<KafkaEncoder>;
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const Encoder = require('kafkajs/src/protocol/encoder') as new () => KafkaEncoder;
    for (const clientId of ['encoding-test', 'clïent-ü', null]) {
      for (const n of [0, 100, 70_000]) {
        const payload = new Encoder().writeBytes(randomBytes(n));
        const got = (await encodeRequest({ correlationId: 7, clientId, request: { apiKey: 0, apiVersion: 3, encode: async () => payload } })).buffer;
        // as kafkajs 2.2.4 composed it: the header and payload, then that behind its size
        const header = new Encoder().writeInt16(0).writeInt16(3).writeInt32(7).writeString(clientId).writeEncoder(payload);
        const size = Buffer.alloc(4);
        size.writeInt32BE(header.size());
        expect(got.equals(Buffer.concat([size, header.buffer]))).toBe(true);
      }
    }
  });

  it('produces batches the broker accepts and that read back exactly as sent', async () => {
    const kafka = createKafka(process.env.KAFKA_BROKERS!.split(','), 'encoding-test');
    const topic = `encoding-${uniqueSuffix()}`;
    await ensureTopics(kafka, [{ topic, partitions: 3 }]);
    const producer = kafka.producer({ createPartitioner: murmur2Partitioner });
    await producer.connect();
    const base = Date.now();
    const sent: (Message & { i: number })[] = Array.from({ length: 400 }, (_, i) => ({
      i,
      key: i % 9 === 0 ? null : i % 2 ? `key-${i}` : randomBytes(1 + (i % 40)),
      value: i % 13 === 0 ? null : randomBytes([0, 1, 127, 128, 1_000, 16_383, 16_384, 70_000][i % 8]!),
      headers: i % 3 === 0 ? { 'x-i': String(i), 'x-many': ['a', 'b'], 'x-more': ['c', 'd', 'e'], 'x-empty': '' } : { 'x-i': String(i) },
      // up to 100 days before now: deltas within a batch beyond 32 bits, small ones, and none at all
      // (the broker refuses timestamps more than an hour ahead)
      timestamp: i % 4 === 0 ? undefined : String(base - (i % 5) * 25 * 86_400_000 - i),
    }));
    try {
      for (let i = 0; i < sent.length; i += 57) {
        await producer.sendBatch({ acks: -1, topicMessages: [{ topic, messages: sent.slice(i, i + 57).map(({ i: _, ...m }) => m) }] });
      }
    } finally {
      await producer.disconnect();
    }

    // read up to the end of every partition; a re-delivery after a rebalance (or a request that
    // kafkajs sent again) may repeat a record, and every copy must still be exact
    const received = await readTopic(kafka, topic);

    const byIndex = new Map<string, typeof received>();
    for (const r of received) byIndex.set(String(r.headers['x-i']), [...(byIndex.get(String(r.headers['x-i'])) ?? []), r]);
    expect(byIndex.size).toBe(sent.length);
    for (const m of sent) {
      const copies = byIndex.get(String(m.i))!;
      expect(copies).toBeDefined();
      const key = m.key === null || m.key === undefined ? null : Buffer.isBuffer(m.key) ? m.key : Buffer.from(m.key);
      for (const r of copies) {
        expect(r.key === null ? null : r.key.toString('hex')).toBe(key === null ? null : key.toString('hex'));
        expect(r.value === null ? null : r.value.toString('hex')).toBe(m.value === null || m.value === undefined ? null : (m.value as Buffer).toString('hex'));
        expect(r.headers).toEqual(Object.fromEntries(Object.entries(m.headers!).map(([k, v]) => [k, Array.isArray(v) ? v.map((x) => Buffer.from(String(x))) : Buffer.from(String(v))])));
        if (m.timestamp !== undefined) expect(r.timestamp).toBe(m.timestamp);
      }
    }
  }, 60_000);
});
