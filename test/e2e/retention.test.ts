import { leafBytes } from '../../core/evidence-leaf';
import { leafHash } from '../../core/merkle';
import { SCOPES } from '../../core/scopes';
import { receiverPool, type Receiver } from '../support/receiver';
import { uniqueSuffix } from '../support/ids';
import { eventually, startTestService, type TestService } from '../support/service';
import { sendEvent } from '../support/flow';

// the RFC 6962 inclusion verifier the other evidence tests use (sigstore's, required by path)
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { verifyMerkleInclusion } = require('@sigstore/verify/dist/timestamp/merkle') as { verifyMerkleInclusion(entry: unknown): void };

type Json = Record<string, any>;

const query = async <T>(s: TestService, sql: string, params: Record<string, unknown>): Promise<T[]> =>
  (await s.clickhouse.query({ query: sql, query_params: params, format: 'JSONEachRow' })).json<T>();

/** An ingester routed to a destination at the receiver, in `tenantId` with `key`. */
async function hookOf(s: TestService, tenantId: string, key: string, url: string) {
  const dest = await s.api('POST', `/v1/tenants/${tenantId}/destinations`, { name: 'receiver', url }, { key });
  expect(dest.status).toBe(201);
  const ing = await s.api('POST', `/v1/tenants/${tenantId}/ingesters`, { name: 'in', provider: 'none', config: {}, destination_ids: [dest.body.id] }, { key });
  expect(ing.status).toBe(201);
  return `${s.url}/v1/hooks/${ing.body.id}`;
}

/** Sends one webhook and waits for its delivered attempt to be sealed (evidence confirmed). */
async function deliverOne(s: TestService, tenantId: string, key: string, hookUrl: string, body: Json) {
  const eventId = await sendEvent(hookUrl, body);
  const attempt = await eventually(`event ${eventId} delivered`, async () => {
    const rows = await query<Json>(s, `SELECT delivery_id FROM ${s.config.clickhouseDatabase}.deliveries FINAL WHERE tenant_id = {t:String} AND event_id = {e:String} AND status = 'delivered'`, { t: tenantId, e: eventId });
    return rows[0];
  });
  const deliveryId = attempt.delivery_id as string;
  const evidence = await eventually(`delivery ${deliveryId} sealed`, async () => {
    const r = await s.api('GET', `/v1/tenants/${tenantId}/evidence/${deliveryId}`, undefined, { key });
    return r.status === 200 && r.body.status === 'confirmed' ? r.body : undefined;
  });
  // what the holder of a receipt keeps: the attempt, from which the leaf is rebuilt
  const record = (await s.api('GET', `/v1/tenants/${tenantId}/deliveries/${deliveryId}`, undefined, { key })).body;
  const a = record.attempts[0];
  const leaf = leafBytes({ tenant_id: tenantId, delivery_id: record.id, event_id: record.event_id, destination_id: record.destination_id, attempt_number: a.attempt_number, status: a.status, response_code: a.response_code, attempted_at: a.attempted_at, body_sha256: a.body_sha256 });
  expect(leafHash(leaf).toString('hex')).toBe(evidence.leaf_hash);
  return { eventId, deliveryId, leaf, record };
}

/** Verifies the delivery's inclusion proof as the API gives it now, independently (RFC 6962). */
async function verifyProof(s: TestService, tenantId: string, key: string, d: { deliveryId: string; leaf: Buffer }) {
  const r = await s.api('GET', `/v1/tenants/${tenantId}/evidence/${d.deliveryId}`, undefined, { key });
  expect(r.status).toBe(200);
  expect(r.body.status).toBe('confirmed');
  const hashes = (r.body.inclusion_proof as string[]).map((h) => Buffer.from(h, 'hex'));
  verifyMerkleInclusion({ canonicalizedBody: d.leaf, inclusionProof: { logIndex: String(r.body.leaf_index), treeSize: String(r.body.tree_size), hashes, rootHash: Buffer.from(r.body.integrity_root, 'hex') } });
}

const eventRow = (s: TestService, tenantId: string, eventId: string) =>
  query<Json>(s, `SELECT body, headers, body_sha256, toUnixTimestamp(body_expires_at) AS body_expires, toUnixTimestamp(expires_at) AS expires, toUnixTimestamp(received_at) AS received
                  FROM ${s.config.clickhouseDatabase}.events FINAL WHERE tenant_id = {t:String} AND event_id = {e:String}`, { t: tenantId, e: eventId });
