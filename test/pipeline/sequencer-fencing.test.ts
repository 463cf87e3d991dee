import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import { RFC9162 } from '@transmute/rfc9162';
import { verifyConsistency } from '../../core/merkle';
import { generateSignerKey, parseSignerKey } from '../../core/signed-note';
import { AvroCodec } from '../../platform/avro/codec';
import type { EvidenceBatch } from '../../platform/avro/records';
import { assertSignsLog } from '../../platform/evidence/log-key';
import { readTopic } from '../../platform/kafka/topic-table';
import { destinationWithIngester, sendEvent, waitForStates } from '../support/flow';
import { startReceiver, type Receiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';
import { signalGroup, spawnService, stopService, type ServiceProcess } from '../support/service-process';

// an independent RFC 9162 consistency verifier beside the project's own
const { verifyConsistencyProof } = RFC9162;

const RESUMED = /^(?=[^\n]*"msg":"evidence log resumed")\{[^\n]*"partitions":[1-9][^\n]*\}$/m;
const FENCED = /^\{[^\n]*"msg":"evidence log writer fenced[^\n]*\}$/m;
const every = (pattern: RegExp, text: string): string[] => text.match(new RegExp(pattern.source, 'gm')) ?? [];

/** The term of the newest takeover a sequencer process logged. */
function lastTerm(p: ServiceProcess): number {
  const lines = every(RESUMED, p.stdout());
  const last = lines.at(-1);
  if (!last) throw new Error('the process never took the log over');
  return JSON.parse(last).fencing_token as number;
}

const isPowerOfTwo = (n: number) => (n & (n - 1)) === 0;

/**
 * The owner of the evidence log is stopped (SIGSTOP) with leaves in hand, long enough for its
 * group to give the log to a standby, which takes it over and appends. When the deposed owner
 * wakes, its seal is due and it still believes it owns the log: its append must be refused by
 * the broker, and the log must read as one history, with a new term from the takeover on.
 */
describe('a deposed evidence sequencer that wakes up', () => {
  let svc: TestService;
  let r: Receiver;
  let owner: ServiceProcess | undefined;
  let standby: ServiceProcess | undefined;
  const key = generateSignerKey('hookline.test/fenced-sequencers');

  beforeAll(async () => {
    // this process runs every stage but evidence; two others run evidence alone
    [svc, r] = await Promise.all([startTestService({ EVIDENCE_SIGNING_KEY: key, STAGES: 'api,validate,filter,route,deliver,retry,sink' }), startReceiver()]);
  });
  afterAll(async () => {
    for (const p of [owner, standby]) if (p) signalGroup(p.pgid, 'SIGCONT');
    await Promise.all([owner, standby].map((p) => (p ? stopService(p) : undefined)));
    await Promise.all([svc?.stop(), r?.close()]);
  });

  const sequencer = (name: string, batchAgeMs: number) =>
    spawnService({
      ...process.env,
      STAGES: 'evidence',
      TOPIC_PREFIX: svc.config.topicPrefix,
      DATA_DIR: mkdtempSync(path.join(svc.config.dataDir, `${name}-`)),
      KAFKA_REPLICATION_FACTOR: '1',
      KAFKA_PARTITIONS: '2',
      BOOTSTRAP_DEMO_TENANT: 'false',
      EVIDENCE_SIGNING_KEY: key,
      EVIDENCE_BATCH_SIZE: '2000',
      EVIDENCE_BATCH_AGE_MS: String(batchAgeMs),
      LOG_LEVEL: 'info',
    });

  it('cannot append once another has taken over: one log, terms rising at the takeover, consistent across it', async () => {
    const codec = AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!);
    const logBatches = async (): Promise<EvidenceBatch[]> => {
      const records = await readTopic(svc.service.kafka, svc.service.topics.evidenceLeaves, 60_000);
      return Promise.all(records.map((rec) => codec.decode('EvidenceBatch', rec.value!)));
    };
    const logSize = async () => (await logBatches()).at(-1)?.tree_size ?? 0;

    // the owner seals slowly, so that what it reads sits in its buffer for seconds
    const ownerBatchAgeMs = 6_000;
    owner = sequencer('owner', ownerBatchAgeMs);
    await owner.waitForOutput(RESUMED, 60_000);
    standby = sequencer('standby', 200);
    await standby.waitForOutput(/"msg":"service ready"/, 60_000);
    const { hookUrl } = await destinationWithIngester(svc, 'fenced', r.url);
    const send = async (n: number, round: string) => {
      const ids: string[] = [];
      for (let i = 0; i < n; i++) ids.push(await sendEvent(hookUrl, { round, i }));
      return ids;
    };
    const sealed = async (ids: string[]) => {
      for (const id of ids) await waitForStates(svc, id, ['delivered', 'acked'], 90_000);
    };

    // 1. the owner seals a first checkpoint; the standby joined and took nothing from it
    const first = await send(4, 'first');
    await sealed(first);
    expect(standby.stdout()).not.toMatch(RESUMED);
    const before = (await svc.api('GET', `/v1/tenants/${svc.tenantId}/evidence-log`)).body.latest_checkpoint as { tree_size: number; root_hash: string };
    expect(before.tree_size).toBe(4);

    // 2. outcomes reach the owner, and before its seal is due it stops: once the sink has read
    //    them from deliveries.completed they are there for the owner too, whose fetch may wait
    //    half its batch age for more before it returns them, and it gets a second more (timed
    //    from the receiver's requests, a loaded machine's slow produce ate that margin)
    const held = await send(3, 'held');
    await r.waitForRequests(first.length + held.length, 30_000);
    for (const id of held) await waitForStates(svc, id, ['delivered'], 30_000);
    await new Promise((res) => setTimeout(res, ownerBatchAgeMs / 2 + 1_000));
    const ownerTerm = lastTerm(owner);
    expect(signalGroup(owner.pgid, 'SIGSTOP')).toBe(true);
    expect(await logSize()).toBe(4);

    // 3. past the owner's session the standby takes the log over in a new term, and seals
    //    what the owner held and what follows
    await standby.waitForOutput(RESUMED, 60_000);
    const standbyTerm = lastTerm(standby);
    expect(standbyTerm).toBeGreaterThan(ownerTerm);
    const after = await send(3, 'after');
    await sealed([...held, ...after]);
    const sizeAtWake = await logSize();
    expect(sizeAtWake).toBe(10);

    // 4. the deposed owner wakes with its seal overdue: the broker refuses the append
    expect(signalGroup(owner.pgid, 'SIGCONT')).toBe(true);
    const [fenced] = await owner.waitForOutput(FENCED, 60_000);
    expect(JSON.parse(fenced)).toMatchObject({ level: 'warn', fencing_token: ownerTerm, dropped_leaves: 3 });
    const late = await send(2, 'late');
    await sealed(late);
    // the standby kept the log (its term may rise again at the rebalance the woken process
    // causes); the woken process joined with no term and took nothing; it warned once
    expect(lastTerm(standby)).toBeGreaterThanOrEqual(standbyTerm);
    expect(every(RESUMED, owner.stdout().slice(owner.stdout().indexOf(fenced)))).toEqual([]);
    expect(every(FENCED, owner.stdout())).toHaveLength(1);

    // 5. one log: indexes 0..n-1, each batch where the one before ended, terms never falling
    //    and rising at the takeover, nothing in the owner's term after it
    const batches = await logBatches();
    let size = 0;
    let token = 0;
    for (const b of batches) {
      expect(b.first_index).toBe(size);
      expect(b.leaves.map((l) => l.leaf_index)).toEqual(Array.from({ length: b.leaves.length }, (_, i) => size + i));
      expect(b.fencing_token).toBeGreaterThanOrEqual(token);
      size = b.tree_size;
      token = b.fencing_token!;
    }
    expect(size).toBe(12);
    const takeover = batches.findIndex((b) => b.fencing_token === standbyTerm);
    expect(batches[takeover]!.first_index).toBe(4);
    expect(batches.slice(0, takeover).every((b) => b.fencing_token! <= ownerTerm)).toBe(true);
    expect(batches.slice(takeover).every((b) => b.fencing_token! >= standbyTerm)).toBe(true);
    const leaves = batches.flatMap((b) => b.leaves);
    expect(new Set(leaves.map((l) => `${l.delivery_id}/${l.attempt_number}`)).size).toBe(leaves.length);
    expect(new Set(leaves.map((l) => l.event_id))).toEqual(new Set([...first, ...held, ...after, ...late]));

    // the query copy holds each checkpoint with its term
    const rs = await svc.clickhouse.query({ query: `SELECT tree_size, fencing_token FROM ${svc.config.clickhouseDatabase}.evidence_checkpoints FINAL ORDER BY tree_size`, format: 'JSONEachRow' });
    const stored = await rs.json<{ tree_size: string; fencing_token: string }>();
    expect(stored.map((c) => [Number(c.tree_size), Number(c.fencing_token)])).toEqual(batches.map((b) => [b.tree_size, b.fencing_token]));

    // 6. the checkpoint before the failover is a prefix of the newest after it
    const proof = (await svc.api('GET', `/v1/tenants/${svc.tenantId}/evidence-log/consistency?from=${before.tree_size}&to=${size}`)).body;
    expect(proof.to.tree_size).toBe(size);
    const oldRoot = Buffer.from(before.root_hash, 'hex');
    const newRoot = Buffer.from(proof.to.root_hash as string, 'hex');
    const path_ = (proof.consistency_proof as string[]).map((h) => Buffer.from(h, 'hex'));
    expect(newRoot.equals(batches.at(-1)!.root_hash)).toBe(true);
    expect(verifyConsistency(before.tree_size, size, path_, oldRoot, newRoot)).toBe(true);
    // transmute leaves out RFC 9162's step 2 (prepend the old root when its size is a power of two)
    const forTransmute = isPowerOfTwo(before.tree_size) ? [oldRoot, ...path_] : path_;
    expect(await verifyConsistencyProof(oldRoot, newRoot, { log_id: '', tree_size_1: before.tree_size, tree_size_2: size, consistency_path: forTransmute })).toBe(true);

    // 7. a process whose key (generated under its data dir) did not sign this log is refused at start
    const topic = svc.service.topics.evidenceLeaves;
    await expect(assertSignsLog(svc.service.kafka, codec, topic, parseSignerKey(generateSignerKey('hookline.test/fenced-sequencers')))).rejects.toThrow(/EVIDENCE_SIGNING_KEY is unset and this process's evidence key \(hookline\.test\/fenced-sequencers\+[0-9a-f]{8}, kept under DATA_DIR\) is not the key that signed this deployment's evidence log \(hookline\.test\/fenced-sequencers\+[0-9a-f]{8}\)/);
    await expect(assertSignsLog(svc.service.kafka, codec, topic, parseSignerKey(key))).resolves.toBeUndefined();
  }, 300_000);
});
