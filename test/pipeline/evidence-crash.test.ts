import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RFC9162 } from '@transmute/rfc9162';
import type { Kafka, Producer } from 'kafkajs';
import { leafBytes, leafTime } from '../../core/evidence-leaf';
import { newId } from '../../core/ids';
import { consistencyProof, leafHash, nodeKey, rootOf, verifyConsistency } from '../../core/merkle';
import { generateSignerKey, openNote, parseCheckpoint, parseSignerKey } from '../../core/signed-note';
import { topicNames } from '../../core/topics';
import { AvroCodec } from '../../platform/avro/codec';
import type { DeliveryOutcome, EvidenceBatch } from '../../platform/avro/records';
import { createKafka } from '../../platform/kafka/client';
import { readLastRecord, readTopic } from '../../platform/kafka/topic-table';
import { uniqueSuffix } from '../support/ids';
import { signalGroup, spawnService, stopService, waitForGroupGone, type ServiceProcess } from '../support/service-process';
import { randomKek } from '../support/keyring';

const { verifyConsistencyProof } = RFC9162;

const READY = /^\{[^\n]*"msg":"service ready"[^\n]*\}$/m;

/** Every sealed batch of the log, in order. */
async function readLog(kafka: Kafka, codec: AvroCodec, topic: string): Promise<EvidenceBatch[]> {
  const records = await readTopic(kafka, topic, 60_000);
  return Promise.all(records.map((r) => codec.decode('EvidenceBatch', r.value!)));
}

const isPowerOfTwo = (n: number) => (n & (n - 1)) === 0;

/**
 * The evidence stage, alone in its own process, is killed with SIGKILL twice while outcomes
 * keep arriving and batches are half gathered. Afterwards the log must hold every outcome
 * exactly once, with contiguous indexes, and every checkpoint must extend the one before the
 * crash.
 */