const rowCounts = async (s: TestService, tenantId: string, eventId: string, deliveryId: string) => {
  const [counts] = await query<Json>(s, `SELECT
      (SELECT count() FROM ${s.config.clickhouseDatabase}.events WHERE tenant_id = {t:String} AND event_id = {e:String}) AS events,
      (SELECT count() FROM ${s.config.clickhouseDatabase}.deliveries WHERE tenant_id = {t:String} AND delivery_id = {d:String}) AS deliveries,
      (SELECT count() FROM ${s.config.clickhouseDatabase}.event_transitions WHERE tenant_id = {t:String} AND event_id = {e:String}) AS transitions,
      (SELECT count() FROM ${s.config.clickhouseDatabase}.logs WHERE tenant_id = {t:String} AND delivery_id = {d:String}) AS logs,
      (SELECT count() FROM ${s.config.clickhouseDatabase}.evidence_leaves WHERE tenant_id = {t:String} AND delivery_id = {d:String}) AS leaves`, { t: tenantId, e: eventId, d: deliveryId });
  const c = counts!;
  return { events: Number(c.events), deliveries: Number(c.deliveries), transitions: Number(c.transitions), logs: Number(c.logs), leaves: Number(c.leaves) };
};


/**
 * Retention against the running service: real webhooks through Hook URLs, delivered, with the
 * sink's sweeper every second. A tenant with short periods of its own loses its bodies (events,
 * response bodies) while its attempts stay, then its attempts and logs; another tenant with the
 * deployment's periods keeps everything; each delivery's inclusion proof still verifies after its
 * body and its attempt rows are gone. A second service with a short RETENTION_BODIES shows the
 * deployment setting.
 */
describe('retention', () => {
  let svc: TestService;
  const receivers = receiverPool();
  let receiver: Receiver;
  let operator = '';
  const db = () => svc.config.clickhouseDatabase;

  beforeAll(async () => {
    svc = await startTestService({ EVIDENCE_BATCH_AGE_MS: '50', RETENTION_SWEEP_SECONDS: '1' });
    receiver = await receivers.next();
    // a response body of the receiver's own, kept with each attempt
    receiver.respondBy(() => ({ status: 200, body: 'receipt-of-the-receiver' }));
    operator = await svc.operatorKey();
  }, 60_000);

  afterAll(async () => {
    await receivers.closeAll();
    await svc?.stop();
  });

  it("a tenant's short periods: bodies go, then attempts and logs; another tenant's rows stay; proofs still verify", async () => {
    const short = svc.tenantId;
    const other = `keeps-${uniqueSuffix()}`;
    expect((await svc.api('POST', '/v1/tenants', { id: other, name: 'Keeps everything' }, { key: operator })).status).toBe(201);
    const otherKey = await svc.newKey([...SCOPES], { tenantId: other });
    const set = await svc.api('PATCH', `/v1/tenants/${short}`, { limits: { retention: { bodies_seconds: 6, attempts_seconds: 16, logs_seconds: 16 } } }, { key: operator });
    expect(set.status).toBe(200);
    expect(set.body.limits.retention).toEqual({ bodies_seconds: 6, attempts_seconds: 16, logs_seconds: 16 });

    const [a, b] = await Promise.all([
      hookOf(svc, short, svc.apiKey, `${receiver.url}/short`).then((hook) => deliverOne(svc, short, svc.apiKey, hook, { kept: 'briefly' })),
      hookOf(svc, other, otherKey, `${receiver.url}/other`).then((hook) => deliverOne(svc, other, otherKey, hook, { kept: 'long' })),
    ]);

    // before its period ends the body is there, through the API too
    expect(a.record.attempts[0].response_body).toBe('receipt-of-the-receiver');
    expect((await svc.api('GET', `/v1/tenants/${short}/events/${a.eventId}`)).body).toMatchObject({ body: JSON.stringify({ kept: 'briefly' }), body_expired: false });

    // written with the tenant's periods, counted from receipt; the other tenant's with the deployment's
    const [rowA] = await eventRow(svc, short, a.eventId);
    expect(Number(rowA!.body_expires) - Number(rowA!.received)).toBeGreaterThanOrEqual(6);
    expect(Number(rowA!.body_expires) - Number(rowA!.received)).toBeLessThanOrEqual(7);
    expect(Number(rowA!.expires) - Number(rowA!.received)).toBeLessThanOrEqual(17);
    const [rowB] = await eventRow(svc, other, b.eventId);
    expect(Number(rowB!.body_expires) - Number(rowB!.received)).toBeGreaterThanOrEqual(30 * 86_400);
    expect(Number(rowB!.expires) - Number(rowB!.received)).toBeGreaterThanOrEqual(90 * 86_400);

    // the bodies are gone from ClickHouse; the rows, their SHA-256 and the attempts stay
    await eventually('the short tenant\'s bodies cleared', async () => {
      const [row] = await eventRow(svc, short, a.eventId);
      return row && row.body === '' ? row : undefined;
    }, 30_000);
    const [cleared] = await eventRow(svc, short, a.eventId);
    expect(cleared).toMatchObject({ body: '', headers: '[]', body_sha256: a.record.attempts[0].body_sha256 });
    // the response body counts from the attempt, a moment after the receipt
    const responses = await eventually('the short tenant\'s response body cleared', async () => {
      const rows = await query<Json>(svc, `SELECT response_body FROM ${db()}.deliveries FINAL WHERE tenant_id = {t:String} AND delivery_id = {d:String}`, { t: short, d: a.deliveryId });
      return rows[0]?.response_body === '' ? rows : undefined;
    }, 30_000);
    expect(responses).toEqual([{ response_body: '' }]);
    expect(await rowCounts(svc, short, a.eventId, a.deliveryId)).toMatchObject({ events: 1, deliveries: 1, leaves: 1 });

    // the API: no body, said so; the attempt without its response body; no retry
    const shown = await svc.api('GET', `/v1/tenants/${short}/events/${a.eventId}`);
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({ id: a.eventId, body: null, body_expired: true, body_sha256: a.record.attempts[0].body_sha256 });
    const delivery = await svc.api('GET', `/v1/tenants/${short}/deliveries/${a.deliveryId}`);
    expect(delivery.status).toBe(200);
    expect(delivery.body.attempts[0]).toMatchObject({ status: 'delivered', response_code: 200, response_body: '' });
    const retried = await svc.api('POST', `/v1/tenants/${short}/events/${a.eventId}/retry`);
    expect(retried.status).toBe(409);
    expect(retried.body.detail).toMatch(/body was removed by the retention of bodies/);
    // search no longer finds the body's text, while the other tenant's still is found
    const found = await svc.api('GET', `/v1/tenants/${short}/deliveries?q=briefly`);
    expect(found.status).toBe(200);
    expect(found.body.deliveries).toEqual([]);
    const foundOther = await svc.api('GET', `/v1/tenants/${other}/deliveries?q=long`, undefined, { key: otherKey });
    expect(foundOther.body.deliveries.map((d: Json) => d.id)).toEqual([b.deliveryId]);
    await verifyProof(svc, short, svc.apiKey, a);

    // the other tenant's body is untouched
    const [kept] = await eventRow(svc, other, b.eventId);
    expect(kept!.body).not.toBe('');
    expect((await svc.api('GET', `/v1/tenants/${other}/events/${b.eventId}`, undefined, { key: otherKey })).body).toMatchObject({ body: JSON.stringify({ kept: 'long' }), body_expired: false });

    // then the attempts and the logs go: only the evidence leaf is left, and the proof verifies
    await eventually('the short tenant\'s attempts and logs deleted', async () => {
      const counts = await rowCounts(svc, short, a.eventId, a.deliveryId);
      return counts.events + counts.deliveries + counts.transitions + counts.logs === 0 ? counts : undefined;
    }, 40_000);
    expect(await rowCounts(svc, short, a.eventId, a.deliveryId)).toEqual({ events: 0, deliveries: 0, transitions: 0, logs: 0, leaves: 1 });
    expect((await svc.api('GET', `/v1/tenants/${short}/events/${a.eventId}`)).status).toBe(404);
    await verifyProof(svc, short, svc.apiKey, a);

    const otherCounts = await rowCounts(svc, other, b.eventId, b.deliveryId);
    expect(otherCounts).toMatchObject({ events: 1, deliveries: 1, leaves: 1 });
    expect(otherCounts.transitions).toBeGreaterThanOrEqual(3);
    expect(otherCounts.logs).toBeGreaterThanOrEqual(1);
    await verifyProof(svc, other, otherKey, b);
  }, 120_000);
});

