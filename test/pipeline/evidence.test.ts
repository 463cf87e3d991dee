import { createPublicKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RFC9162 } from '@transmute/rfc9162';
import { leafBytes } from '../../core/evidence-leaf';
import { leafHash } from '../../core/merkle';
import { receiverPool } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';
import { runScript } from '../support/process';
import { destinationWithIngester, sendEvent, transitionsOf } from '../support/flow';

// independent verifiers: sigstore's RFC 6962 inclusion and signed-note checkpoint code (required
// by path: internal modules), and transmute's RFC 9162 consistency verifier
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { verifyMerkleInclusion } = require('@sigstore/verify/dist/timestamp/merkle') as { verifyMerkleInclusion(entry: unknown): void };
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { verifyCheckpoint } = require('@sigstore/verify/dist/timestamp/checkpoint') as { verifyCheckpoint(entry: unknown, tlogs: unknown[]): void };
const { verifyConsistencyProof } = RFC9162;

type Json = Record<string, any>;

/** The attempt as the deliveries API shows it, encoded as the documented leaf. */
function leafFromRecord(tenantId: string, delivery: Json, attempt: Json): Buffer {
  return leafBytes({
    tenant_id: tenantId,
    delivery_id: delivery.id,
    event_id: delivery.event_id,
    destination_id: delivery.destination_id,
    attempt_number: attempt.attempt_number,
    status: attempt.status,
    response_code: attempt.response_code,
    attempted_at: attempt.attempted_at,
    body_sha256: attempt.body_sha256,
  });
}

/** Sigstore's checks: the inclusion proof against the root, and the checkpoint's signature against the published key. */
function independentlyVerify(leaf: Buffer, evidence: Json, log: Json): void {
  const hashes = (evidence.inclusion_proof as string[]).map((h) => Buffer.from(h, 'hex'));
  const rootHash = Buffer.from(evidence.integrity_root, 'hex');
  verifyMerkleInclusion({ canonicalizedBody: leaf, inclusionProof: { logIndex: String(evidence.leaf_index), treeSize: String(evidence.tree_size), hashes, rootHash } });
  const publicKey = createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(log.public_key, 'base64')]), format: 'der', type: 'spki' });
  verifyCheckpoint(
    { integratedTime: String(Math.floor(Date.now() / 1000)), inclusionProof: { checkpoint: { envelope: evidence.checkpoint.signed_note }, rootHash } },
    [{ logID: Buffer.from(log.key_id, 'hex'), publicKey, validFor: { start: new Date(0), end: new Date(8.64e15) } }],
  );
}

const isPowerOfTwo = (n: number) => (n & (n - 1)) === 0;

