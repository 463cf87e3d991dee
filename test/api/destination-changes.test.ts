import { Webhook } from 'standardwebhooks';
import { keyIdOf } from '../../core/api-keys';
import { sealEntity } from '../../core/secrets/entity-secrets';
import type { Destination } from '../../core/model';
import { destinationWithIngester, sendEvent } from '../support/flow';
import { randomKeyring } from '../support/keyring';
import { receiverPool, type ReceivedRequest } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';

/**
 * Operators change destinations: merge-patch and replacement with their refusals, If-Match
 * against lost updates (also under concurrent writers), pause and resume, the history of every
 * change, and signing-secret rotation with an overlap during which deliveries verify under both
 * secrets, all against the running service.
 */

type Json = Record<string, any>;

describe('destination changes', () => {
  let svc: TestService;
  const receivers = receiverPool();
  let receiverUrl: string;
  const base = () => `/v1/tenants/${svc.tenantId}/destinations`;
  const patch = (id: string, body: unknown, headers: Record<string, string> = {}) =>
    svc.api('PATCH', `${base()}/${id}`, typeof body === 'string' ? body : JSON.stringify(body), { headers: { 'content-type': 'application/merge-patch+json', ...headers } });
  const create = async (name: string, extra: Json = {}) => {
    const res = await svc.api('POST', base(), { name, url: receiverUrl, ...extra });
    expect(res.status).toBe(201);
    return res;
  };

  beforeAll(async () => {
    [svc] = await Promise.all([startTestService({ RATE_LIMITS: 'default=100000/60s', RETRY_TIERS: '100ms' })]);
    receiverUrl = (await receivers.next()).url;
  });
  afterAll(async () => {
    await receivers.closeAll();
    await svc?.stop();
  });

  it('patches the members it names, answers with the new ETag, and keeps the rest', async () => {
    const created = await create('patch-me', { retry_schedule_ms: [0, 1000], auth: { type: 'bearer', token: 'token-abcdefgh-1234' } });
    const id = String(created.body.id);
    expect(created.headers.get('etag')).toMatch(/^"\d+"$/);
    expect(created.body).toMatchObject({ enabled: true, rate_limit_per_s: null, event_types: null, filter: null, previous_secret_expires_at: null });
    const got = await svc.api('GET', `${base()}/${id}`);
    expect(got.headers.get('etag')).toBe(created.headers.get('etag'));

    const res = await patch(id, { name: ' patched ', rate_limit_per_s: 25, event_types: ['invoice.*', 'order.created'], filter: [{ type: 'body', path: 'data.amount', op: 'exists' }] });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, name: 'patched', url: receiverUrl, retry_schedule_ms: [0, 1000], rate_limit_per_s: 25, event_types: ['invoice.*', 'order.created'], filter: [{ type: 'body', path: 'data.amount', op: 'exists' }], auth: { type: 'bearer', token: '****1234' } });
    const etag = res.headers.get('etag')!;
    expect(etag).toMatch(/^"\d+"$/);
    expect(BigInt(JSON.parse(etag) as string)).toBeGreaterThan(BigInt(JSON.parse(created.headers.get('etag')!) as string));
    expect((await svc.api('GET', `${base()}/${id}`)).headers.get('etag')).toBe(etag);

    // null resets a nullable member; a masked secret sent back keeps the stored one
    const reset = await patch(id, { retry_schedule_ms: null, event_types: null, auth: { type: 'bearer', token: '****1234' } }, { 'content-type': 'application/json' });
    expect(reset.status).toBe(200);
    expect(reset.body).toMatchObject({ retry_schedule_ms: null, event_types: null, rate_limit_per_s: 25 });
    expect(svc.service.store.get('destination', svc.tenantId, id)!.auth).toEqual({ type: 'bearer', token: 'token-abcdefgh-1234' });

    // the old name is free again, the new one taken
    await create('patch-me');
    expect((await svc.api('POST', base(), { name: 'PATCHED', url: receiverUrl })).status).toBe(409);

    // an empty patch changes nothing and keeps the version
    const same = await patch(id, {});
    expect(same.status).toBe(200);
    expect(same.headers.get('etag')).toBe(reset.headers.get('etag'));
  });

  it('refuses unknown members (422), changed read-only members (422), wrong types (400) and a taken name (409)', async () => {
    const a = await create('refusals-a');
    await create('refusals-b');
    const id = String(a.body.id);

    const unknown = await patch(id, { name: 'x', colour: 'red', signing_secret: 'whsec_AAAA' });
    expect(unknown.status).toBe(422);
    expect(unknown.body.errors).toEqual([{ field: 'colour', message: 'is not a member of this body' }, { field: 'signing_secret', message: 'is not a member of this body' }]);

    const readOnly = await patch(id, { status: 'disabled', created_at: a.body.created_at });
    expect(readOnly.status).toBe(422);
    expect(readOnly.body.errors.map((e: Json) => e.field)).toEqual(['status']);
    // as shown they are accepted: a GET answer is a valid patch
    const shown = (await svc.api('GET', `${base()}/${id}`)).body;
    expect((await patch(id, shown)).status).toBe(200);

    const types = await patch(id, { rate_limit_per_s: 'fast', enabled: 'yes', event_types: ['ok', 'bad type!'], name: '' });
    expect(types.status).toBe(400);
    expect(types.body.errors.map((e: Json) => e.field).sort()).toEqual(['enabled', 'event_types[1]', 'name', 'rate_limit_per_s']);
    expect((await patch(id, { rate_limit_per_s: 0 })).status).toBe(400);
    expect((await patch(id, { rate_limit_per_s: 10_001 })).status).toBe(400);
    expect((await patch(id, { event_types: ['a', 'a'] })).body.errors).toEqual([{ field: 'event_types', message: 'must not hold the same value twice' }]);
    expect((await patch(id, { event_types: Array.from({ length: 101 }, (_, i) => `t${i}`) })).status).toBe(400);
    // a wildcard only ends an entry
    expect((await patch(id, { event_types: ['in*voice.paid'] })).body.errors).toEqual([{ field: 'event_types[0]', message: expect.stringContaining('optionally ending in *') }]);
    const filter = await patch(id, { filter: [{ type: 'body', path: 'a', op: 'nearly' }] });
    expect(filter.status).toBe(400);
    expect(filter.body.errors[0].field).toMatch(/^filter\[0\]/);
    expect((await patch(id, { filter: [{ type: 'header', name: 'x', op: 'matches', pattern: '(a)\\1' }] })).status).toBe(422);
    expect((await patch(id, '[1]')).status).toBe(400);
    expect((await patch(id, { url: 'ftp://example.com' })).status).toBe(400);
    expect((await patch(id, { url: `${svc.url}/v1/hooks/ing_x` })).status).toBe(422);
    expect((await patch(id, { auth: { type: 'header', name: 'webhook-id', value: 'value-12345678' } })).status).toBe(400);

    const taken = await patch(id, { name: ' Refusals-B ' });
    expect(taken.status).toBe(409);
    expect(taken.body.type).toMatch(/\/errors\/conflict$/);
    // a change of case only is the destination's own name
    expect((await patch(id, { name: 'REFUSALS-A' })).body.name).toBe('REFUSALS-A');
    expect((await patch(`dst_01j9zx5w3k8f6t2q4r7m1n0bcd`, { name: 'x' })).status).toBe(404);
  });

  it('replaces the whole destination with PUT; left-out members take their defaults', async () => {
    const a = await create('replace-me', { rate_limit_per_s: 5, event_types: ['a.*'], enabled: false, auth: { type: 'basic', username: 'u', password: 'password-9876' } });
    const id = String(a.body.id);
    expect(a.body).toMatchObject({ status: 'paused', enabled: false });
    // a GET answer sent back changes nothing (the masked password stands for the stored one)
    const got = await svc.api('GET', `${base()}/${id}`);
    const same = await svc.api('PUT', `${base()}/${id}`, got.body);
    expect(same.status).toBe(200);
    expect(same.headers.get('etag')).toBe(got.headers.get('etag'));
    expect(svc.service.store.get('destination', svc.tenantId, id)!.auth).toEqual({ type: 'basic', username: 'u', password: 'password-9876' });

    const replaced = await svc.api('PUT', `${base()}/${id}`, { name: 'replaced', url: receiverUrl });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ name: 'replaced', status: 'active', enabled: true, rate_limit_per_s: null, event_types: null, auth: null, retry_schedule_ms: null });
    const missing = await svc.api('PUT', `${base()}/${id}`, { name: 'x' });
    expect(missing.status).toBe(400);
    expect(missing.body.errors).toEqual([{ field: 'url', message: 'is required' }]);
    expect((await svc.api('PUT', `${base()}/${id}`, { name: 'x', url: receiverUrl, extra: 1 })).status).toBe(422);
  });

  it('If-Match: a stale version is refused with 412, the current one and * pass, and of two concurrent writers one wins', async () => {
    const a = await create('if-match');
    const id = String(a.body.id);
    const first = a.headers.get('etag')!;
    const moved = await patch(id, { rate_limit_per_s: 1 }, { 'if-match': first });
    expect(moved.status).toBe(200);
    const stale = await patch(id, { rate_limit_per_s: 2 }, { 'if-match': first });
    expect(stale.status).toBe(412);
    expect(stale.body.type).toMatch(/\/errors\/precondition-failed$/);
    expect(svc.service.store.get('destination', svc.tenantId, id)!.rate_limit_per_s).toBe(1);
    expect((await patch(id, { rate_limit_per_s: 3 }, { 'if-match': `"1", ${moved.headers.get('etag')}` })).status).toBe(200);
    expect((await patch(id, { rate_limit_per_s: 4 }, { 'if-match': '*' })).status).toBe(200);
    expect((await patch(`dst_01j9zx5w3k8f6t2q4r7m1n0bcd`, { rate_limit_per_s: 4 }, { 'if-match': '*' })).status).toBe(404);

    const current = (await svc.api('GET', `${base()}/${id}`)).headers.get('etag')!;
    for (let round = 0; round < 3; round++) {
      const tag = (await svc.api('GET', `${base()}/${id}`)).headers.get('etag')!;
      const answers = await Promise.all([patch(id, { rate_limit_per_s: 100 + round }, { 'if-match': tag }), patch(id, { rate_limit_per_s: 200 + round }, { 'if-match': tag })]);
      expect(answers.map((r) => r.status).sort()).toEqual([200, 412]);
      const winner = answers.find((r) => r.status === 200)!;
      expect(svc.service.store.get('destination', svc.tenantId, id)!.rate_limit_per_s).toBe(winner.body.rate_limit_per_s);
    }
    expect(current).not.toBe(first);
  });

  it('pauses and resumes, also a destination the service disabled, and keeps every change in the history', async () => {
    const a = await create('history', { auth: { type: 'header', name: 'X-Api-Key', value: 'header-secret-5678' } });
    const id = String(a.body.id);
    const paused = await patch(id, { enabled: false });
    expect(paused.body).toMatchObject({ status: 'paused', enabled: false });
    const resumed = await patch(id, { enabled: true });
    expect(resumed.body).toMatchObject({ status: 'active', enabled: true, disabled_reason: null });
    // the service disables on 410 Gone; enabling again clears that
    const current = svc.service.store.get('destination', svc.tenantId, id)!;
    await svc.service.store.update({ ...current, status: 'disabled', disabled_reason: 'the receiver answered 410 Gone' });
    expect((await svc.api('GET', `${base()}/${id}`)).body).toMatchObject({ status: 'disabled', enabled: false });
    // sending back `enabled: false` as shown does not turn disabled into paused
    expect((await patch(id, { enabled: false })).body.status).toBe('disabled');
    expect((await patch(id, { enabled: true })).body).toMatchObject({ status: 'active', enabled: true, disabled_reason: null });
    await patch(id, { auth: { type: 'header', name: 'X-Api-Key', value: 'header-secret-9999' } });
    const rotated = await svc.api('POST', `${base()}/${id}/rotate-secret`, { overlap_seconds: 60 });
    expect(rotated.status).toBe(200);

    const history = await svc.api('GET', `${base()}/${id}/changes`);
    expect(history.status).toBe(200);
    const changes = history.body.changes as Json[];
    expect(changes.map((c) => c.action)).toEqual(['secret_rotated', 'updated', 'resumed', 'resumed', 'paused', 'created']);
    const actor = keyIdOf(svc.apiKey);
    for (const c of changes) {
      expect(c).toMatchObject({ id: expect.stringMatching(/^chg_/), actor, at: expect.any(String) });
    }
    expect(changes[4]!.changes).toEqual({ status: { from: 'active', to: 'paused' }, enabled: { from: true, to: false } });
    expect(changes[1]!.changes).toEqual({ auth: { from: { type: 'header', name: 'x-api-key', value: '****5678' }, to: { type: 'header', name: 'x-api-key', value: '****9999' } } });
    expect(Object.keys(changes[0]!.changes)).toEqual(['previous_secret_expires_at']);
    expect(changes[5]!.changes.name).toEqual({ from: null, to: 'history' });
    // no secret in clear anywhere in the history
    const text = JSON.stringify(history.body);
    for (const secret of ['header-secret-5678', 'header-secret-9999', a.body.signing_secret, rotated.body.signing_secret]) expect(text).not.toContain(secret);

    // paged, newest first
    const page1 = await svc.api('GET', `${base()}/${id}/changes?limit=4`);
    expect(page1.body.changes.map((c: Json) => c.id)).toEqual(changes.slice(0, 4).map((c) => c.id));
    const page2 = await svc.api('GET', `${base()}/${id}/changes?limit=4&cursor=${page1.body.next_cursor}`);
    expect(page2.body).toEqual({ changes: changes.slice(4), next_cursor: null });

    // a deleted destination keeps its history
    expect((await svc.api('DELETE', `${base()}/${id}`)).status).toBe(204);
    const after = await svc.api('GET', `${base()}/${id}/changes?limit=1`);
    expect(after.body.changes[0]).toMatchObject({ action: 'deleted', actor });
    expect((await svc.api('GET', `${base()}/dst_01j9zx5w3k8f6t2q4r7m1n0bcd/changes`)).status).toBe(404);
  });

  it('a destination its receiver disabled with 410 Gone has that change in its history: by the delivery stage, caused by the attempt', async () => {
    const receiver = await receivers.next();
    receiver.respondWith(410);
    const { destinationId, hookUrl } = await destinationWithIngester(svc, 'gone', receiver.url, { retry_schedule_ms: [0, 100] });
    const eventId = await sendEvent(hookUrl);
    const disabled = await eventually('the destination disabled', async () => {
      const d = await svc.api('GET', `${base()}/${destinationId}`);
      return d.body.status === 'disabled' ? (d.body as Json) : undefined;
    });
    expect(disabled.disabled_reason).toMatch(/410/);
    const changes = await eventually('the disabling in the history', async () => {
      const h = await svc.api('GET', `${base()}/${destinationId}/changes`);
      expect(h.status).toBe(200);
      const list = h.body.changes as Json[];
      return list.some((c) => c.action === 'disabled') ? list : undefined;
    });
    const [attempt] = receiver.requests;
    expect(receiver.requests).toHaveLength(1);
    expect(changes).toEqual([
      {
        id: expect.stringMatching(/^chg_/),
        at: expect.any(String),
        actor: 'stage:deliver',
        action: 'disabled',
        changes: { status: { from: 'active', to: 'disabled' }, enabled: { from: true, to: false }, disabled_reason: { from: null, to: disabled.disabled_reason } },
        cause: { delivery_id: attempt!.headers['webhook-id'], event_id: eventId, attempt_number: 1, response_code: 410 },
      },
      expect.objectContaining({ action: 'created', actor: keyIdOf(svc.apiKey), cause: null }),
    ]);
    // dated by the attempt that got the 410
    expect(Math.abs(Date.parse(changes[0]!.at) - attempt!.at)).toBeLessThan(1000);
  });

  it('rotation: during the overlap deliveries verify with the old and the new secret, afterwards with the new one only', async () => {
    const receiver = await receivers.next();
    const { destinationId, secret: oldSecret, hookUrl } = await destinationWithIngester(svc, 'rotating', receiver.url);
    const rotated = await svc.api('POST', `${base()}/${destinationId}/rotate-secret`, { overlap_seconds: 3 });
    expect(rotated.status).toBe(200);
    expect(rotated.headers.get('etag')).toMatch(/^"\d+"$/);
    const newSecret = String(rotated.body.signing_secret);
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(oldSecret);
    const expiresAt = Date.parse(rotated.body.previous_secret_expires_at);
    expect(expiresAt - Date.now()).toBeGreaterThan(1000);
    expect((await svc.api('GET', `${base()}/${destinationId}`)).body.previous_secret_expires_at).toBe(rotated.body.previous_secret_expires_at);

    const verifies = (secret: string, r: ReceivedRequest) => {
      try {
        new Webhook(secret).verify(r.body, r.headers as Record<string, string>);
        return true;
      } catch {
        return false;
      }
    };
    await sendEvent(hookUrl, { during: true });
    const [during] = await receiver.waitForRequests(1);
    expect(during!.at).toBeLessThan(expiresAt);
    expect(String(during!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect({ old: verifies(oldSecret, during!), new: verifies(newSecret, during!) }).toEqual({ old: true, new: true });

    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt - Date.now() + 100)));
    await sendEvent(hookUrl, { after: true });
    const after = (await receiver.waitForRequests(2))[1]!;
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect({ old: verifies(oldSecret, after), new: verifies(newSecret, after) }).toEqual({ old: false, new: true });

    // an overlap of 0 drops the old secret at once
    const now = await svc.api('POST', `${base()}/${destinationId}/rotate-secret`, { overlap_seconds: 0 });
    expect(now.body.previous_secret_expires_at).toBeNull();
    await sendEvent(hookUrl, { zero: true });
    const zero = (await receiver.waitForRequests(3))[2]!;
    expect({ previous: verifies(newSecret, zero), current: verifies(String(now.body.signing_secret), zero) }).toEqual({ previous: false, current: true });
    expect((await svc.api('POST', `${base()}/${destinationId}/rotate-secret`, { overlap_seconds: 604_801 })).status).toBe(400);
    // no body: the default overlap of one day
    const defaulted = await svc.api('POST', `${base()}/${destinationId}/rotate-secret`);
    expect(Date.parse(defaulted.body.previous_secret_expires_at) - Date.now()).toBeGreaterThan(86_000_000);
  }, 60_000);

  it('seals the previous signing secret at rest like the current one', () => {
    const ring = randomKeyring();
    const d: Destination = {
      kind: 'destination', id: 'dst_01j9zx5w3k8f6t2q4r7m1n0bcd', tenant_id: 't', name: 'n', url: 'https://example.com', status: 'active', disabled_reason: null,
      signing_secret: 'whsec_Y3VycmVudC1zZWNyZXQtMDEyMzQ1Njc4OQ==', previous_signing_secret: 'whsec_cHJldmlvdXMtc2VjcmV0LTAxMjM0NTY3ODk=', previous_secret_expires_at: '2030-01-01T00:00:00.000Z',
      created_at: '2026-01-01T00:00:00.000Z', updated_at: '2026-01-01T00:00:00.000Z',
    };
    const sealed = JSON.stringify(sealEntity(ring, d));
    expect(sealed).not.toContain('cHJldmlvdXMtc2VjcmV0LTAxMjM0NTY3ODk');
    expect(sealed).not.toContain('Y3VycmVudC1zZWNyZXQtMDEyMzQ1Njc4OQ');
    expect(sealed).toContain('2030-01-01T00:00:00.000Z');
  });
});
