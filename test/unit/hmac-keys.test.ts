import { createHmac, randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { hmacOf } from '../../core/hmac-keys';
import { newSigningSecret, signStandardWebhook } from '../../core/signing/standard-webhooks';
import { hmac } from '../../pipeline/validate/providers/digest';

describe('HMAC keys made once', () => {
  it('give the digests createHmac gives for the same key, string or bytes, every time', () => {
    const body = randomBytes(1024);
    for (const algorithm of ['sha1', 'sha256', 'sha512'] as const) {
      for (const key of ['s3cret', 'é and ü', '', randomBytes(32), Buffer.alloc(0)]) {
        const expected = createHmac(algorithm, key).update('prefix.').update(body).digest();
        // twice: made, then taken from the cache
        expect(hmac(algorithm, key, 'prefix.', body)).toEqual(expected);
        expect(hmac(algorithm, key, 'prefix.', body)).toEqual(expected);
      }
    }
    // a text key and the bytes of that text are the same key; other bytes are not
    expect(hmac('sha256', 'abc', 'x')).toEqual(hmac('sha256', Buffer.from('abc'), 'x'));
    expect(hmac('sha256', 'abc', 'x')).not.toEqual(hmac('sha256', Buffer.from('abd'), 'x'));
  });

  it('sign as the standardwebhooks package verifies, also after many other keys pushed the first out', () => {
    const secret = newSigningSecret();
    const body = Buffer.from('{"type":"x"}');
    const first = signStandardWebhook(secret, 'msg_1', 1_700_000_000, body);
    for (let i = 0; i < 10_050; i++) hmacOf('sha256', `other:${i}`, () => Buffer.from(String(i))).digest();
    const again = signStandardWebhook(secret, 'msg_1', 1_700_000_000, body);
    expect(again).toBe(first);
    const wh = new Webhook(secret);
    const now = Math.floor(Date.now() / 1000);
    const headers = { 'webhook-id': 'msg_2', 'webhook-timestamp': String(now), 'webhook-signature': signStandardWebhook(secret, 'msg_2', now, body) };
    expect(wh.verify(body.toString(), headers)).toEqual({ type: 'x' });
  });
});
