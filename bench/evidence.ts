/**
 * Evidence log benchmark: leaves sealed per second through Kafka (against a raw kafkajs
 * consume -> produce pass-through of the same records in the same run), delivery -> confirmed
 * latency at a steady rate, and proof latency from stored subtree hashes at 1 million leaves
 * (against a bare ClickHouse point read of the same table).
 *
 *   npm run bench:evidence            (LEAVES=1000000 SEAL_OUTCOMES=20000 RATE=1000 by default)
 *
 * EVIDENCE_RESULTS names the results file (default bench/results/evidence.json), so that the
 * suite (bench/run.ts) can run it without replacing the stand-alone results.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Kafka } from 'kafkajs';
import { loadConfig } from '../core/config';
import { RUN_KEK } from './lib/service';
import { Logger } from '../core/log';
import { newId } from '../core/ids';
import { CompactRange, consistencyProofNodes, inclusionProofNodes, verifyConsistency, verifyInclusion } from '../core/merkle';
import { generateSignerKey, parseSignerKey } from '../core/signed-note';
import { evidenceWriterIdOf, topicNames } from '../core/topics';
import { startLocalKafka } from '../infra/kafka/local-kafka';
import { startSchemaRegistry } from '../infra/registry/server';
import { AvroCodec } from '../platform/avro/codec';
import type { DeliveryOutcome } from '../platform/avro/records';
import { openClickHouse } from '../platform/clickhouse/client';
import { migrate } from '../platform/clickhouse/migrate';
import { EvidenceStore } from '../platform/evidence/store';
import { createKafka, ensureTopics } from '../platform/kafka/client';
import { KafkaFencedWriter } from '../platform/kafka/fenced-writer';
import { rawLoop } from './raw-kafkajs';
import { runEvidenceSequencer } from '../pipeline/evidence/sequencer';
import type { RunnerDeps } from '../pipeline/runtime/run-stage';
import { BatchingProducer } from '../platform/kafka/batching-producer';
import { INSERT_COLUMNS, runSink } from '../pipeline/sink/stage';
import { topology } from '../service/topology';

const LEAVES = Number(process.env.LEAVES ?? 1_000_000);
const SEAL_OUTCOMES = Number(process.env.SEAL_OUTCOMES ?? 20_000);
const RATE = Number(process.env.RATE ?? 1_000);
const PROOFS = 300;

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};
const summary = (xs: number[]) => ({ p50: +quantile(xs, 0.5).toFixed(2), p99: +quantile(xs, 0.99).toFixed(2), max: +Math.max(...xs).toFixed(2), n: xs.length });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function outcome(i: number, attemptedAt = Date.now()): DeliveryOutcome {
  return {
    delivery_id: newId('delivery'),
    event_id: newId('event'),
    tenant_id: 'bench',
    destination_id: `dst_${String(i % 16).padStart(26, '0')}`,
    correlation_id: 'bench',
    attempt_number: 1,
    status: 'delivered',
    response_code: 200,
    attempted_at: attemptedAt,
    duration_ms: 2,
    error_message: null,
    body_sha256: randomBytes(32).toString('hex'),
    next_attempt_at: null,
  };
}

async function produceAll(kafka: Kafka, codec: AvroCodec, topic: string, values: DeliveryOutcome[]): Promise<void> {
  const producer = kafka.producer();
  await producer.connect();
  for (let i = 0; i < values.length; i += 1_000) {
    const chunk = values.slice(i, i + 1_000);
    const encoded = await Promise.all(chunk.map((o) => codec.encode(topic, 'DeliveryOutcome', o)));
    await producer.send({ topic, acks: -1, messages: encoded.map((value, j) => ({ key: chunk[j]!.destination_id, value })) });
  }
  await producer.disconnect();
}

/** Raw kafkajs: consume every record of `from` and produce it to `to`, acks=all, committing per batch. */
async function passThrough(kafka: Kafka, from: string, to: string, count: number): Promise<number> {
  const producer = kafka.producer();
  await producer.connect();
  const consumer = kafka.consumer({ groupId: `bench-pass-${randomBytes(4).toString('hex')}`, maxWaitTimeInMs: 50 });
  await consumer.connect();
  await consumer.subscribe({ topic: from, fromBeginning: true });
  let seen = 0;
  let started = 0;
  const done = new Promise<number>((resolve) => {
    void rawLoop(consumer, {
      to: { producer, topic: to },
      fetched: () => {
        started ||= performance.now();
      },
      done: (messages) => {
        seen += messages.length;
        if (seen >= count) resolve(performance.now() - started);
      },
    });
  });
  const ms = await done;
  await consumer.disconnect();
  await producer.disconnect();
  return (count / ms) * 1000;
}

