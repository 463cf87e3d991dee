import { isUtf8 } from 'node:buffer';
import { createHmac, randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { decodeStoredBody, encodeStoredBody, sha256Hex } from '../../core/stored-body';
import { deliveryRow, eventRow } from '../../pipeline/sink/rows';
import { destinationWithIngester, waitForStates } from '../support/flow';
import { receiverPool } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';

const TRICKY: [string, Buffer][] = [
  ['random bytes', randomBytes(512)],
  ['text starting with the base64 marker', Buffer.from('base64:aGVsbG8gd29ybGQ=', 'utf8')],
  ['a UTF-8 byte order mark', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":1}')])],
  ['NUL bytes', Buffer.from('a\u0000b\u0000\u0000c', 'utf8')],
  ['every byte value', Buffer.from(Array.from({ length: 256 }, (_, i) => i))],
  ['an empty body', Buffer.alloc(0)],
];

/**
 * The standardwebhooks package verifies text (it reads a Buffer as UTF-8), so a UTF-8 body goes
 * through it; for other bytes the spec's HMAC-SHA256 of `id.timestamp.body` is computed over the raw bytes.
 */
function signatureVerifies(secret: string, body: Buffer, headers: Record<string, string>): boolean {
  if (isUtf8(body)) {
    try {
      new Webhook(secret).verify(body.toString('utf8'), headers, { jsonParse: false });
      return true;
    } catch {
      return false;
    }
  }
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const signed = Buffer.concat([Buffer.from(`${headers['webhook-id']}.${headers['webhook-timestamp']}.`), body]);
  const expected = `v1,${createHmac('sha256', key).update(signed).digest('base64')}`;
  return String(headers['webhook-signature']).split(' ').includes(expected);
}

describe('stored bodies', () => {
  it('read back as the same bytes, whatever they are, and refuse a body that does not match its digest', () => {
    for (const [, bytes] of TRICKY) expect(decodeStoredBody(encodeStoredBody(bytes), sha256Hex(bytes))).toEqual(bytes);
    // a text body that starts with the marker is stored encoded, not as itself
    expect(encodeStoredBody(Buffer.from('base64:aGk='))).not.toBe('base64:aGk=');
    // rows stored before that rule: the digest picks the reading that gives the received bytes
    expect(decodeStoredBody('base64:aGk=', sha256Hex(Buffer.from('base64:aGk=')))).toEqual(Buffer.from('base64:aGk='));
    expect(decodeStoredBody('base64:aGk=', sha256Hex(Buffer.from('hi')))).toEqual(Buffer.from('hi'));
    expect(decodeStoredBody('hello', sha256Hex(Buffer.from('hellO')))).toBeUndefined();
  });
});

describe('retrying events with any body', () => {
  let svc: TestService;
  const receivers = receiverPool();

  beforeAll(async () => {
    svc = await startTestService({ RETRY_TIERS: '100ms' });
  });
  afterAll(async () => {
    await Promise.all([svc?.stop(), receivers.closeAll()]);
  });

  it.each(TRICKY)('delivers %s byte for byte on a retry through the API', async (name, bytes) => {
    const r = await receivers.next();
    r.respondWith(500);
    const { hookUrl, secret } = await destinationWithIngester(svc, `bytes ${name}`, r.url, { retry_schedule_ms: [0] });
    const sent = await fetch(hookUrl, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: bytes });
    expect(sent.status).toBe(202);
    const eventId = ((await sent.json()) as { event_id: string }).event_id;
    await waitForStates(svc, eventId, ['failed', 'dlq_queued']);
    expect(r.requests[0]!.body.equals(bytes)).toBe(true);

    r.respondWith(200);
    await eventually('the dead delivery to be retriable', async () => {
      const res = await svc.api('POST', `/v1/tenants/${svc.tenantId}/events/${eventId}/retry`);
      return res.status === 202 ? res : undefined;
    });
    const [, retried] = await r.waitForRequests(2);
    expect(retried!.body.equals(bytes)).toBe(true);
    const headers = { 'webhook-id': String(retried!.headers['webhook-id']), 'webhook-timestamp': String(retried!.headers['webhook-timestamp']), 'webhook-signature': String(retried!.headers['webhook-signature']) };
    expect(signatureVerifies(secret, retried!.body, headers)).toBe(true);
  });

  it('refuses to retry an event whose stored body does not match its digest', async () => {
    const r = await receivers.next();
    const { destinationId, ingesterId } = await destinationWithIngester(svc, 'tampered', r.url);
    const eventId = 'evt_01m8000000000000000tamper';
    const now = Date.now();
    const row = eventRow({ event_id: eventId, tenant_id: svc.tenantId, ingester_id: ingesterId, correlation_id: 'c', received_at: now, event_type: null, content_type: 'text/plain', headers: [], method: 'POST', query: '', source_ip: null, hops: 0, body: Buffer.from('the body received') });
    const database = svc.config.clickhouseDatabase;
    await svc.clickhouse.insert({ table: `${database}.events`, values: [{ ...row, body: 'another body' }], format: 'JSONEachRow' });
    await svc.clickhouse.insert({
      table: `${database}.deliveries`,
      values: [deliveryRow({ delivery_id: 'dlv_01m8000000000000000tamper', event_id: eventId, tenant_id: svc.tenantId, destination_id: destinationId, correlation_id: 'c', attempt_number: 1, status: 'failed', response_code: 500, attempted_at: now, duration_ms: 1, error_message: 'the destination answered 500', body_sha256: row.body_sha256, next_attempt_at: null })],
      format: 'JSONEachRow',
    });
    const res = await svc.api('POST', `/v1/tenants/${svc.tenantId}/events/${eventId}/retry`);
    expect(res.status).toBe(409);
    expect(res.body.detail).toMatch(/stored body does not match/);
    expect(r.requests).toHaveLength(0);
  });
});
