import { createHmac } from 'node:crypto';
import { startReceiver, type Receiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';
import { deliveryRow } from '../../pipeline/sink/rows';

/** The resource routes beyond the walking skeleton: paging, updates, deletes, flows, payloads, logs. */
describe('tenant resources', () => {
  let svc: TestService;
  let r: Receiver;
  const base = () => `/v1/tenants/${svc.tenantId}`;
  beforeAll(async () => {
    [svc, r] = await Promise.all([startTestService({ LOG_LEVEL: 'info' }), startReceiver()]);
  });
  afterAll(async () => {
    await Promise.all([svc?.stop(), r?.close()]);
  });

  it('pages destinations with a cursor, without duplicates or gaps while rows are added', async () => {
    for (let i = 0; i < 5; i++) expect((await svc.api('POST', `${base()}/destinations`, { name: `page-${i}`, url: r.url })).status).toBe(201);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: { status: number; body: any } = await svc.api('GET', `${base()}/destinations?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      expect(res.body.destinations.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.destinations.map((d: { id: string }) => d.id));
      cursor = res.body.next_cursor;
      // a destination created between pages shows up on a later page, once
      if (pages++ === 0) await svc.api('POST', `${base()}/destinations`, { name: 'page-late', url: r.url });
    } while (cursor);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toHaveLength(6);
  });

  it('deletes a destination, frees its name and takes it out of flows', async () => {
    const d = await svc.api('POST', `${base()}/destinations`, { name: 'short-lived', url: r.url });
    const ing = await svc.api('POST', `${base()}/ingesters`, { name: 'uses-it', provider: 'none', config: {}, destination_ids: [d.body.id] });
    expect((await svc.api('DELETE', `${base()}/destinations/${d.body.id}`)).status).toBe(204);
    expect((await svc.api('GET', `${base()}/destinations/${d.body.id}`)).status).toBe(404);
    const after = await svc.api('GET', `${base()}/ingesters/${ing.body.id}`);
    expect(after.body.delivery_flows[0].destination_ids).toEqual([]);
    expect((await svc.api('POST', `${base()}/destinations`, { name: 'short-lived', url: r.url })).status).toBe(201);
    expect((await svc.api('DELETE', `${base()}/destinations/${d.body.id}`)).status).toBe(404);
  });

  it('shows at most a quarter of a short secret, and keeps it on a GET-then-PUT (secrets that share a mask each in its place)', async () => {
    const created = await svc.api('POST', `${base()}/ingesters`, { name: 'short-secret', provider: 'generic', config: { signing_secret: 'secret', signing_secrets: ['abc', 'xyz'] } });
    expect(created.status).toBe(201);
    expect(created.body.config).toMatchObject({ signing_secret: '****t', signing_secrets: ['****', '****'] });
    const got = await svc.api('GET', `${base()}/ingesters/${created.body.id}`);
    expect(got.body.config).toMatchObject({ signing_secret: '****t', signing_secrets: ['****', '****'] });
    const put = await svc.api('PUT', `${base()}/ingesters/${created.body.id}`, { name: 'short-secret', config: got.body.config });
    expect(put.status).toBe(200);
    expect(svc.service.store.get('ingester', svc.tenantId, created.body.id)!.config).toMatchObject({ signing_secret: 'secret', signing_secrets: ['abc', 'xyz'] });
  });

  it('updates an ingester without losing a masked secret, and deletes it', async () => {
    const secret = 'keep-this-secret';
    const created = await svc.api('POST', `${base()}/ingesters`, { name: 'upd', provider: 'generic', config: { signing_secret: secret } });
    expect(created.body.config.signing_secret).toBe('****cret');
    // a GET-then-PUT round trip sends the masked value back
    const put = await svc.api('PUT', `${base()}/ingesters/${created.body.id}`, { name: 'upd renamed', config: created.body.config, filters: [{ type: 'header', name: 'x-env', op: 'exists' }] });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ name: 'upd renamed', provider: 'generic', filters: [{ type: 'header', name: 'x-env', op: 'exists' }] });
    const body = Buffer.from('{"x":1}');
    const sig = createHmac('sha256', secret).update(body).digest('hex');
    const hook = await fetch(created.body.hook_url, { method: 'POST', headers: { 'x-webhook-signature': sig, 'x-env': 'prod' }, body });
    expect(hook.status).toBe(202);
    const { event_id } = (await hook.json()) as { event_id: string };
    // still verifiable with the original secret: it was kept
    await eventually('validated', async () => {
      const rs = await svc.clickhouse.query({ query: `SELECT state FROM ${svc.config.clickhouseDatabase}.event_transitions WHERE event_id = {e:String}`, query_params: { e: event_id }, format: 'JSONEachRow' });
      const states = (await rs.json<{ state: string }>()).map((x) => x.state);
      return states.includes('filtered') ? states : undefined;
    });
    const missingName = await svc.api('PUT', `${base()}/ingesters/${created.body.id}`, { config: {} });
    expect(missingName.status).toBe(400);
    expect((await svc.api('DELETE', `${base()}/ingesters/${created.body.id}`)).status).toBe(204);
    expect((await fetch(created.body.hook_url, { method: 'POST', body: 'x' })).status).toBe(404);
  });

  it('manages delivery flows', async () => {
    const d1 = await svc.api('POST', `${base()}/destinations`, { name: 'flow-1', url: r.url });
    const d2 = await svc.api('POST', `${base()}/destinations`, { name: 'flow-2', url: r.url });
    const ing = await svc.api('POST', `${base()}/ingesters`, { name: 'flowed', provider: 'none', config: {} });
    const bad = await svc.api('POST', `${base()}/delivery-flows`, { name: 'x', ingester_id: 'ing_nope', destination_ids: ['dst_nope'] });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: { field: string }) => e.field)).toEqual(['ingester_id', 'destination_ids[0]']);
    const flow = await svc.api('POST', `${base()}/delivery-flows`, { name: 'both', ingester_id: ing.body.id, destination_ids: [d1.body.id, d2.body.id] });
    expect(flow.status).toBe(201);
    expect((await svc.api('GET', `${base()}/delivery-flows/${flow.body.id}`)).body.destination_ids).toEqual([d1.body.id, d2.body.id]);
    const put = await svc.api('PUT', `${base()}/delivery-flows/${flow.body.id}`, { name: 'one', destination_ids: [d2.body.id] });
    expect(put.body).toMatchObject({ name: 'one', destination_ids: [d2.body.id], ingester_id: ing.body.id });
    const list = await svc.api('GET', `${base()}/delivery-flows`);
    expect(list.body.delivery_flows.map((f: { id: string }) => f.id)).toContain(flow.body.id);
    expect((await svc.api('DELETE', `${base()}/delivery-flows/${flow.body.id}`)).status).toBe(204);
    expect((await svc.api('GET', `${base()}/delivery-flows/${flow.body.id}`)).status).toBe(404);
  });

  it('keeps saved payloads', async () => {
    const created = await svc.api('POST', `${base()}/saved-payloads`, { name: 'order', payload: { order: 1, items: [1, 2] } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ id: expect.stringMatching(/^pld_/), name: 'order', payload: { order: 1, items: [1, 2] } });
    expect((await svc.api('GET', `${base()}/saved-payloads/${created.body.id}`)).body.payload).toEqual({ order: 1, items: [1, 2] });
    expect((await svc.api('GET', `${base()}/saved-payloads`)).body.saved_payloads).toHaveLength(1);
    expect((await svc.api('POST', `${base()}/saved-payloads`, { name: 'x', payload: [1] })).status).toBe(400);
    expect((await svc.api('POST', `${base()}/saved-payloads`, { name: 'big', payload: { s: 'x'.repeat(300 * 1024) } })).status).toBe(413);
  });

  it('serves the tenant\'s pipeline log with a minimum level and keyset paging', async () => {
    const ing = await svc.api('POST', `${base()}/ingesters`, { name: 'logged', provider: 'generic', config: { signing_secret: 's' } });
    await fetch(ing.body.hook_url, { method: 'POST', body: 'unsigned' });
    const warnings = await eventually('the verification warning in the log', async () => {
      const res = await svc.api('GET', `${base()}/logs?level=warn`);
      return res.body.logs.some((l: { ingester_id: string }) => l.ingester_id === ing.body.id) ? res.body.logs : undefined;
    });
    expect(warnings.find((l: { ingester_id: string }) => l.ingester_id === ing.body.id)).toMatchObject({ level: 'warn', message: 'verification failed', ingester_id: ing.body.id, correlation_id: expect.any(String), timestamp: expect.stringMatching(/Z$/) });
    expect(warnings.every((l: { level: string }) => l.level === 'warn' || l.level === 'error')).toBe(true);
    const first = await svc.api('GET', `${base()}/logs?limit=1`);
    expect(first.body.logs).toHaveLength(1);
    if (first.body.next_cursor) {
      const second = await svc.api('GET', `${base()}/logs?limit=1&cursor=${first.body.next_cursor}`);
      expect(second.body).toMatchObject({ logs: expect.any(Array) });
      expect(second.body.logs[0]?.id).not.toBe(first.body.logs[0].id);
      expect((await svc.api('GET', `${base()}/logs?limit=1&level=error&cursor=${first.body.next_cursor}`)).status).toBe(400);
    }
    expect((await svc.api('GET', `${base()}/logs?level=loud`)).status).toBe(422);
  });

  it('pages deliveries by keyset, filtered by status, and shows one delivery with its attempts', async () => {
    const now = Date.now();
    const rows = [1, 2, 3].flatMap((n) => [1, 2].map((attempt) => deliveryRow({
      delivery_id: `dlv_01m80000000000000000page${n}`, event_id: `evt_${n}`, tenant_id: svc.tenantId, destination_id: 'dst_p', correlation_id: 'c',
      attempt_number: attempt, status: attempt === 2 ? 'failed' : 'retrying', response_code: 500, attempted_at: now - 10_000 + n * 100 + attempt,
      duration_ms: 1, error_message: 'the destination answered 500', body_sha256: 'x', next_attempt_at: null,
    })));
    // every attempt twice, in two parts that no merge collapses meanwhile, as after a sink re-read
    const table = `${svc.config.clickhouseDatabase}.deliveries`;
    await svc.clickhouse.command({ query: `SYSTEM STOP MERGES ${table}` });
    await svc.clickhouse.insert({ table, values: rows, format: 'JSONEachRow' });
    await svc.clickhouse.insert({ table, values: rows, format: 'JSONEachRow' });
    const stored = await (await svc.clickhouse.query({ query: `SELECT count() AS n FROM ${table} WHERE delivery_id LIKE 'dlv_01m80000000000000000page%'`, format: 'JSONEachRow' })).json<{ n: string }>();
    expect(Number(stored[0]!.n)).toBe(12);
    const all = await svc.api('GET', `${base()}/deliveries?status=failed&limit=10`);
    expect(all.body.deliveries.map((d: { id: string }) => d.id)).toEqual(['dlv_01m80000000000000000page3', 'dlv_01m80000000000000000page2', 'dlv_01m80000000000000000page1']);
    const two = await svc.api('GET', `${base()}/deliveries?status=failed&limit=2`);
    expect(two.body.deliveries).toHaveLength(2);
    expect(two.body.next_cursor).toEqual(expect.any(String));
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: { status: number; body: any } = await svc.api('GET', `${base()}/deliveries?status=failed&limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      for (const d of res.body.deliveries) {
        expect(d.status).toBe('failed');
        seen.push(d.id);
      }
      cursor = res.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual(['dlv_01m80000000000000000page3', 'dlv_01m80000000000000000page2', 'dlv_01m80000000000000000page1']);
    const one = await svc.api('GET', `${base()}/deliveries/dlv_01m80000000000000000page2`);
    expect(one.body).toMatchObject({ id: 'dlv_01m80000000000000000page2', status: 'failed', attempt_number: 2, error_message: 'the destination answered 500' });
    expect(one.body.attempts.map((a: { attempt_number: number; status: string }) => [a.attempt_number, a.status])).toEqual([[1, 'retrying'], [2, 'failed']]);
    await svc.clickhouse.command({ query: `SYSTEM START MERGES ${table}` });
  });

  it('404 for a delivery that does not exist', async () => {
    expect((await svc.api('GET', `${base()}/deliveries/dlv_01jzzzzzzzzzzzzzzzzzzzzzzz`)).status).toBe(404);
  });
});