async function main() {
  const dir = mkdtempSync(path.join(tmpdir(), 'hookline-bench-evidence-'));
  const log = new Logger('error');
  // the sink waits as long as the service's settings say (SINK_FLUSH_MS, SINK_BATCH_ROWS)
  const config = loadConfig({ SECRETS_KEK: RUN_KEK, ...process.env });
  const results: Record<string, unknown> = { leaves_at_proof_time: LEAVES, seal_outcomes: SEAL_OUTCOMES, steady_rate_per_s: RATE };
  const kafkaServer = await startLocalKafka(path.join(dir, 'kafka'), { heap: '1g' });
  const kafka = createKafka(kafkaServer.brokers, 'bench-evidence');
  const registry = await startSchemaRegistry({ kafka, topic: '_schemas' });
  const clickhouse = openClickHouse({ url: undefined, user: 'default', password: '', dataDir: dir });
  try {
    const codec = AvroCodec.connect(registry.url);

    // 1. leaves sealed per second, against a raw pass-through of the same records
    const topics = topicNames('bench.');
    const { specs, records } = topology(topics, 3);
    const passIn = 'bench.pass.in';
    const passOut = 'bench.pass.out';
    await ensureTopics(kafka, [...specs, { topic: passIn, partitions: 3 }, { topic: passOut, partitions: 3 }], 1);
    await codec.register({ ...records, [passIn]: 'DeliveryOutcome' });
    const outcomes = Array.from({ length: SEAL_OUTCOMES }, (_, i) => outcome(i));
    await produceAll(kafka, codec, passIn, outcomes);
    const baseline = await passThrough(kafka, passIn, passOut, SEAL_OUTCOMES);
    await produceAll(kafka, codec, topics.deliveryCompleted, outcomes);
    const producer = kafka.producer();
    await producer.connect();
    const deps: RunnerDeps = { kafka, outputs: new BatchingProducer(producer), codec, log, groupPrefix: 'bench.' };
    const signer = parseSignerKey(generateSignerKey('bench.example/evidence'));
    const t0 = performance.now();
    const writer = new KafkaFencedWriter(kafka, evidenceWriterIdOf(deps.groupPrefix));
    const sequencer = await runEvidenceSequencer(topics, deps, { batchSize: 1_000, batchAgeMs: 200, origin: signer.name, signer, writer });
    while (sequencer.treeSize() < SEAL_OUTCOMES) await sleep(20);
    const sealMs = performance.now() - t0;
    const sealedPerSecond = (SEAL_OUTCOMES / sealMs) * 1000;
    results.seal = { leaves_per_s: Math.round(sealedPerSecond), baseline_pass_through_per_s: Math.round(baseline), ratio: +(sealedPerSecond / baseline).toFixed(2), note: 'one Kafka hop (the sequencer reads deliveries.completed) as for the baseline; includes the group join and the log-tail read at start' };

    // 2. delivery -> confirmed (acked after the ClickHouse insert) at a steady rate
    await migrate(clickhouse, 'bench_live');
    const sentAt = new Map<string, number>();
    const latencies: number[] = [];
    // an `acked` row is written once the evidence it stands on is inserted: seen at its insert
    const sink = await runSink(topics, {
      insert: async (table, rows) => {
        await clickhouse.insert({ table: `bench_live.${table}`, values: rows, format: 'JSONEachRow', columns: INSERT_COLUMNS[table] as [string, ...string[]] | undefined });
        if (table !== 'event_transitions') return;
        const now = performance.now();
        for (const r of rows) {
          const at = r.state === 'acked' ? sentAt.get(String(r.delivery_id)) : undefined;
          if (at !== undefined) latencies.push(now - at);
        }
      },
    }, deps, { batchRows: config.sinkBatchRows, flushMs: config.sinkFlushMs });
    const steadyProducer = kafka.producer();
    await steadyProducer.connect();
    const seconds = 15;
    const perTick = Math.max(1, Math.round(RATE / 20));
    // warm-up: every consumer group joined and one round trip done before anything is measured
    for (let warm = 0; ; warm++) {
      const o = outcome(warm);
      sentAt.set(o.delivery_id, performance.now());
      await steadyProducer.send({ topic: topics.deliveryCompleted, acks: -1, messages: [{ key: o.destination_id, value: await codec.encode(topics.deliveryCompleted, 'DeliveryOutcome', o) }] });
      const t = Date.now();
      while (latencies.length === 0 && Date.now() - t < 2_000) await sleep(20);
      if (latencies.length > 0) break;
    }
    await sleep(1_000);
    latencies.length = 0;
    sentAt.clear();
    for (let tick = 0; tick < seconds * 20; tick++) {
      const batch = Array.from({ length: perTick }, (_, i) => outcome(i));
      const encoded = await Promise.all(batch.map((o) => codec.encode(topics.deliveryCompleted, 'DeliveryOutcome', o)));
      const now = performance.now();
      for (const o of batch) sentAt.set(o.delivery_id, now);
      await steadyProducer.send({ topic: topics.deliveryCompleted, acks: -1, messages: encoded.map((value, j) => ({ key: batch[j]!.destination_id, value })) });
      await sleep(50);
    }
    const expected = sentAt.size;
    const deadline = Date.now() + 30_000;
    while (latencies.length < expected && Date.now() < deadline) await sleep(100);
    results.confirm_latency_ms = { ...summary(latencies), offered: expected, note: `produce of the outcome -> its acked row inserted into ClickHouse (after its sealed evidence), ${RATE}/s for ${seconds} s` };
    await Promise.all([steadyProducer.disconnect(), sink.stop(), sequencer.stop()]);
    await producer.disconnect();

    // 3. proofs at LEAVES leaves: nodes stored as the sink stores them, proofs read from them
    await migrate(clickhouse, 'bench_proofs');
    const range = new CompactRange();
    // roots of the older sizes the consistency proofs start from, taken while the tree grows
    const olderRoots = new Map(Array.from({ length: 100 }, () => [1 + Math.floor(Math.random() * (LEAVES - 1)), Buffer.alloc(0)] as [number, Buffer]));
    let rows: Record<string, unknown>[] = [];
    const buildStart = performance.now();
    for (let i = 0; i < LEAVES; i++) {
      for (const n of range.append(randomBytes(32))) rows.push({ level: n.level, idx: n.index, hash_hex: n.hash.toString('hex') });
      if (olderRoots.has(range.size)) olderRoots.set(range.size, range.root());
      if (rows.length >= 200_000) {
        await clickhouse.insert({ table: 'bench_proofs.evidence_nodes', values: rows, format: 'JSONEachRow', columns: ['level', 'idx', 'hash_hex'] });
        rows = [];
      }
    }
    if (rows.length > 0) await clickhouse.insert({ table: 'bench_proofs.evidence_nodes', values: rows, format: 'JSONEachRow', columns: ['level', 'idx', 'hash_hex'] });
    const buildMs = performance.now() - buildStart;
    const root = range.root();
    const store = new EvidenceStore(clickhouse, 'bench_proofs');
    const inclusion: number[] = [];
    const reads: number[] = [];
    const point: number[] = [];
    for (let i = 0; i < PROOFS; i++) {
      const index = Math.floor(Math.random() * LEAVES);
      const t = performance.now();
      const proof = await store.inclusionProof(index, LEAVES);
      inclusion.push(performance.now() - t);
      reads.push(inclusionProofNodes(index, LEAVES).length);
      const leaf = await store.nodes([{ level: 0, index }]);
      if (!verifyInclusion(leaf.get(`0/${index}`)!, index, LEAVES, proof, root)) throw new Error(`inclusion proof of ${index} does not verify`);
      const p = performance.now();
      const rs = await clickhouse.query({ query: `SELECT hex(hash) FROM bench_proofs.evidence_nodes WHERE level = 0 AND idx = {i:UInt64}`, query_params: { i: index }, format: 'JSONEachRow' });
      await rs.json();
      point.push(performance.now() - p);
    }
    const consistency: number[] = [];
    for (const [m, mRoot] of olderRoots) {
      const t = performance.now();
      const proof = await store.consistencyProof(m, LEAVES);
      consistency.push(performance.now() - t);
      if (!verifyConsistency(m, LEAVES, proof, mRoot, root)) throw new Error(`consistency proof ${m} -> ${LEAVES} does not verify`);
    }
    results.proofs = {
      build_ms: Math.round(buildMs),
      inclusion_ms: summary(inclusion),
      baseline_point_read_ms: summary(point),
      inclusion_p99_over_point_read_p99: +(quantile(inclusion, 0.99) / quantile(point, 0.99)).toFixed(2),
      nodes_read_per_inclusion_proof: { max: Math.max(...reads), log2_n: Math.ceil(Math.log2(LEAVES)) },
      consistency_ms: summary(consistency),
      consistency_nodes_max: Math.max(...Array.from({ length: 50 }, () => consistencyProofNodes(1 + Math.floor(Math.random() * (LEAVES - 1)), LEAVES).length)),
    };
  } finally {
    await clickhouse.close().catch(() => undefined);
    await registry.close().catch(() => undefined);
    await kafkaServer.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
  const out = process.env.EVIDENCE_RESULTS ?? path.join(__dirname, 'results', 'evidence.json');
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
