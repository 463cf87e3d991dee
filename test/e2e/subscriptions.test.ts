import type { Destination } from '../../core/model';
import { sendEvent } from '../support/flow';
import { startReceiver, type Receiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';

/**
 * One ingester flowing to two destinations, one of them subscribed to `invoice.*` with a body
 * filter: each destination receives exactly the events its subscription takes.
 */
describe('subscriptions per destination, end to end', () => {
  let svc: TestService;
  let all: Receiver;
  let invoices: Receiver;

  beforeAll(async () => {
    [svc, all, invoices] = await Promise.all([startTestService({ LOG_LEVEL: 'warn' }), startReceiver(), startReceiver()]);
  });
  afterAll(async () => {
    await Promise.all([svc?.stop(), all?.close(), invoices?.close()]);
  });

  it('routes each event only to the destinations whose event types and filter take it', async () => {
    const base = `/v1/tenants/${svc.tenantId}`;
    const a = await svc.api('POST', `${base}/destinations`, { name: 'everything', url: all.url });
    const b = await svc.api('POST', `${base}/destinations`, { name: 'invoices in eur or usd', url: invoices.url });
    expect([a.status, b.status]).toEqual([201, 201]);
    const ing = await svc.api('POST', `${base}/ingesters`, { name: 'typed', provider: 'none', config: { event_type_field: 'type' }, destination_ids: [a.body.id, b.body.id] });
    expect(ing.status).toBe(201);

    // the subscription is written on the destination entity itself, as the destination API stores it
    const stored = svc.service.store.get('destination', svc.tenantId, b.body.id)!;
    const subscribed: Destination = {
      ...stored,
      event_types: ['invoice.*'],
      filter: [
        { type: 'body', path: 'data.object.currency', op: 'matches', pattern: '^(eur|usd)$' },
        { type: 'any', rules: [{ type: 'body', path: 'data.object.amount', op: 'exists' }, { type: 'header', name: 'x-force', op: 'exists' }] },
      ],
      updated_at: new Date().toISOString(),
    };
    await svc.service.store.put(subscribed);
    await eventually('the subscription applied', async () => (svc.service.store.get('destination', svc.tenantId, b.body.id)?.event_types ? true : undefined));

    const hook = `${svc.url}/v1/hooks/${ing.body.id}`;
    const events: { body: Record<string, unknown>; toInvoices: boolean }[] = [
      { body: { n: 1, type: 'invoice.paid', data: { object: { currency: 'eur', amount: 100 } } }, toInvoices: true },
      { body: { n: 2, type: 'invoice.paid', data: { object: { currency: 'gbp', amount: 100 } } }, toInvoices: false },
      { body: { n: 3, type: 'customer.created', data: { object: { currency: 'eur', amount: 100 } } }, toInvoices: false },
      { body: { n: 4, data: { object: { currency: 'eur', amount: 100 } } }, toInvoices: false },
      { body: { n: 5, type: 'invoice.payment_failed', data: { object: { currency: 'usd', amount: 0 } } }, toInvoices: true },
      { body: { n: 6, type: 'invoice.voided', data: { object: { currency: 'usd' } } }, toInvoices: false },
      { body: { n: 7, type: 'invoice.paid', data: { object: { currency: 'EUR', amount: 1 } } }, toInvoices: false },
      { body: { n: 8, type: 'invoice', data: { object: { currency: 'eur', amount: 1 } } }, toInvoices: false },
    ];
    const ids: string[] = [];
    for (const e of events) ids.push(await sendEvent(hook, e.body));

    const numbers = (r: Receiver) => r.requests.map((q) => (JSON.parse(q.body.toString('utf8')) as { n: number }).n).sort((x, y) => x - y);
    await all.waitForRequests(events.length, 60_000);
    await invoices.waitForRequests(2, 60_000);
    // every delivery the routing made has been attempted: the deliveries list holds exactly the expected ones
    const expected = events.length + events.filter((e) => e.toInvoices).length;
    const attempts = await eventually('every delivery recorded', async () => {
      const page = await svc.api('GET', `${base}/deliveries?limit=200`);
      const mine = (page.body.deliveries as { event_id: string; destination_id: string; status: string }[]).filter((d) => ids.includes(d.event_id));
      return mine.length >= expected ? mine : undefined;
    }, 60_000);
    expect(attempts).toHaveLength(expected);
    expect(attempts.every((d) => d.status === 'delivered')).toBe(true);
    for (const [i, e] of events.entries()) {
      const to = attempts.filter((d) => d.event_id === ids[i]).map((d) => d.destination_id).sort();
      expect({ n: e.body.n, to }).toEqual({ n: e.body.n, to: (e.toInvoices ? [a.body.id, b.body.id] : [a.body.id]).sort() });
    }
    expect(numbers(all)).toEqual(events.map((e) => e.body.n));
    expect(numbers(invoices)).toEqual(events.filter((e) => e.toInvoices).map((e) => e.body.n));
  }, 120_000);
});
