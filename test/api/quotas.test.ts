import { problemViolations } from '../support/problem';
import { startReceiver, type Receiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';

/** Object-count quotas per tenant: one more than the quota is 403 quota-exceeded with `quota` and `limit`. */
describe('object quotas per tenant', () => {
  let svc: TestService;
  let r: Receiver;
  const base = () => `/v1/tenants/${svc.tenantId}`;
  beforeAll(async () => {
    [svc, r] = await Promise.all([
      startTestService({ MAX_DESTINATIONS_PER_TENANT: '2', MAX_INGESTERS_PER_TENANT: '2', MAX_FLOWS_PER_TENANT: '2', MAX_SAVED_PAYLOADS_PER_TENANT: '2' }),
      startReceiver(),
    ]);
  });
  afterAll(async () => {
    await Promise.all([svc?.stop(), r?.close()]);
  });

  const expectQuotaExceeded = (res: { status: number; headers: Headers; body: any }, quota: string, limit: number) => {
    expect(res.status).toBe(403);
    expect(problemViolations(res, svc.config.errorBase)).toEqual([]);
    expect(res.body).toMatchObject({ type: `${svc.config.errorBase}/errors/quota-exceeded`, title: 'Quota exceeded', quota, limit });
  };

  it('refuses the destination beyond the quota, and admits one again after a delete', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await svc.api('POST', `${base()}/destinations`, { name: `d${i}`, url: r.url });
      expect(res.status).toBe(201);
      ids.push(res.body.id);
    }
    expectQuotaExceeded(await svc.api('POST', `${base()}/destinations`, { name: 'd2', url: r.url }), 'destinations', 2);
    // a malformed body is still a validation error, not a quota answer
    expect((await svc.api('POST', `${base()}/destinations`, { name: 'bad' })).status).toBe(400);
    expect((await svc.api('DELETE', `${base()}/destinations/${ids[0]}`)).status).toBe(204);
    expect((await svc.api('POST', `${base()}/destinations`, { name: 'd3', url: r.url })).status).toBe(201);
  });

  it('refuses ingesters, flows and saved payloads beyond their quotas', async () => {
    const ing: { status: number; body: any }[] = [];
    for (let i = 0; i < 2; i++) ing.push(await svc.api('POST', `${base()}/ingesters`, { name: `i${i}`, provider: 'none', config: {} }));
    expect(ing.map((a) => a.status)).toEqual([201, 201]);
    expectQuotaExceeded(await svc.api('POST', `${base()}/ingesters`, { name: 'i2', provider: 'none', config: {} }), 'ingesters', 2);

    const dests = (await svc.api('GET', `${base()}/destinations`)).body.destinations as { id: string }[];
    const flow = (name: string) => svc.api('POST', `${base()}/delivery-flows`, { name, ingester_id: ing[0]!.body.id, destination_ids: [dests[0]!.id] });
    expect((await flow('f0')).status).toBe(201);
    expect((await flow('f1')).status).toBe(201);
    expectQuotaExceeded(await flow('f2'), 'delivery_flows', 2);

    for (let i = 0; i < 2; i++) expect((await svc.api('POST', `${base()}/saved-payloads`, { name: `p${i}`, payload: { i } })).status).toBe(201);
    expectQuotaExceeded(await svc.api('POST', `${base()}/saved-payloads`, { name: 'p2', payload: {} }), 'saved_payloads', 2);
  });

  it('counts per tenant: another tenant still creates', async () => {
    const other = `other-${Date.now().toString(36)}`;
    const key = await svc.newKey(['write:destinations'], { tenantId: other });
    const res = await svc.api('POST', `/v1/tenants/${other}/destinations`, { name: 'd0', url: r.url }, { key });
    expect(res.status).toBe(201);
  });
});
