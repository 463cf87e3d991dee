import { existsSync, mkdtempSync } from 'node:fs';
import path from 'node:path';
import { startReceiver, type Receiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';
import { spawnScript, type Spawned } from '../support/process';
import { destinationWithIngester, sendEvent, waitForStates } from '../support/flow';
import { generateSignerKey } from '../../core/signed-note';
import { randomEvidenceKey } from '../support/keyring';
import { rootOf } from '../../core/merkle';
import { signalGroup, spawnService, stopService, waitForGroupGone, type ServiceProcess } from '../support/service-process';

/** A stage run alone in its own process (`--stage`), beside the others, as for scale-out. */
describe('stages in separate processes', () => {
  let svc: TestService;
  let r: Receiver;
  let deliverer: Spawned | undefined;

  beforeAll(async () => {
    // this process: API, validate, filter, route, evidence and sink; the other: deliver and retry
    [svc, r] = await Promise.all([startTestService({ STAGES: 'api,validate,filter,route,evidence,sink', EVIDENCE_SIGNING_KEY: randomEvidenceKey() }), startReceiver()]);
  });
  afterAll(async () => {
    if (deliverer && deliverer.child.exitCode === null) {
      deliverer.child.kill('SIGTERM');
      await deliverer.exited;
    }
    await Promise.all([svc?.stop(), r?.close()]);
  });

  it('delivers through a deliver stage running alone, which opens no ClickHouse engine', async () => {
    const { hookUrl } = await destinationWithIngester(svc, 'scaled', r.url);
    const eventId = await sendEvent(hookUrl, { scaled: true });
    // nothing delivers yet: no process of this deployment runs the deliver stage
    await new Promise((res) => setTimeout(res, 1000));
    expect(r.requests).toHaveLength(0);

    const dataDir = mkdtempSync(path.join(svc.config.dataDir, 'deliverer-'));
    deliverer = spawnScript('service/main.ts', ['--stage', 'deliver', '--stage', 'retry'], {
      ...process.env,
      TOPIC_PREFIX: svc.config.topicPrefix,
      DATA_DIR: dataDir,
      KAFKA_REPLICATION_FACTOR: '1',
      KAFKA_PARTITIONS: '2',
      BOOTSTRAP_DEMO_TENANT: 'false',
      LOG_LEVEL: 'info',
      // the receiver listens on loopback, which production refuses
      DESTINATION_ALLOWED_NETWORKS: 'loopback',
    });
    const [ready] = await deliverer.waitForOutput(/^\{[^\n]*"msg":"service ready"[^\n]*\}$/m);
    expect(JSON.parse(ready).stages).toEqual(['deliver', 'retry']);
    const [got] = await r.waitForRequests(1, 30_000);
    expect(JSON.parse(got!.body.toString())).toEqual({ scaled: true });
    await waitForStates(svc, eventId, ['delivered', 'acked']);
    expect(existsSync(path.join(dataDir, 'clickhouse'))).toBe(false);

    deliverer.child.kill('SIGTERM');
    expect(await deliverer.exited).toBe(0);
  });
});

/**
 * Two processes run the evidence stage on one deployment: the sequencer's group gives every
 * partition of deliveries.completed to one of them, so the log has one writer; when that process
 * is killed, the other takes over from the log's tail. One log, no fork, no leaf twice.
 */
describe('two evidence processes', () => {
  let svc: TestService;
  let r: Receiver;
  const sequencers: ServiceProcess[] = [];
  const key = generateSignerKey('hookline.test/two-sequencers');

  beforeAll(async () => {
    // this process runs every stage but evidence; two others run evidence alone
    [svc, r] = await Promise.all([startTestService({ EVIDENCE_SIGNING_KEY: key, STAGES: 'api,validate,filter,route,deliver,retry,sink' }), startReceiver()]);
  });
  afterAll(async () => {
    await Promise.all(sequencers.map((p) => stopService(p)));
    await Promise.all([svc?.stop(), r?.close()]);
  });

  it('seal one log between them: one owner at a time, and the other takes over when it is killed', async () => {
    for (let i = 0; i < 2; i++) {
      sequencers.push(spawnService({
        ...process.env,
        STAGES: 'evidence',
        TOPIC_PREFIX: svc.config.topicPrefix,
        DATA_DIR: mkdtempSync(path.join(svc.config.dataDir, `sequencer-${i}-`)),
        KAFKA_REPLICATION_FACTOR: '1',
        KAFKA_PARTITIONS: '2',
        BOOTSTRAP_DEMO_TENANT: 'false',
        EVIDENCE_SIGNING_KEY: key,
        LOG_LEVEL: 'info',
      }));
    }
    await Promise.all(sequencers.map((p) => p.waitForOutput(/"msg":"service ready"/)));
    const { hookUrl } = await destinationWithIngester(svc, 'sealed-by-two', r.url);
    const send = async (n: number) => {
      const ids: string[] = [];
      for (let i = 0; i < n; i++) ids.push(await sendEvent(hookUrl, { i }));
      for (const id of ids) await waitForStates(svc, id, ['delivered', 'acked'], 90_000);
      return ids;
    };
    const resumed = /^(?=[^\n]*"msg":"evidence log resumed")[^\n]*"partitions":[1-9]/m;
    const before = await send(8);
    // the owner is the one that resumed the log with partitions; the other stood by
    const owners = sequencers.filter((p) => resumed.test(p.stdout()));
    expect(owners).toHaveLength(1);
    const [owner] = owners;
    const standby = sequencers.find((p) => p !== owner)!;
    // the whole process group: tsx and the node process it runs
    signalGroup(owner!.pgid, 'SIGKILL');
    await waitForGroupGone(owner!.pgid);
    const after = await send(8);
    expect(standby.stdout()).toMatch(resumed);

    const rs = await svc.clickhouse.query({
      query: `SELECT leaf_index, delivery_id, attempt_number, event_id, leaf_hash FROM ${svc.config.clickhouseDatabase}.evidence_leaves FINAL ORDER BY leaf_index`,
      format: 'JSONEachRow',
    });
    const leaves = await rs.json<{ leaf_index: string; delivery_id: string; attempt_number: number; event_id: string; leaf_hash: string }>();
    // every index once, from 0 with no gap; every attempt once; every event of both rounds in it
    expect(leaves.map((l) => Number(l.leaf_index))).toEqual(leaves.map((_, i) => i));
    expect(new Set(leaves.map((l) => `${l.delivery_id}/${l.attempt_number}`)).size).toBe(leaves.length);
    const sealed = new Set(leaves.map((l) => l.event_id));
    for (const id of [...before, ...after]) expect(sealed.has(id)).toBe(true);
    // the newest checkpoint's root is the root of exactly these leaves, signed with the one key
    const cs = await svc.clickhouse.query({ query: `SELECT tree_size, root_hash, checkpoint FROM ${svc.config.clickhouseDatabase}.evidence_checkpoints FINAL ORDER BY tree_size DESC LIMIT 1`, format: 'JSONEachRow' });
    const [newest] = await cs.json<{ tree_size: string; root_hash: string; checkpoint: string }>();
    expect(Number(newest!.tree_size)).toBe(leaves.length);
    expect(newest!.root_hash).toBe(rootOf(leaves.map((l) => Buffer.from(l.leaf_hash, 'hex'))).toString('hex'));
    expect(newest!.checkpoint.startsWith('hookline.test/two-sequencers\n')).toBe(true);
  }, 240_000);
});
