import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { startReceiver, type Receiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';

describe('one webhook end to end through Kafka', () => {
  let svc: TestService;
  let receiver: Receiver;

  beforeAll(async () => {
    [svc, receiver] = await Promise.all([startTestService(), startReceiver()]);
  });
  afterAll(async () => {
    await Promise.all([svc?.stop(), receiver?.close()]);
  });

  it('delivers the exact body and content type, signed, and lists the attempt', async () => {
    const dest = await svc.api('POST', `/v1/tenants/${svc.tenantId}/destinations`, { name: 'receiver', url: receiver.url });
    expect(dest.status).toBe(201);
    expect(dest.body).toMatchObject({ name: 'receiver', url: receiver.url, status: 'active' });
    expect(dest.body.id).toMatch(/^dst_/);
    expect(dest.body.signing_secret).toMatch(/^whsec_/);
    expect(new Date(dest.body.created_at).toISOString()).toBe(dest.body.created_at);

    const secret = 'generic-test-secret';
    const ing = await svc.api('POST', `/v1/tenants/${svc.tenantId}/ingesters`, {
      name: 'orders',
      provider: 'generic',
      config: { signing_secret: secret, header: 'x-signature', algorithm: 'sha256', encoding: 'hex', prefix: 'sha256=' },
      destination_ids: [dest.body.id],
    });
    expect(ing.status).toBe(201);
    expect(ing.body.hook_url).toBe(`${svc.url}/v1/hooks/${ing.body.id}`);
    expect(ing.body.config.signing_secret).toBe('****cret');

    // bytes that a re-serialisation would change: key order, spacing, a non-ASCII character
    const body = Buffer.from('{"z":1,  "a":"caf\u00e9", "n":[1,2.50]}\n', 'utf8');
    const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
    const hookUrl = `${svc.url}/v1/hooks/${ing.body.id}`;
    const res = await fetch(hookUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/vnd.test+json; charset=utf-8', 'x-signature': signature, 'x-correlation-id': 'corr-e2e-1' },
      body,
    });
    expect(res.status).toBe(202);
    const accepted = (await res.json()) as { event_id: string; correlation_id: string };
    expect(accepted.event_id).toMatch(/^evt_/);
    expect(accepted.correlation_id).toBe('corr-e2e-1');

    const [got] = await receiver.waitForRequests(1);
    expect(got!.method).toBe('POST');
    expect(got!.body.equals(body)).toBe(true);
    expect(got!.headers['content-type']).toBe('application/vnd.test+json; charset=utf-8');
    expect(got!.headers['x-correlation-id']).toBe('corr-e2e-1');
    const wh = new Webhook(dest.body.signing_secret);
    expect(() =>
      wh.verify(got!.body.toString('utf8'), {
        'webhook-id': String(got!.headers['webhook-id']),
        'webhook-timestamp': String(got!.headers['webhook-timestamp']),
        'webhook-signature': String(got!.headers['webhook-signature']),
      }),
    ).not.toThrow();

    const listed = await eventually('the delivery row in ClickHouse', async () => {
      const r = await svc.api('GET', `/v1/tenants/${svc.tenantId}/deliveries`);
      expect(r.status).toBe(200);
      return r.body.deliveries.length > 0 ? r.body : undefined;
    });
    expect(listed.deliveries).toHaveLength(1);
    expect(listed.deliveries[0]).toMatchObject({
      id: got!.headers['webhook-id'],
      event_id: accepted.event_id,
      destination_id: dest.body.id,
      status: 'delivered',
      response_code: 200,
      attempt_number: 1,
    });
    expect(listed.next_cursor).toBeNull();
    // at-least-once must not mean "many times" when nothing failed
    await new Promise((r) => setTimeout(r, 1000));
    expect(receiver.requests).toHaveLength(1);
  });

  it('refuses a webhook whose signature does not match, and delivers nothing for it', async () => {
    const ing = await svc.api('POST', `/v1/tenants/${svc.tenantId}/ingesters`, { name: 'strict', provider: 'generic', config: { signing_secret: 's3cret' } });
    expect(ing.status).toBe(201);
    const res = await fetch(`${svc.url}/v1/hooks/${ing.body.id}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-webhook-signature': 'deadbeef' }, body: '{}' });
    // accepted (durably recorded), then failed by the validate stage
    expect(res.status).toBe(202);
    const { event_id } = (await res.json()) as { event_id: string };
    const row = await eventually('the failed transition', async () => {
      const rs = await svc.clickhouse.query({
        query: `SELECT state, reason FROM ${svc.config.clickhouseDatabase}.event_transitions WHERE event_id = {id:String} AND state = 'failed'`,
        query_params: { id: event_id },
        format: 'JSONEachRow',
      });
      const rows = await rs.json<{ state: string; reason: string }>();
      return rows[0];
    });
    expect(row.reason).toContain('signature');
  });

  it('answers 404 for an unknown Hook URL and 413 beyond the body limit', async () => {
    const missing = await fetch(`${svc.url}/v1/hooks/ing_01jzzzzzzzzzzzzzzzzzzzzzzz`, { method: 'POST', body: 'x' });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toContain('application/problem+json');
    const ing = await svc.api('POST', `/v1/tenants/${svc.tenantId}/ingesters`, { name: 'open', provider: 'none', config: {} });
    const big = await fetch(`${svc.url}/v1/hooks/${ing.body.id}`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: Buffer.alloc(svc.config.ingestMaxBodyBytes + 1) });
    expect(big.status).toBe(413);
    const problem = (await big.json()) as { type: string; status: number };
    expect(problem.type).toBe(`${svc.config.errorBase}/errors/payload-too-large`);
  });
});
