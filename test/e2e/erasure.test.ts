import { createPublicKey } from 'node:crypto';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { leafBytes } from '../../core/evidence-leaf';
import { SCOPES } from '../../core/scopes';
import { tenantTables } from '../../platform/erasure/clickhouse-rows';
import { filesUnder, foundInClickHouse, foundInFileList, foundInRedis, hex } from '../support/at-rest';
import { attemptsOf, sendEvent, waitForStates } from '../support/flow';
import { receiverPool, type Receiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';

// the independent verifiers the evidence tests use: sigstore's RFC 6962 inclusion and signed-note checkpoint code
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { verifyMerkleInclusion } = require('@sigstore/verify/dist/timestamp/merkle') as { verifyMerkleInclusion(entry: unknown): void };
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { verifyCheckpoint } = require('@sigstore/verify/dist/timestamp/checkpoint') as { verifyCheckpoint(entry: unknown, tlogs: unknown[]): void };

type Json = Record<string, any>;

interface Side {
  id: string;
  key: string;
  destinationId: string;
  ingesterId: string;
  hookUrl: string;
  marker: string;
  events: string[];
}

/**
 * Erasing a tenant against the running service: two tenants with ingesters, destinations and
 * delivered webhooks; A is erased; then nothing of A is left in the config, Redis or ClickHouse
 * (but the evidence log's hashes, whose proofs still verify), its API, keys and Hook URLs are gone,
 * its id cannot come back, and B is untouched and goes on.
 */
describe('tenant erasure', () => {
  let svc: TestService;
  const receivers = receiverPool();
  let receiver: Receiver;
  let operator: string;
  let redis: Redis;

  beforeAll(async () => {
    [svc, receiver] = await Promise.all([startTestService({ EVIDENCE_BATCH_AGE_MS: '50' }), receivers.next()]);
    operator = await svc.operatorKey();
    redis = new Redis(svc.config.redisUrl!);
  });
  afterAll(async () => {
    redis?.disconnect();
    await receivers.closeAll();
    await svc?.service.stop().catch(() => undefined);
    if (svc) rmSync(svc.config.dataDir, { recursive: true, force: true });
  });

  const asOperator = (method: string, p: string, body?: unknown) => svc.api(method, p, body, { key: operator });

  async function tenant(name: string): Promise<Side> {
    const id = `${name}-${hex(4)}`;
    expect((await asOperator('POST', '/v1/tenants', { id, name })).status).toBe(201);
    const key = await svc.newKey([...SCOPES], { tenantId: id });
    const base = `/v1/tenants/${id}`;
    const dest = await svc.api('POST', `${base}/destinations`, { name: `${name} dest`, url: `${receiver.url}?t=${id}` }, { key, headers: { 'idempotency-key': `dest-${id}` } });
    expect(dest.status).toBe(201);
    const ing = await svc.api('POST', `${base}/ingesters`, { name: `${name} in`, provider: 'none', config: {}, destination_ids: [dest.body.id] }, { key });
    expect(ing.status).toBe(201);
    return { id, key, destinationId: dest.body.id, ingesterId: ing.body.id, hookUrl: `${svc.url}/v1/hooks/${ing.body.id}`, marker: `body-of-${name}-${hex()}`, events: [] };
  }

  /** Rows of the tenant in every table that has a tenant_id column, the evidence tables included. */
  async function rowsOf(tenantId: string): Promise<Record<string, number>> {
    const db = svc.config.clickhouseDatabase;
    const rs = await svc.clickhouse.query({ query: `SELECT table FROM system.columns WHERE database = {db:String} AND name = 'tenant_id'`, query_params: { db }, format: 'JSONEachRow' });
    const counts: Record<string, number> = {};
    for (const { table } of await rs.json<{ table: string }>()) {
      const r = await svc.clickhouse.query({ query: `SELECT count() AS n FROM ${db}.\`${table}\` WHERE tenant_id = {t:String}`, query_params: { t: tenantId }, format: 'JSONEachRow' });
      counts[table] = Number((await r.json<{ n: string }>())[0]!.n);
    }
    return counts;
  }

  /** The confirmed evidence of one of the tenant's deliveries, with what an outside verifier needs. */
  async function proofOf(side: Side, eventId: string) {
    const base = `/v1/tenants/${side.id}`;
    const [attempt] = await eventually('a delivered attempt', async () => ((await attemptsOf(svc, eventId)).some((a) => a.status === 'delivered') ? attemptsOf(svc, eventId) : undefined));
    const evidence: Json = await eventually('evidence confirmed', async () => {
      const r = await svc.api('GET', `${base}/evidence/${attempt!.delivery_id}`, undefined, { key: side.key });
      return r.status === 200 && r.body.status === 'confirmed' ? r.body : undefined;
    });
    const record: Json = (await svc.api('GET', `${base}/deliveries/${attempt!.delivery_id}`, undefined, { key: side.key })).body;
    const a = record.attempts[0];
    const leaf = leafBytes({ tenant_id: side.id, delivery_id: record.id, event_id: record.event_id, destination_id: record.destination_id, attempt_number: a.attempt_number, status: a.status, response_code: a.response_code, attempted_at: a.attempted_at, body_sha256: a.body_sha256 });
    const log: Json = (await svc.api('GET', `${base}/evidence-log`, undefined, { key: side.key })).body;
    return { evidence, leaf, log, deliveryId: attempt!.delivery_id as string };
  }

  function verifyIndependently(p: Awaited<ReturnType<typeof proofOf>>): void {
    const rootHash = Buffer.from(p.evidence.integrity_root, 'hex');
    verifyMerkleInclusion({ canonicalizedBody: p.leaf, inclusionProof: { logIndex: String(p.evidence.leaf_index), treeSize: String(p.evidence.tree_size), hashes: (p.evidence.inclusion_proof as string[]).map((h) => Buffer.from(h, 'hex')), rootHash } });
    const publicKey = createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(p.log.public_key, 'base64')]), format: 'der', type: 'spki' });
    verifyCheckpoint(
      { integratedTime: String(Math.floor(Date.now() / 1000)), inclusionProof: { checkpoint: { envelope: p.evidence.checkpoint.signed_note }, rootHash } },
      [{ logID: Buffer.from(p.log.key_id, 'hex'), publicKey, validFor: { start: new Date(0), end: new Date(8.64e15) } }],
    );
  }

  it('erases every copy of tenant A, keeps its proofs verifiable, and leaves tenant B as it was', async () => {
    const A = await tenant('erased');
    const B = await tenant('kept');
    const baseA = `/v1/tenants/${A.id}`;

    // A holds one entity of every kind a tenant can make, and Redis state of every sort
    const asA = (method: string, p: string, body?: unknown, headers?: Record<string, string>) => svc.api(method, `${baseA}${p}`, body, { key: A.key, ...(headers ? { headers } : {}) });
    expect((await asA('POST', '/saved-payloads', { name: 'saved', payload: { n: 1 } })).status).toBe(201);
    expect((await asA('POST', '/event-types', { name: 'invoice.paid' })).status).toBe(201);
    expect((await asA('POST', '/api-keys', { scopes: ['read:deliveries'], name: 'second' })).status).toBe(201);
    expect((await asA('POST', '/portal-sessions', {})).status).toBe(201);

    for (const side of [A, B, A]) side.events.push(await sendEvent(side.hookUrl, { marker: side.marker, n: side.events.length }));
    for (const side of [A, B]) for (const e of side.events) await waitForStates(svc, e, ['received', 'delivered']);
    expect(receiver.requests.filter((r) => r.url.endsWith(`?t=${A.id}`))).toHaveLength(2);
    const replay = await asA('POST', '/replays', { from: new Date(Date.now() - 60_000).toISOString(), to: new Date().toISOString() });
    expect(replay.status).toBe(202);
    const proofA = await proofOf(A, A.events[0]!);
    const proofB = await proofOf(B, B.events[0]!);
    verifyIndependently(proofA);

    const store = svc.service.store;
    const kindsBefore = new Set(store.ofTenant(A.id).map((e) => e.kind));
    for (const kind of ['tenant', 'api_key', 'destination', 'ingester', 'flow', 'saved_payload', 'event_type', 'replay_job']) expect(kindsBefore).toContain(kind);
    // both tenants' attempts in the analytics views (the rollup runs every second, 3 s behind), so that A's aggregates are there to erase and B's stay as they are
    await eventually('the attempts rolled into the analytics views', async () => {
      const [a, b] = [await rowsOf(A.id), await rowsOf(B.id)];
      return a.delivery_hours! > 0 && b.delivery_hours! > 0 && a.delivery_days! > 0 && b.delivery_days! > 0 ? true : undefined;
    }, 30_000);
    const rowsBefore = await rowsOf(A.id);
    const tables = await tenantTables({ client: svc.clickhouse, database: svc.config.clickhouseDatabase });
    for (const t of ['events', 'deliveries', 'event_transitions', 'logs', 'delivery_hours', 'delivery_days']) expect(rowsBefore[t]).toBeGreaterThan(0);
    const bRowsBefore = await rowsOf(B.id);
    const aIds = [A.id, A.destinationId, A.ingesterId];
    expect((await foundInRedis(redis, svc.config.topicPrefix, aIds)).found.size).toBeGreaterThan(0);
    const inClickHouse = await foundInClickHouse(svc, [A.marker, B.marker]);
    expect([...inClickHouse.found].sort()).toEqual([A.marker, B.marker].sort());

    const started = Date.now();
    const erased = await asOperator('DELETE', baseA);
    const tookMs = Date.now() - started;
    expect(erased.status).toBe(204);
    console.log(`erasure of a tenant with ${Object.values(rowsBefore).reduce((a, b) => a + b, 0)} ClickHouse rows took ${tookMs} ms`);

    // the config: nothing of A but the marker of its erasure
    expect(store.ofTenant(A.id).map((e) => e.kind)).toEqual(['erased_tenant']);
    // ClickHouse: no row of A in any table but the evidence log's, whose leaves stay
    const rowsAfter = await rowsOf(A.id);
    for (const t of tables) expect({ table: t, rows: rowsAfter[t] }).toEqual({ table: t, rows: 0 });
    expect(tables).not.toContain('evidence_leaves');
    expect(rowsAfter.evidence_leaves).toBeGreaterThanOrEqual(rowsBefore.evidence_leaves!);
    expect(rowsAfter.evidence_leaves).toBeGreaterThan(0);
    const left = await foundInClickHouse(svc, [A.marker, B.marker]);
    expect([...left.found]).toEqual([B.marker]);
    // no part from before the erasure is left on disk, inactive (parts replaced since hold no row of A)
    const parts = await svc.clickhouse.query({
      query: `SELECT table, name FROM system.parts WHERE database = {db:String} AND NOT active AND table IN {tables:Array(String)} AND modification_time < toDateTime({at:UInt32})`,
      query_params: { db: svc.config.clickhouseDatabase, tables, at: Math.floor(started / 1000) },
      format: 'JSONEachRow',
    });
    expect(await parts.json()).toEqual([]);
    // ClickHouse's own logs of queries, where this engine keeps any
    const logs = await svc.clickhouse.query({ query: `SELECT name FROM system.tables WHERE database = 'system' AND name LIKE '%\\_log'`, format: 'JSONEachRow' });
    for (const { name } of await logs.json<{ name: string }>()) {
      const r = await svc.clickhouse.query({ query: `SELECT count() AS n FROM system.\`${name}\` WHERE position(toString(tuple(*)), {m:String}) > 0`, query_params: { m: A.marker }, format: 'JSONEachRow' });
      expect({ name, n: Number((await r.json<{ n: string }>())[0]!.n) }).toEqual({ name, n: 0 });
    }
    // Redis: no key or value names A, its destination or its ingester
    expect([...(await foundInRedis(redis, svc.config.topicPrefix, aIds)).found]).toEqual([]);
    expect((await foundInRedis(redis, svc.config.topicPrefix, [B.id])).found.size).toBeGreaterThan(0);

    // A's API, keys and Hook URLs are gone
    expect((await asOperator('GET', baseA)).status).toBe(404);
    expect((await asA('GET', '/destinations')).status).toBe(401);
    expect((await fetch(A.hookUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(404);
    expect((await asOperator('DELETE', baseA)).status).toBe(404);
    const again = await asOperator('POST', '/v1/tenants', { id: A.id, name: 'again' });
    expect(again.status).toBe(409);
    expect(again.body.detail).toMatch(/erased/);

    // A's proof handed out before still verifies: its leaf and the signed checkpoint are kept
    verifyIndependently(proofA);
    const kept = await svc.clickhouse.query({ query: `SELECT leaf_hash FROM ${svc.config.clickhouseDatabase}.evidence_leaves WHERE delivery_id = {d:String}`, query_params: { d: proofA.deliveryId }, format: 'JSONEachRow' });
    expect((await kept.json<{ leaf_hash: string }>()).map((r) => r.leaf_hash)).toContain(proofA.evidence.leaf_hash);
    const checkpoints: Json[] = (await svc.api('GET', `/v1/tenants/${B.id}/evidence-log/checkpoints?limit=100`, undefined, { key: B.key })).body.checkpoints;
    expect(checkpoints.some((c) => c.tree_size === proofA.evidence.tree_size && c.root_hash === proofA.evidence.integrity_root)).toBe(true);

    // B: its rows, deliveries and proofs as they were, and it goes on ingesting
    expect(await rowsOf(B.id)).toEqual(bRowsBefore);
    const bAgain = await proofOf(B, B.events[0]!);
    expect(bAgain.evidence.leaf_hash).toBe(proofB.evidence.leaf_hash);
    verifyIndependently(bAgain);
    const next = await sendEvent(B.hookUrl, { marker: B.marker, n: 'after' });
    await waitForStates(svc, next, ['received', 'delivered']);

    // files: the service's DATA_DIR, the run's topics in the shared broker's data, and Redis's
    // (on Kafka A's bodies stay as sealed bytes until the topics' retention: docs/non-claims.md NC-21)
    await svc.service.stop();
    const testDir = process.env.HOOKLINE_TEST_DIR!;
    const files = [...filesUnder(svc.config.dataDir), ...filesUnder(path.join(testDir, 'redis')), ...filesUnder(path.join(testDir, 'kafka')).filter((f) => f.includes(`${path.sep}${svc.config.topicPrefix}`))];
    expect(files.some((f) => f.includes(`${path.sep}${svc.config.topicPrefix}`))).toBe(true);
    const onDisk = foundInFileList(files, [A.marker, B.marker]);
    expect(onDisk.files).toBeGreaterThan(10);
    expect(onDisk.found.has(B.marker)).toBe(true);
    expect(onDisk.found.get(A.marker)).toBeUndefined();
  }, 240_000);
});
