import { Logger } from '../../core/log';
import { consumerSpec, topicNames } from '../../core/topics';
import { runSink, type RowWriter, type SinkTable } from '../../pipeline/sink/stage';
import { toLogEntry } from '../../platform/kafka/log-shipper';
import { AvroCodec } from '../../platform/avro/codec';
import { BatchingProducer } from '../../platform/kafka/batching-producer';
import { createKafka, ensureTopics } from '../../platform/kafka/client';
import { eventually } from '../support/service';
import { uniqueSuffix } from '../support/ids';

describe('ClickHouse sink under timer flushes', () => {
  it('inserts every committed row when a flush swaps the buffer while a batch is decoding', async () => {
    const suffix = uniqueSuffix();
    const topics = topicNames(`sinkrace${suffix}.`);
    const kafka = createKafka(process.env.KAFKA_BROKERS!.split(','), 'sink-race-test', { quiet: true });
    await ensureTopics(kafka, consumerSpec(topics, 'sink').reads.filter((t) => t !== topics.logs).map((topic) => ({ topic, partitions: 1 })).concat([{ topic: topics.logs, partitions: 3 }]));
    const codec = AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!);
    await codec.register({ [topics.logs]: 'LogEntry' });
    // decoding yields for longer than the flush interval, so a timer flush falls inside every batch
    // (every record decodes through the promise, as one whose schema this process has not met yet)
    const slowCodec = Object.create(codec) as AvroCodec;
    slowCodec.decodeNow = () => undefined;
    slowCodec.decode = async (name, value) => {
      await new Promise((r) => setTimeout(r, 15));
      return codec.decode(name, value);
    };
    const inserted: string[] = [];
    const writer: RowWriter = {
      async insert(table: SinkTable, rows: Record<string, unknown>[]) {
        // like a real insert, the rows are serialised when the call is made
        if (table === 'logs') inserted.push(...rows.map((r) => String(r.id)));
        await new Promise((r) => setTimeout(r, 5));
      },
    };
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    const admin = kafka.admin();
    await admin.connect();
    const groupPrefix = `sinkrace${suffix}.`;
    const sink = await runSink(topics, writer, { kafka, outputs: new BatchingProducer(producer), codec: slowCodec, log: new Logger('error'), groupPrefix }, { batchRows: 10_000, flushMs: 5 });
    try {
      const produced: string[] = [];
      for (let wave = 0; wave < 4; wave++) {
        const entries = Array.from({ length: 30 }, (_, i) => toLogEntry({ ts: new Date().toISOString(), level: 'info', msg: `wave ${wave} line ${i}`, tenant_id: `t${i % 3}` }));
        produced.push(...entries.map((e) => e.id));
        await producer.send({ topic: topics.logs, acks: -1, messages: await Promise.all(entries.map(async (e) => ({ key: e.tenant_id, value: await codec.encode(topics.logs, 'LogEntry', e) }))) });
        await new Promise((r) => setTimeout(r, 100));
      }
      const high = await admin.fetchTopicOffsets(topics.logs);
      await eventually('sink commits every log record', async () => {
        const [committed] = await admin.fetchOffsets({ groupId: `${groupPrefix}sink`, topics: [topics.logs] });
        const done = high.every((h) => h.high === '0' || committed?.partitions.find((p) => p.partition === h.partition)?.offset === h.high);
        return done ? true : undefined;
      });
      // everything committed is inserted, once
      expect(inserted.length).toBe(produced.length);
      expect([...inserted].sort()).toEqual([...produced].sort());
    } finally {
      await sink.stop();
      await producer.disconnect();
      await admin.disconnect();
    }
  });
});