describe('delivery evidence', () => {
  let svc: TestService;
  const receivers = receiverPool();
  const base = () => `/v1/tenants/${svc.tenantId}`;

  beforeAll(async () => {
    svc = await startTestService({ EVIDENCE_BATCH_AGE_MS: '50', EVIDENCE_BATCH_SIZE: '7', RETRY_SCHEDULE: '0,100ms', RETRY_TIERS: '100ms', BREAKER_MIN_ATTEMPTS: '1000' });
  });
  afterAll(async () => {
    await Promise.all([svc?.stop(), receivers.closeAll()]);
  });

  let deliveryIds: string[] = [];
  let log: Json;

  it('seals every attempt, delivered or failed, into the log; a delivery is acked only once its evidence is confirmed', async () => {
    const ok = await receivers.next();
    const flaky = await receivers.next();
    // each delivery's first attempt gets a 503, its retry a 200
    const seen = new Set<string>();
    flaky.respondBy((req) => {
      const id = String(req.headers['webhook-id']);
      if (seen.has(id)) return { status: 200 };
      seen.add(id);
      return { status: 503 };
    });
    const a = await destinationWithIngester(svc, 'evidence-ok', ok.url);
    const b = await destinationWithIngester(svc, 'evidence-flaky', flaky.url);
    const events = await Promise.all([
      ...Array.from({ length: 12 }, (_, i) => sendEvent(a.hookUrl, { n: i })),
      ...Array.from({ length: 6 }, (_, i) => sendEvent(b.hookUrl, { m: i })),
    ]);
    const deliveries = await eventually('18 deliveries delivered', async () => {
      const page = await svc.api('GET', `${base()}/deliveries?status=delivered&limit=200`);
      const items = (page.body.deliveries as Json[]).filter((d) => events.includes(d.event_id));
      return items.length === 18 ? items : undefined;
    });
    deliveryIds = deliveries.map((d) => d.id as string);
    log = (await svc.api('GET', `${base()}/evidence-log`)).body;
    expect(log).toMatchObject({ signature_algorithm: 'ed25519', hash_algorithm: 'sha256', verifier_key: expect.stringMatching(new RegExp(`^${log.origin}\\+${log.key_id}\\+`)) });

    for (const id of deliveryIds) {
      const delivery = (await svc.api('GET', `${base()}/deliveries/${id}`)).body;
      const attempt = (delivery.attempts as Json[]).at(-1)!;
      // without ?attempt the answer is the latest sealed attempt: wait until that is the last one
      const evidence = await eventually(`evidence of ${id}`, async () => {
        const r = await svc.api('GET', `${base()}/evidence/${id}`);
        return r.body.status === 'confirmed' && r.body.attempt_number === attempt.attempt_number ? r.body : undefined;
      });
      expect(evidence.attempt_number).toBe(attempt.attempt_number);
      const leaf = leafFromRecord(svc.tenantId, delivery, attempt);
      independentlyVerify(leaf, evidence, log);
      expect(evidence.checkpoint.root_hash).toBe(evidence.integrity_root);

      // earlier attempts (the flaky destination's 503s) have leaves of their own
      for (const earlier of (delivery.attempts as Json[]).slice(0, -1)) {
        const e = (await svc.api('GET', `${base()}/evidence/${id}?attempt=${earlier.attempt_number}`)).body;
        expect(e.status).toBe('confirmed');
        expect(e.leaf_index).not.toBe(evidence.leaf_index);
        independentlyVerify(leafFromRecord(svc.tenantId, delivery, earlier), e, log);
      }
    }

    // acked comes after delivered, once per delivery, and only with evidence confirmed
    for (const eventId of events) {
      const rows = await eventually(`acked for ${eventId}`, async () => {
        const t = await transitionsOf(svc, eventId);
        return t.some((r) => r.state === 'acked') ? t : undefined;
      });
      const acked = rows.filter((r) => r.state === 'acked');
      expect(acked).toHaveLength(1);
      const evidence = (await svc.api('GET', `${base()}/evidence/${acked[0]!.delivery_id}`)).body;
      expect(evidence.status).toBe('confirmed');
    }
  }, 90_000);

  it('proves with checkpoints that the log only grew, for every pair of checkpoints', async () => {
    const all: Json[] = [];
    let cursor = '';
    for (;;) {
      const page = (await svc.api('GET', `${base()}/evidence-log/checkpoints?limit=3${cursor ? `&cursor=${cursor}` : ''}`)).body;
      all.push(...(page.checkpoints as Json[]));
      if (!page.next_cursor) break;
      cursor = page.next_cursor;
    }
    expect(all.length).toBeGreaterThan(2);
    const sizes = all.map((c) => c.tree_size as number);
    expect(sizes).toEqual([...sizes].sort((x, y) => y - x));
    for (const older of all) {
      for (const newer of all.filter((c) => c.tree_size > older.tree_size)) {
        const r = await svc.api('GET', `${base()}/evidence-log/consistency?from=${older.tree_size}&to=${newer.tree_size}`);
        expect(r.status).toBe(200);
        let path = (r.body.consistency_proof as string[]).map((h) => Buffer.from(h, 'hex'));
        // transmute leaves out RFC 9162's step 2 (prepend the old root when its size is a power of two)
        if (isPowerOfTwo(older.tree_size)) path = [Buffer.from(older.root_hash, 'hex'), ...path];
        const verified = await verifyConsistencyProof(Buffer.from(older.root_hash, 'hex'), Buffer.from(newer.root_hash, 'hex'), { log_id: '', tree_size_1: older.tree_size, tree_size_2: newer.tree_size, consistency_path: path });
        expect({ from: older.tree_size, to: newer.tree_size, verified }).toEqual({ from: older.tree_size, to: newer.tree_size, verified: true });
      }
    }
    const latest = (await svc.api('GET', `${base()}/evidence-log/consistency?from=${sizes.at(-1)}`)).body;
    // late attempts may have been sealed since the list was read
    expect(latest.to.tree_size).toBeGreaterThanOrEqual(sizes[0]!);

    const missing = await svc.api('GET', `${base()}/evidence-log/consistency?from=${sizes[0]! + 1000}`);
    expect(missing.status).toBe(404);
    const backwards = await svc.api('GET', `${base()}/evidence-log/consistency?from=${sizes[0]}&to=${sizes.at(-1)}`);
    expect(backwards.status).toBe(400);
    expect((await svc.api('GET', `${base()}/evidence-log/consistency`)).status).toBe(400);
    expect((await svc.api('GET', `${base()}/evidence-log/consistency?from=zero`)).status).toBe(400);
  });

  it('answers pending for an outcome not sealed yet, with the leaf hash it will have', async () => {
    const deliveryId = 'dlv_01jevidencependingonly00000';
    const row = { tenant_id: svc.tenantId, delivery_id: deliveryId, attempt_number: 1, event_id: 'evt_01jevidencependingonly00000', destination_id: 'dst_01jevidencependingonly00000', correlation_id: 'c', status: 'failed', response_code: null, attempted_at: '2026-11-22 10:00:00.123', duration_ms: 5, error_message: 'timeout', body_sha256: 'ab'.repeat(32), next_attempt_at: null };
    await svc.clickhouse.insert({ table: `${svc.config.clickhouseDatabase}.deliveries`, values: [row], format: 'JSONEachRow' });
    const r = await svc.api('GET', `${base()}/evidence/${deliveryId}`);
    expect(r.status).toBe(200);
    const expected = leafBytes({ ...row, attempted_at: '2026-11-22T10:00:00.123Z' });
    expect(r.body).toEqual({ delivery_id: deliveryId, status: 'pending', integrity_root: null, inclusion_proof: [], leaf_hash: leafHash(expected).toString('hex'), timestamp: '2026-11-22T10:00:00.123Z', attempt_number: 1, leaf_index: null, replay_of: null, tree_size: null, checkpoint: null });
  });

  it('shows a tenant only its own deliveries, and a limited key only its destinations', async () => {
    const id = deliveryIds[0]!;
    const other = await svc.newKey(['read:evidence', 'read:deliveries'], { tenantId: `${svc.tenantId}-other` });
    const otherBase = `/v1/tenants/${svc.tenantId}-other`;
    expect((await svc.api('GET', `${otherBase}/evidence/${id}`, undefined, { key: other })).status).toBe(404);
    expect((await svc.api('GET', `${base()}/evidence/${id}`, undefined, { key: other })).status).toBe(404);
    const limited = await svc.newKey(['read:evidence'], { resourceIds: ['dst_01jnotthisdestination000000'] });
    const denied = await svc.api('GET', `${base()}/evidence/${id}`, undefined, { key: limited });
    expect(denied.status).toBe(403);
    expect(denied.body.type).toMatch(/permission-denied$/);
    expect((await svc.api('GET', `${base()}/evidence/${id}?attempt=0`)).status).toBe(400);
    expect((await svc.api('GET', `${base()}/evidence/${id}?attempt=99`)).status).toBe(404);
    expect((await svc.api('GET', `${base()}/evidence/${id}?tree_size=1`)).status).toBe(404);
  });

  it('verifies with the CLI, remembers the checkpoint, and fails once a delivery record is changed', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'evidence-cli-'));
    const state = path.join(dir, 'state.json');
    const env = { ...process.env, HOOKLINE_API_KEY: svc.apiKey };
    const verify = (id: string, extra: string[] = []) => runScript('cli/main.ts', ['evidence', 'verify', id, '--tenant', svc.tenantId, '--api-url', svc.url, '--state', state, ...extra], env);
    try {
      const first = await verify(deliveryIds[0]!);
      expect(first.stderr).toBe('');
      expect(first.code).toBe(0);
      const result = JSON.parse(first.stdout);
      expect(result).toMatchObject({ verified: true, delivery_id: deliveryIds[0], origin: log.origin });
      expect(result.checks.consistency).toMatch(/first checkpoint/);
      const remembered = JSON.parse(readFileSync(state, 'utf8'))[log.origin];
      expect(remembered.tree_size).toBe(result.tree_size);

      // more deliveries grow the log; the next run proves the new checkpoint extends the old one
      const r = await receivers.next();
      const c = await destinationWithIngester(svc, 'evidence-later', r.url);
      const later = await sendEvent(c.hookUrl, { later: true });
      const laterDelivery = await eventually('the later delivery confirmed', async () => {
        const page = (await svc.api('GET', `${base()}/deliveries?status=delivered`)).body.deliveries as Json[];
        const d = page.find((x) => x.event_id === later);
        if (!d) return undefined;
        const e = (await svc.api('GET', `${base()}/evidence/${d.id}`)).body;
        return e.status === 'confirmed' && e.tree_size > result.tree_size ? d : undefined;
      });
      const second = await verify(laterDelivery.id);
      expect(second.code).toBe(0);
      expect(JSON.parse(second.stdout).checks.consistency).toMatch(`consistent with the checkpoint of ${result.tree_size} leaves`);

      // a remembered root that the log never had: the consistency proof fails
      const forged = JSON.parse(readFileSync(state, 'utf8'));
      const saved = JSON.stringify(forged);
      forged[log.origin].tree_size = result.tree_size;
      forged[log.origin].root_hash = 'ff'.repeat(32);
      writeFileSync(state, JSON.stringify(forged));
      const fork = await verify(laterDelivery.id);
      expect(fork.code).toBe(1);
      expect(fork.stderr).toMatch(/^verification failed: /);
      writeFileSync(state, saved);

      // a pinned key that is not the log's: refused
      const wrongKey = await verify(deliveryIds[0]!, ['--verifier-key', 'someone+00000000+AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA']);
      expect(wrongKey.code).toBe(1);

      // the stored delivery row changes (a newer row replaces it): the rebuilt leaf no longer matches
      const target = deliveryIds[1]!;
      expect((await verify(target)).code).toBe(0);
      await svc.clickhouse.command({ query: `INSERT INTO ${svc.config.clickhouseDatabase}.deliveries SELECT * REPLACE (404 AS response_code) FROM ${svc.config.clickhouseDatabase}.deliveries FINAL WHERE tenant_id = {t:String} AND delivery_id = {d:String}`, query_params: { t: svc.tenantId, d: target } });
      expect((await svc.api('GET', `${base()}/deliveries/${target}`)).body.response_code).toBe(404);
      const tampered = await verify(target);
      expect(tampered.code).toBe(1);
      expect(tampered.stderr).toMatch(/^verification failed: the leaf rebuilt from the delivery record .* is not the recorded leaf/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
