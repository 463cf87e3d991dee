import { leafBytes } from '../../core/evidence-leaf';
import { leafHash } from '../../core/merkle';
import { expectProblem } from '../support/problem';
import { receiverPool, type Receiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';
import { attemptsOf, destinationWithIngester, sendEvent } from '../support/flow';

// the RFC 6962 inclusion verifier the other evidence tests use (sigstore's, required by path)
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { verifyMerkleInclusion } = require('@sigstore/verify/dist/timestamp/merkle') as { verifyMerkleInclusion(entry: unknown): void };

type Json = Record<string, any>;

/**
 * Replay jobs against the running service: deliveries inside and outside a time range, of two
 * destinations, delivered and dead; a job replays exactly the matching ones (the receiver sees
 * each body once more under a new webhook-id), counts them and completes; cancel, refusals, and
 * the replayed attempt's evidence leaf linked to the original. The CLI's commands: test/cli-replays.test.ts.
 */
describe('replay jobs', () => {
  let svc: TestService;
  const receivers = receiverPool();
  const base = () => `/v1/tenants/${svc.tenantId}/replays`;
  let okReceiver: Receiver;
  let failingReceiver: Receiver;
  let slowReceiver: Receiver;
  let ok: Awaited<ReturnType<typeof destinationWithIngester>>;
  let failing: Awaited<ReturnType<typeof destinationWithIngester>>;
  let slow: Awaited<ReturnType<typeof destinationWithIngester>>;
  /** The range [from, to) and the deliveries in it. */
  let from: string;
  let to: string;
  const inside: { eventId: string; deliveryId: string; body: string }[] = [];
  let deadInside: { eventId: string; deliveryId: string; body: string };
  const outside: string[] = [];

  /** Sends an event and waits until its one delivery has a final outcome (delivered, or failed with no attempt left). */
  const deliverOne = async (hookUrl: string, body: Json) => {
    const eventId = await sendEvent(hookUrl, body);
    const attempts = await eventually(`event ${eventId} finished`, async () => {
      const rows = await attemptsOf(svc, eventId);
      const last = rows.at(-1);
      return last && last.status !== 'retrying' ? rows : undefined;
    });
    return { eventId, deliveryId: attempts[0]!.delivery_id, body: JSON.stringify(body) };
  };
  const waitFinished = (id: string, timeoutMs = 30_000) =>
    eventually(`replay ${id} finished`, async () => {
      const r = await svc.api('GET', `${base()}/${id}`);
      return r.body.status !== 'running' ? r.body : undefined;
    }, timeoutMs);

  beforeAll(async () => {
    svc = await startTestService({ EVIDENCE_BATCH_AGE_MS: '50', RETRY_SCHEDULE: '0,100ms', RETRY_TIERS: '100ms', BREAKER_MIN_ATTEMPTS: '1000', REPLAY_RATE_PER_S: '50' });
    [okReceiver, failingReceiver, slowReceiver] = await Promise.all([receivers.next(), receivers.next(), receivers.next()]);
    failingReceiver.respondWith(500);
    // the first request is answered at once; replays of it are held long enough to keep a job running
    slowReceiver.respondBy((_req, index) => (index === 0 ? { status: 200 } : { status: 200, delayMs: 12_000 }));
    ok = await destinationWithIngester(svc, 'replay ok', okReceiver.url);
    failing = await destinationWithIngester(svc, 'replay failing', failingReceiver.url);
    slow = await destinationWithIngester(svc, 'replay slow', slowReceiver.url);

    outside.push((await deliverOne(ok.hookUrl, { n: 'before' })).eventId);
    await new Promise((r) => setTimeout(r, 20));
    from = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 20));
    inside.push(await deliverOne(ok.hookUrl, { n: 'inside-1' }), await deliverOne(ok.hookUrl, { n: 'inside-2' }));
    deadInside = await deliverOne(failing.hookUrl, { n: 'inside-dead' });
    await deliverOne(slow.hookUrl, { n: 'inside-slow' });
    await new Promise((r) => setTimeout(r, 20));
    to = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 20));
    outside.push((await deliverOne(ok.hookUrl, { n: 'after' })).eventId);
  }, 60_000);

  afterAll(async () => {
    await receivers.closeAll();
    await svc?.stop();
  });

  it('replays exactly the delivered deliveries of one destination in the range, and completes', async () => {
    const before = okReceiver.requests.length;
    const started = await svc.api('POST', base(), { from, to, destination_id: ok.destinationId, status: 'delivered' });
    expect(started.status).toBe(202);
    expect(started.headers.get('location')).toBe(`${base()}/${started.body.id}`);
    expect(started.body).toMatchObject({ id: expect.stringMatching(/^rpl_/), status: 'running', matched: 2, replayed: 0, delivered: 0, failed: 0, finished_at: null, error: null });
    expect(started.body.filter).toEqual({ from, to, destination_id: ok.destinationId, status: 'delivered', event_type: null });

    const done = await waitFinished(started.body.id);
    expect(done).toMatchObject({ status: 'completed', matched: 2, replayed: 2, delivered: 2, failed: 0, finished_at: expect.any(String) });

    const again = okReceiver.requests.slice(before);
    expect(again.map((r) => r.body.toString()).sort()).toEqual(inside.map((i) => i.body).sort());
    const originals = new Set(okReceiver.requests.slice(0, before).map((r) => String(r.headers['webhook-id'])));
    for (const r of again) expect(originals.has(String(r.headers['webhook-id']))).toBe(false);

    // the replays are new deliveries linked to the originals and to the job
    const rs = await svc.clickhouse.query({
      query: `SELECT delivery_id, replay_of, replay_job_id, status FROM ${svc.config.clickhouseDatabase}.deliveries FINAL WHERE tenant_id = {t:String} AND replay_job_id = {j:String}`,
      query_params: { t: svc.tenantId, j: started.body.id },
      format: 'JSONEachRow',
    });
    const rows = await rs.json<{ delivery_id: string; replay_of: string; status: string }>();
    expect(rows.map((r) => r.replay_of).sort()).toEqual(inside.map((i) => i.deliveryId).sort());
    expect(rows.every((r) => r.status === 'delivered' && !inside.some((i) => i.deliveryId === r.delivery_id))).toBe(true);

    // the replayed attempt's leaf names the original; its proof verifies independently
    const replayed = rows[0]!;
    const evidence = await eventually('replayed leaf sealed', async () => {
      const r = await svc.api('GET', `/v1/tenants/${svc.tenantId}/evidence/${replayed.delivery_id}`);
      return r.status === 200 && r.body.status === 'confirmed' ? r.body : undefined;
    });
    expect(evidence.replay_of).toBe(replayed.replay_of);
    const record = (await svc.api('GET', `/v1/tenants/${svc.tenantId}/deliveries/${replayed.delivery_id}`)).body;
    const attempt = record.attempts[0];
    const leaf = leafBytes({ tenant_id: svc.tenantId, delivery_id: record.id, event_id: record.event_id, destination_id: record.destination_id, attempt_number: attempt.attempt_number, status: attempt.status, response_code: attempt.response_code, attempted_at: attempt.attempted_at, body_sha256: attempt.body_sha256, replay_of: replayed.replay_of });
    expect(JSON.parse(leaf.toString())).toMatchObject({ replay_of: replayed.replay_of, v: 2 });
    expect(leafHash(leaf).toString('hex')).toBe(evidence.leaf_hash);
    const hashes = (evidence.inclusion_proof as string[]).map((h) => Buffer.from(h, 'hex'));
    verifyMerkleInclusion({ canonicalizedBody: leaf, inclusionProof: { logIndex: String(evidence.leaf_index), treeSize: String(evidence.tree_size), hashes, rootHash: Buffer.from(evidence.integrity_root, 'hex') } });
    // an original's leaf stays v 1, without the member
    const original = (await svc.api('GET', `/v1/tenants/${svc.tenantId}/evidence/${inside[0]!.deliveryId}`)).body;
    expect(original.replay_of).toBeNull();

  }, 60_000);

  it('replays dead deliveries by status, counting how they fail again', async () => {
    const before = failingReceiver.requests.length;
    const started = await svc.api('POST', base(), { from, to, status: 'failed' });
    expect(started.status).toBe(202);
    expect(started.body.matched).toBe(1);
    const done = await waitFinished(started.body.id);
    expect(done).toMatchObject({ status: 'completed', matched: 1, replayed: 1, delivered: 0, failed: 1 });
    // two attempts (RETRY_SCHEDULE 0,100ms) of the one dead delivery's body
    const again = failingReceiver.requests.slice(before);
    expect(again.length).toBe(2);
    expect(again.every((r) => r.body.toString() === deadInside.body)).toBe(true);
    // nothing else went out again: the ok receiver saw the range's two replays only (previous test)
    expect(okReceiver.requests.filter((r) => JSON.parse(r.body.toString()).n === 'before' || JSON.parse(r.body.toString()).n === 'after')).toHaveLength(2);
  }, 60_000);

  it('cancels a running job, holds at most three running, and refuses to cancel a finished one', async () => {
    const started: Json[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await svc.api('POST', base(), { from, to, destination_id: slow.destinationId });
      expect(r.status).toBe(202);
      started.push(r.body);
    }
    expectProblem(await svc.api('POST', base(), { from, to, destination_id: slow.destinationId }), 409, 'conflict', svc.config.errorBase);
    // each job replays the one delivery, held by the receiver: still running
    await eventually('replays queued', async () => {
      const r = await svc.api('GET', `${base()}/${started[0]!.id}`);
      return r.body.replayed === 1 ? r.body : undefined;
    });
    for (const job of started) {
      const cancelled = await svc.api('DELETE', `${base()}/${job.id}`);
      expect(cancelled.status).toBe(200);
      expect(cancelled.body).toMatchObject({ id: job.id, status: 'cancelled', finished_at: expect.any(String) });
    }
    expectProblem(await svc.api('DELETE', `${base()}/${started[0]!.id}`), 409, 'conflict', svc.config.errorBase);
    // stays cancelled though its runner was writing progress
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await svc.api('GET', `${base()}/${started[0]!.id}`)).body.status).toBe('cancelled');

    const listed = await svc.api('GET', `${base()}?limit=2`);
    expect(listed.status).toBe(200);
    expect(listed.body.replays).toHaveLength(2);
    const rest = await svc.api('GET', `${base()}?cursor=${encodeURIComponent(listed.body.next_cursor)}`);
    const ids = [...listed.body.replays, ...rest.body.replays].map((j: Json) => j.id);
    expect(ids).toEqual([...ids].sort());
    for (const job of started) expect(ids).toContain(job.id);
  }, 60_000);

  it('refuses bad ranges, unknown members, unknown jobs and keys without the scope', async () => {
    expectProblem(await svc.api('POST', base(), { from: to, to: from }), 422, 'unprocessable-entity', svc.config.errorBase);
    expectProblem(await svc.api('POST', base(), { from: '2026-01-01T00:00:00Z', to: '2026-03-01T00:00:00Z' }), 422, 'unprocessable-entity', svc.config.errorBase);
    expectProblem(await svc.api('POST', base(), { from, to, destination_id: 'dst_01jzzzzzzzzzzzzzzzzzzzzzzz' }), 422, 'unprocessable-entity', svc.config.errorBase);
    const bad = await svc.api('POST', base(), { from: 'yesterday', to, colour: 'blue' });
    expectProblem(bad, 400, 'validation-error', svc.config.errorBase);
    expect(bad.body.errors.map((e: Json) => e.field).sort()).toEqual(['colour', 'from']);
    expectProblem(await svc.api('POST', base(), { from }), 400, 'validation-error', svc.config.errorBase);
    expectProblem(await svc.api('POST', base(), { from, to, status: 'retrying' }), 400, 'validation-error', svc.config.errorBase);
    // an event type no event of the range has: nothing matches, and the job completes at once
    const none = await svc.api('POST', base(), { from, to, event_type: 'nothing.here' });
    expect(none.status).toBe(202);
    expect(none.body).toMatchObject({ matched: 0, filter: { event_type: 'nothing.here' } });
    expect(await waitFinished(none.body.id)).toMatchObject({ status: 'completed', matched: 0, replayed: 0 });
    // the type validation found for an event (kept in event_types, as the sink writes it): only that event matches
    await svc.clickhouse.insert({ table: `${svc.config.clickhouseDatabase}.event_types`, values: [{ tenant_id: svc.tenantId, event_id: inside[0]!.eventId, event_type: 'invoice.paid', received_at: Date.now() }], format: 'JSONEachRow' });
    const typed = await svc.api('POST', base(), { from, to, event_type: 'invoice.paid' });
    expect(typed.body).toMatchObject({ matched: 1 });
    expect(await waitFinished(typed.body.id)).toMatchObject({ status: 'completed', matched: 1, replayed: 1, delivered: 1 });
    expectProblem(await svc.api('GET', `${base()}/rpl_01jzzzzzzzzzzzzzzzzzzzzzzz`), 404, 'not-found', svc.config.errorBase);
    expectProblem(await svc.api('DELETE', `${base()}/rpl_01jzzzzzzzzzzzzzzzzzzzzzzz`), 404, 'not-found', svc.config.errorBase);

    const reader = await svc.newKey(['read:replays']);
    expectProblem(await svc.api('POST', base(), { from, to }, { key: reader }), 403, 'insufficient-scope', svc.config.errorBase);
    expect((await svc.api('GET', base(), undefined, { key: reader })).status).toBe(200);
    const other = await svc.newKey(['read:destinations']);
    expectProblem(await svc.api('GET', base(), undefined, { key: other }), 403, 'insufficient-scope', svc.config.errorBase);
    // another tenant's key sees none of these jobs
    const stranger = await svc.newKey(['read:replays', 'write:replays'], { tenantId: `${svc.tenantId}-x` });
    expectProblem(await svc.api('GET', base(), undefined, { key: stranger }), 404, 'not-found', svc.config.errorBase);
  }, 30_000);
});