describe('retention of the deployment', () => {
  const receivers = receiverPool();

  it('RETENTION_BODIES of the deployment: bodies go, attempts stay', async () => {
    // its own service, once the first one stopped: the embedded engine opens one data dir at a time
    const second = await startTestService({ EVIDENCE_BATCH_AGE_MS: '50', RETENTION_SWEEP_SECONDS: '1', RETENTION_BODIES: '5s' });
    const receiver = await receivers.next();
    try {
      const hook = await hookOf(second, second.tenantId, second.apiKey, `${receiver.url}/second`);
      const d = await deliverOne(second, second.tenantId, second.apiKey, hook, { deployment: 'setting' });
      const [row] = await eventRow(second, second.tenantId, d.eventId);
      expect(Number(row!.body_expires) - Number(row!.received)).toBeLessThanOrEqual(6);
      expect(Number(row!.expires) - Number(row!.received)).toBeGreaterThanOrEqual(90 * 86_400);
      await eventually('the body cleared', async () => {
        const [r] = await eventRow(second, second.tenantId, d.eventId);
        return r && r.body === '' ? r : undefined;
      }, 30_000);
      expect((await second.api('GET', `/v1/tenants/${second.tenantId}/events/${d.eventId}`)).body).toMatchObject({ body: null, body_expired: true });
      expect(await rowCounts(second, second.tenantId, d.eventId, d.deliveryId)).toMatchObject({ events: 1, deliveries: 1, leaves: 1 });
      await verifyProof(second, second.tenantId, second.apiKey, d);
    } finally {
      await receivers.closeAll();
      await second.stop();
    }
  }, 120_000);
});
