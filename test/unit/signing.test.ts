import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { newSigningSecret, signStandardWebhook } from '../../core/signing/standard-webhooks';
import { verifyGenericHmac } from '../../pipeline/validate/providers/generic';

describe('outbound Standard Webhooks signatures', () => {
  it('verify with the standardwebhooks package, and fail when the body changes', () => {
    const secret = newSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const body = Buffer.from('{"hello":"w\u00f6rld"}');
    const ts = Math.floor(Date.now() / 1000);
    const headers = { 'webhook-id': 'dlv_x', 'webhook-timestamp': String(ts), 'webhook-signature': signStandardWebhook(secret, 'dlv_x', ts, body) };
    expect(new Webhook(secret).verify(body.toString(), headers)).toEqual({ hello: 'w\u00f6rld' });
    expect(() => new Webhook(secret).verify('{"hello":"world"}', headers)).toThrow();
    expect(() => new Webhook(newSigningSecret()).verify(body.toString(), headers)).toThrow();
  });
});

describe('generic HMAC verification', () => {
  const body = Buffer.from('{"a":1}');
  const req = (name: string, value: string) => ({ headers: [{ name, value }], body, receivedAt: Date.now() });

  it.each([
    ['sha1', 'hex', ''],
    ['sha256', 'hex', 'sha256='],
    ['sha512', 'base64', 'v1:'],
  ] as const)('accepts %s/%s with prefix "%s"', (algorithm, encoding, prefix) => {
    const sig = prefix + createHmac(algorithm, 'k').update(body).digest(encoding);
    const verdict = verifyGenericHmac(req('x-sig', sig), { signing_secret: 'k', header: 'X-Sig', algorithm, encoding, prefix });
    expect(verdict).toEqual({ ok: true, eventType: null });
  });

  it('accepts any of several secrets during rotation', () => {
    const sig = createHmac('sha256', 'new').update(body).digest('hex');
    expect(verifyGenericHmac(req('x-webhook-signature', sig), { signing_secrets: ['old', 'new'] }).ok).toBe(true);
  });

  it.each([
    ['a wrong secret', createHmac('sha256', 'other').update(body).digest('hex'), /does not match/],
    ['a truncated digest', createHmac('sha256', 'k').update(body).digest('hex').slice(0, 20), /does not match/],
    ['garbage', 'zz-not-hex', /does not match/],
  ])('refuses %s', (_what, sig, reason) => {
    const verdict = verifyGenericHmac(req('x-webhook-signature', sig), { signing_secret: 'k' });
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) expect(verdict.reason).toMatch(reason);
  });

  it('refuses a missing header or prefix', () => {
    expect(verifyGenericHmac(req('x-other', 'x'), { signing_secret: 'k' })).toEqual({ ok: false, reason: 'missing signature header x-webhook-signature' });
    const sig = createHmac('sha256', 'k').update(body).digest('hex');
    expect(verifyGenericHmac(req('x-webhook-signature', sig), { signing_secret: 'k', prefix: 'sha256=' }).ok).toBe(false);
  });
});