describe('evidence sequencer crash', () => {
  const suffix = uniqueSuffix();
  const prefix = `t${suffix}.`;
  const topics = topicNames(prefix);
  const dataDir = mkdtempSync(path.join(process.env.HOOKLINE_TEST_DIR ?? tmpdir(), 'evidence-crash-'));
  const skey = generateSignerKey(`test.example/evidence/${suffix}`);
  const signer = parseSignerKey(skey);
  const env = {
    ...process.env,
    TOPIC_PREFIX: prefix,
    DATA_DIR: dataDir,
    STAGES: 'evidence',
    KAFKA_PARTITIONS: '2',
    KAFKA_REPLICATION_FACTOR: '1',
    BOOTSTRAP_DEMO_TENANT: 'false',
    LOG_LEVEL: 'info',
    EVIDENCE_SIGNING_KEY: skey,
    SECRETS_KEK: randomKek(),
    EVIDENCE_BATCH_SIZE: '400',
    EVIDENCE_BATCH_AGE_MS: '300',
  };
  let kafka: Kafka;
  let producer: Producer;
  let codec: AvroCodec;
  let proc: ServiceProcess | undefined;

  beforeAll(async () => {
    kafka = createKafka(process.env.KAFKA_BROKERS!.split(','), `evidence-crash-${suffix}`);
    codec = AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!);
  });
  afterAll(async () => {
    if (proc) await stopService(proc);
    await producer?.disconnect();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const start = async () => {
    proc = spawnService(env);
    await proc.waitForOutput(READY, 60_000);
  };
  const logSize = async () => {
    const last = await readLastRecord(kafka, topics.evidenceLeaves);
    return last ? (await codec.decode('EvidenceBatch', last.value)).tree_size : 0;
  };

  it('leaves no gap and no duplicate, and stays consistent with the checkpoint before each crash', async () => {
    await start();
    // the child created the topics and registered the schemas; register the same ones here
    await codec.register({ [topics.deliveryCompleted]: 'DeliveryOutcome', [topics.evidenceLeaves]: 'EvidenceBatch' });
    // idempotent: a produce request that fails for one partition is sent again whole by kafkajs,
    // and without sequence numbers the broker would append the other partition's outcomes twice,
    // two distinct outcomes for the log (the input must hold each outcome once for this test)
    producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const sent: string[] = [];
    let sending = true;
    const feed = (async () => {
      while (sending) {
        const outcomes: DeliveryOutcome[] = Array.from({ length: 50 }, (_, i) => ({
          delivery_id: newId('delivery'),
          event_id: newId('event'),
          tenant_id: `tenant-${suffix}`,
          destination_id: `dst_${(i % 3).toString().padStart(26, '0')}`,
          correlation_id: 'crash',
          attempt_number: 1,
          status: i % 7 === 0 ? 'retrying' : 'delivered',
          response_code: i % 7 === 0 ? 503 : 200,
          attempted_at: Date.now(),
          duration_ms: 3,
          error_message: null,
          body_sha256: 'cd'.repeat(32),
          next_attempt_at: null,
        }));
        const values = await Promise.all(outcomes.map((o) => codec.encode(topics.deliveryCompleted, 'DeliveryOutcome', o)));
        await producer.send({ topic: topics.deliveryCompleted, acks: -1, messages: values.map((value, i) => ({ key: outcomes[i]!.destination_id, value })) });
        sent.push(...outcomes.map((o) => o.delivery_id));
        await new Promise((r) => setTimeout(r, 50));
      }
    })();

    const beforeCrash: EvidenceBatch[] = [];
    for (const threshold of [1_500, 4_000]) {
      // kill once batches have been sealed, while outcomes are still arriving and a batch is being gathered
      while ((await logSize()) < threshold) await new Promise((r) => setTimeout(r, 100));
      expect(signalGroup(proc!.pgid, 'SIGKILL')).toBe(true);
      await waitForGroupGone(proc!.pgid);
      const last = await readLastRecord(kafka, topics.evidenceLeaves);
      const sealed = await codec.decode('EvidenceBatch', last!.value);
      beforeCrash.push(sealed);
      await new Promise((r) => setTimeout(r, 500));
      await start();
      // the new process resumes exactly at the last sealed batch
      const resumed = await proc!.waitForOutput(/^\{[^\n]*"msg":"evidence log resumed"[^\n]*\}$/m, 30_000);
      expect(JSON.parse(resumed[0]).tree_size).toBe(sealed.tree_size);
    }
    // outcomes kept arriving through both crashes; now let the last ones in
    await new Promise((r) => setTimeout(r, 1_000));
    sending = false;
    await feed;
    const total = sent.length;
    const deadline = Date.now() + 90_000;
    while ((await logSize()) < total && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));

    const batches = await readLog(kafka, codec, topics.evidenceLeaves);
    const leaves = batches.flatMap((b) => b.leaves);
    // no gap, no duplicate: indexes run 0..n-1 batch after batch, each outcome exactly once
    let size = 0;
    for (const b of batches) {
      expect(b.first_index).toBe(size);
      expect(b.leaves.map((l) => l.leaf_index)).toEqual(Array.from({ length: b.leaves.length }, (_, i) => size + i));
      size = b.tree_size;
    }
    expect(leaves).toHaveLength(total);
    expect(new Set(leaves.map((l) => l.delivery_id)).size).toBe(total);
    expect(new Set(leaves.map((l) => l.delivery_id))).toEqual(new Set(sent));

    // every leaf hash is the documented encoding, and the final root is the root of all of them
    const hashes = leaves.map((l) => leafHash(leafBytes({ ...l, attempted_at: leafTime(l.attempted_at) })));
    expect(leaves.map((l) => l.leaf_hash.toString('hex'))).toEqual(hashes.map((h) => h.toString('hex')));
    const final = batches.at(-1)!;
    expect(final.root_hash.toString('hex')).toBe(rootOf(hashes).toString('hex'));

    // every checkpoint is signed, and each pre-crash checkpoint is a prefix of the final tree
    const verifier = { name: signer.name, keyId: signer.keyId, publicKey: signer.publicKey };
    for (const b of batches) {
      const c = parseCheckpoint(openNote(b.checkpoint, verifier));
      expect({ origin: c.origin, size: c.size, root: c.root.toString('hex') }).toEqual({ origin: signer.name, size: b.tree_size, root: b.root_hash.toString('hex') });
    }
    const nodes = new Map(batches.flatMap((b) => b.nodes.map((n) => [nodeKey({ level: n.level, index: n.index }), n.hash] as const)));
    const get = (n: { level: number; index: number }) => nodes.get(nodeKey(n))!;
    for (const old of beforeCrash) {
      expect(batches.some((b) => b.tree_size === old.tree_size && b.root_hash.equals(old.root_hash))).toBe(true);
      const proof = consistencyProof(old.tree_size, final.tree_size, get);
      expect(verifyConsistency(old.tree_size, final.tree_size, proof, old.root_hash, final.root_hash)).toBe(true);
      // and the independent verifier agrees (it skips RFC 9162 step 2: prepend the old root for a power of two)
      const pathForTransmute = isPowerOfTwo(old.tree_size) ? [old.root_hash, ...proof] : proof;
      expect(await verifyConsistencyProof(old.root_hash, final.root_hash, { log_id: '', tree_size_1: old.tree_size, tree_size_2: final.tree_size, consistency_path: pathForTransmute })).toBe(true);
    }
  }, 240_000);
});
