import { startTestService, type TestService } from '../support/service';
import { expectProblem } from '../support/problem';

/**
 * Bodies are closed: a member the API does not know is refused, naming it, never ignored; what a
 * GET shows can be sent back as it was (the members the service sets are accepted and left as
 * stored), including an ingester's delivery flows.
 */
describe('request body members', () => {
  let svc: TestService;
  const base = (path: string) => `/v1/tenants/${svc.tenantId}/${path}`;
  let dstA: string;
  let dstB: string;
  let dstC: string;

  beforeAll(async () => {
    svc = await startTestService({ RATE_LIMITS: 'default=100000/60s' });
    const make = async (name: string) => {
      const res = await svc.api('POST', base('destinations'), { name, url: 'http://127.0.0.1:9/hook' });
      expect(res.status).toBe(201);
      return res.body.id as string;
    };
    [dstA, dstB, dstC] = [await make('members a'), await make('members b'), await make('members c')];
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it.each([
    ['destinations', () => ({ name: 'unknown member', url: 'http://127.0.0.1:9/x', colour: 'blue' })],
    ['ingesters', () => ({ name: 'unknown member', provider: 'none', config: {}, colour: 'blue' })],
    ['delivery-flows', () => ({ name: 'unknown member', ingester_id: 'ing_x', destination_ids: [], colour: 'blue' })],
    ['saved-payloads', () => ({ name: 'unknown member', payload: {}, colour: 'blue' })],
    ['api-keys', () => ({ name: 'unknown member', scopes: ['read:keys'], colour: 'blue' })],
  ])('POST %s refuses an unknown member with 400 naming it, and creates nothing', async (path, body) => {
    const before = JSON.stringify((await svc.api('GET', `${base(path)}?limit=100`)).body);
    const res = await svc.api('POST', base(path), body());
    expectProblem(res, 400, 'validation-error', svc.config.errorBase);
    expect(res.body.errors).toContainEqual({ field: 'colour', message: 'is not a member of this body' });
    expect(JSON.stringify((await svc.api('GET', `${base(path)}?limit=100`)).body)).toBe(before);
  });

  it('a destination, a flow and a saved payload read back can be sent again', async () => {
    const dst = (await svc.api('GET', base(`destinations/${dstA}`))).body;
    const again = await svc.api('POST', base('destinations'), { ...dst, name: 'members a copy' });
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(dst.id);

    const saved = await svc.api('POST', base('saved-payloads'), { name: 'members payload', payload: { a: 1 } });
    const resent = await svc.api('POST', base('saved-payloads'), { ...saved.body, name: 'members payload 2' });
    expect(resent.status).toBe(201);
    expect(resent.body.payload).toEqual({ a: 1 });

    const ing = await svc.api('POST', base('ingesters'), { name: 'members flows host', provider: 'none', config: {} });
    const flow = await svc.api('POST', base('delivery-flows'), { name: 'members flow', ingester_id: ing.body.id, destination_ids: [dstA] });
    expect(flow.status).toBe(201);
    const put = await svc.api('PUT', base(`delivery-flows/${flow.body.id}`), { ...flow.body, destination_ids: [dstA, dstB] });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ id: flow.body.id, ingester_id: ing.body.id, destination_ids: [dstA, dstB], created_at: flow.body.created_at });
    const other = await svc.api('POST', base('ingesters'), { name: 'members other host', provider: 'none', config: {} });
    const moved = await svc.api('PUT', base(`delivery-flows/${flow.body.id}`), { ...put.body, ingester_id: other.body.id });
    expectProblem(moved, 400, 'validation-error', svc.config.errorBase);
    expect(moved.body.errors.map((e: { field: string }) => e.field)).toEqual(['ingester_id']);
  });

  it('an ingester created with delivery_flows gets them; its GET answer sent back keeps them; a PUT rewrites, adds and drops flows', async () => {
    const created = await svc.api('POST', base('ingesters'), {
      name: 'members ingester', provider: 'none', config: {},
      delivery_flows: [{ name: 'to a and b', destination_ids: [dstA, dstB] }, { destination_ids: [dstC] }],
    });
    expect(created.status).toBe(201);
    const flows = created.body.delivery_flows as { id: string; name: string; destination_ids: string[] }[];
    expect(flows.map((f) => [f.name, f.destination_ids])).toEqual(
      expect.arrayContaining([['to a and b', [dstA, dstB]], ['members ingester 2', [dstC]]]),
    );
    expect(flows).toHaveLength(2);
    const listed = (await svc.api('GET', `${base('delivery-flows')}?limit=100`)).body.delivery_flows.filter((f: { ingester_id: string }) => f.ingester_id === created.body.id);
    expect(listed).toHaveLength(2);

    // the GET answer as it was: nothing changes
    const shown = (await svc.api('GET', base(`ingesters/${created.body.id}`))).body;
    const same = await svc.api('PUT', base(`ingesters/${created.body.id}`), shown);
    expect(same.status).toBe(200);
    expect(same.body.delivery_flows).toEqual(shown.delivery_flows);
    expect(same.body.hook_url).toBe(shown.hook_url);

    // POSTed as a new ingester: new flows to the same destinations
    const copy = await svc.api('POST', base('ingesters'), { ...shown, name: 'members ingester copy' });
    expect(copy.status).toBe(201);
    expect(copy.body.id).not.toBe(shown.id);
    expect(copy.body.delivery_flows.map((f: { destination_ids: string[] }) => f.destination_ids)).toEqual(expect.arrayContaining([[dstA, dstB], [dstC]]));
    for (const f of copy.body.delivery_flows) expect(flows.map((g) => g.id)).not.toContain(f.id);

    // rewrite the first (keeping its name), drop the second, add one
    const first = flows.find((f) => f.name === 'to a and b')!;
    const changed = await svc.api('PUT', base(`ingesters/${created.body.id}`), {
      name: 'members ingester',
      delivery_flows: [{ id: first.id, destination_ids: [dstA] }, { name: 'new one', destination_ids: [dstB, dstC] }],
    });
    expect(changed.status).toBe(200);
    const after = changed.body.delivery_flows as typeof flows;
    expect(after).toHaveLength(2);
    expect(after).toContainEqual({ id: first.id, name: 'to a and b', destination_ids: [dstA] });
    expect(after.find((f) => f.id !== first.id)).toMatchObject({ name: 'new one', destination_ids: [dstB, dstC] });
    expect(after.map((f) => f.id)).not.toContain(flows.find((f) => f !== first)!.id);
  });

  it('refuses flows of another ingester, both destination_ids and delivery_flows, and malformed entries, each by field', async () => {
    const a = await svc.api('POST', base('ingesters'), { name: 'members refuse a', provider: 'none', config: {}, destination_ids: [dstA] });
    const b = await svc.api('POST', base('ingesters'), { name: 'members refuse b', provider: 'none', config: {} });
    const foreign = a.body.delivery_flows[0].id as string;
    const res = await svc.api('PUT', base(`ingesters/${b.body.id}`), {
      name: 'members refuse b',
      destination_ids: [dstA],
      delivery_flows: [{ id: foreign, destination_ids: [dstA] }, { name: 'x' }, { destination_ids: ['dst_missing'], colour: 1 }, 'flow'],
    });
    expectProblem(res, 400, 'validation-error', svc.config.errorBase);
    expect(res.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(
      ['delivery_flows', 'delivery_flows[0].id', 'delivery_flows[1].destination_ids', 'delivery_flows[2].colour', 'delivery_flows[2].destination_ids[0]', 'delivery_flows[3]'].sort(),
    );
    // nothing changed on either
    expect((await svc.api('GET', base(`ingesters/${b.body.id}`))).body.delivery_flows).toEqual([]);
    expect((await svc.api('GET', base(`ingesters/${a.body.id}`))).body.delivery_flows).toEqual(a.body.delivery_flows);
  });

  it('names an unknown nested member by its path, a type mismatch by its field, and reports every problem of the body together', async () => {
    const nested = await svc.api('POST', base('ingesters'), { name: 'members nested', provider: 'none', delivery_flows: [{ destination_ids: [dstA], colour: 'blue' }] });
    expectProblem(nested, 400, 'validation-error', svc.config.errorBase);
    expect(nested.body.errors).toEqual([{ field: 'delivery_flows[0].colour', message: 'is not a member of this body' }]);

    const several = await svc.api('POST', base('destinations'), { url: 7, retry_schedule_ms: [0, -5], auth: { type: 'bearer' }, colour: 'blue' });
    expectProblem(several, 400, 'validation-error', svc.config.errorBase);
    expect(several.body.errors).toEqual(expect.arrayContaining([
      { field: 'name', message: 'is required' },
      { field: 'url', message: 'must be a string' },
      { field: 'retry_schedule_ms', message: 'each item must be at least 0' },
      { field: 'auth.token', message: 'is required' },
      { field: 'colour', message: 'is not a member of this body' },
    ]));
    expect(several.body.errors).toHaveLength(5);

    // the schema's problems and the route's own (an id that does not exist) in one answer
    const mixed = await svc.api('POST', base('delivery-flows'), { name: 'members mixed', ingester_id: 'ing_missing', destination_ids: [dstA, 3] });
    expectProblem(mixed, 400, 'validation-error', svc.config.errorBase);
    expect(mixed.body.errors).toEqual([
      { field: 'destination_ids[1]', message: 'must be a string' },
      { field: 'ingester_id', message: 'ingester ing_missing does not exist' },
    ]);
  });
});
