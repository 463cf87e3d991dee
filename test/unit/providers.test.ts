import { createHmac } from 'node:crypto';
import { join } from 'node:path';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { Webhook as SvixWebhook } from 'svix';
import { PROVIDERS, type Ingester, type Provider } from '../../core/model';
import { checkProviderConfig, PROVIDER_DOCS, SUPPORTED_PROVIDERS } from '../../core/providers';
import { verifyGenericHmac } from '../../pipeline/validate/providers/generic';
import { verifyGithub } from '../../pipeline/validate/providers/github';
import { verifyNone } from '../../pipeline/validate/providers/none';
import { verifyShopify } from '../../pipeline/validate/providers/shopify';
import { verifySlack } from '../../pipeline/validate/providers/slack';
import { verifyStandardWebhooks } from '../../pipeline/validate/providers/standard-webhooks';
import { verifyStripe } from '../../pipeline/validate/providers/stripe';
import type { SignedRequest, Verdict } from '../../pipeline/validate/verification';
import { verifyRequest } from '../../pipeline/validate/verify';

// @octokit/webhooks-methods exports only an `import` condition, which neither jest's CommonJS resolver
// nor tsc (for this CommonJS file) will take; its built file is loaded by path instead, and
// jest.config.js compiles it to CommonJS. The type still comes from the package itself.
type OctokitWebhooksMethods = typeof import('@octokit/webhooks-methods', { with: { 'resolution-mode': 'import' } });
const { sign: githubSign } = require(join(__dirname, '../../node_modules/@octokit/webhooks-methods/dist-node/index.js')) as OctokitWebhooksMethods;

const NOW_MS = Date.UTC(2026, 0, 15, 12, 0, 0);
const NOW_S = NOW_MS / 1000;

function request(headers: Record<string, string>, body: string | Buffer, receivedAt = NOW_MS): SignedRequest {
  return {
    headers: Object.entries(headers).map(([name, value]) => ({ name: name.toLowerCase(), value })),
    body: Buffer.isBuffer(body) ? body : Buffer.from(body),
    receivedAt,
  };
}

/** Every refusal must name what failed and must never carry a secret. */
function expectRefused(verdict: Verdict, reason: RegExp, secrets: string[]): void {
  expect(verdict.ok).toBe(false);
  if (verdict.ok) return;
  expect(verdict.reason).toMatch(reason);
  for (const s of secrets) expect(verdict.reason).not.toContain(s);
}

describe('stripe', () => {
  const stripe = new Stripe('sk_test_x');
  const secret = 'whsec_stripe_endpoint_secret';
  const other = 'whsec_some_other_secret';
  const payload = JSON.stringify({ id: 'evt_1', type: 'payment_intent.succeeded', data: { object: {} } });
  const signed = (timestamp = NOW_S, s = secret, p = payload) => stripe.webhooks.generateTestHeaderString({ payload: p, secret: s, timestamp });
  const config = { signing_secret: secret };

  it('accepts a signature made by the Stripe SDK and reads the event type', () => {
    expect(verifyStripe(request({ 'Stripe-Signature': signed() }, payload), config)).toEqual({ ok: true, eventType: 'payment_intent.succeeded' });
  });

  it('refuses a tampered body and a wrong secret', () => {
    expectRefused(verifyStripe(request({ 'Stripe-Signature': signed() }, payload.replace('evt_1', 'evt_2')), config), /signature in stripe-signature does not match/, [secret]);
    expectRefused(verifyStripe(request({ 'Stripe-Signature': signed(NOW_S, other) }, payload), config), /does not match/, [secret, other]);
  });

  it('refuses timestamps beyond the tolerance either way, and honours tolerance_seconds', () => {
    expectRefused(verifyStripe(request({ 'Stripe-Signature': signed(NOW_S - 301) }, payload), config), /outside the tolerance \(300 s\)/, [secret]);
    expectRefused(verifyStripe(request({ 'Stripe-Signature': signed(NOW_S + 301) }, payload), config), /outside the tolerance \(300 s\)/, [secret]);
    expect(verifyStripe(request({ 'Stripe-Signature': signed(NOW_S - 299) }, payload), config).ok).toBe(true);
    expect(verifyStripe(request({ 'Stripe-Signature': signed(NOW_S - 500) }, payload), { ...config, tolerance_seconds: 600 }).ok).toBe(true);
  });

  it('accepts any configured secret, and any v1 of a header carrying several', () => {
    expect(verifyStripe(request({ 'Stripe-Signature': signed() }, payload), { signing_secrets: [other, secret] }).ok).toBe(true);
    const v1 = (s: string) => /v1=([0-9a-f]+)/.exec(signed(NOW_S, s))?.[1];
    const header = `t=${NOW_S},v1=${v1(other)},v1=${v1(secret)},v0=abc`;
    expect(verifyStripe(request({ 'Stripe-Signature': header }, payload), config).ok).toBe(true);
  });

  it('refuses a missing or malformed header and a config without a secret', () => {
    expectRefused(verifyStripe(request({}, payload), config), /^missing header stripe-signature$/, [secret]);
    expectRefused(verifyStripe(request({ 'Stripe-Signature': 'garbage' }, payload), config), /malformed header stripe-signature/, [secret]);
    expectRefused(verifyStripe(request({ 'Stripe-Signature': `t=${NOW_S}` }, payload), config), /malformed header stripe-signature/, [secret]);
    expectRefused(verifyStripe(request({ 'Stripe-Signature': signed() }, payload), {}), /^no signing secret configured$/, []);
  });
});

describe('github', () => {
  const secret = 'gh-webhook-secret';
  const payload = JSON.stringify({ action: 'opened', issue: { number: 1 } });
  const headers = async (s = secret) => ({ 'X-Hub-Signature-256': await githubSign(s, payload), 'X-GitHub-Event': 'issues' });
  const config = { signing_secret: secret };

  it('accepts a signature made by @octokit/webhooks-methods; the event type is the header alone', async () => {
    expect(verifyGithub(request(await headers(), payload), config)).toEqual({ ok: true, eventType: 'issues' });
  });

  it('refuses a tampered body and a wrong secret', async () => {
    expectRefused(verifyGithub(request(await headers(), payload.replace('opened', 'closed')), config), /x-hub-signature-256 does not match/, [secret]);
    expectRefused(verifyGithub(request(await headers('nope'), payload), config), /does not match/, [secret]);
  });

  it('accepts the second secret during rotation', async () => {
    expect(verifyGithub(request(await headers(), payload), { signing_secrets: ['old', secret] }).ok).toBe(true);
  });

  it('refuses a missing header, and SHA-1 unless allow_sha1 is set', () => {
    // @octokit/webhooks-methods signs SHA-256 only; the legacy SHA-1 header is computed as GitHub documents it
    const sha1 = `sha1=${createHmac('sha1', secret).update(payload).digest('hex')}`;
    expectRefused(verifyGithub(request({ 'X-GitHub-Event': 'issues' }, payload), config), /^missing header x-hub-signature-256$/, [secret]);
    expectRefused(verifyGithub(request({ 'X-Hub-Signature': sha1 }, payload), config), /^missing header x-hub-signature-256$/, [secret]);
    expect(verifyGithub(request({ 'X-Hub-Signature': sha1 }, payload), { ...config, allow_sha1: true })).toEqual({ ok: true, eventType: null });
    expectRefused(verifyGithub(request({ 'X-Hub-Signature-256': 'deadbeef' }, payload), config), /malformed header x-hub-signature-256/, [secret]);
  });
});

describe('shopify', () => {
  // Shopify ships no small signer: base64 HMAC-SHA256 of the raw body with the app's secret, as its docs describe
  const secret = 'shpss_app_secret';
  const payload = JSON.stringify({ id: 820982911946154500, email: 'jon@example.com' });
  const sign = (s = secret, body = payload) => createHmac('sha256', s).update(body).digest('base64');
  const config = { signing_secret: secret };

  it('accepts a valid signature and reads X-Shopify-Topic', () => {
    const verdict = verifyShopify(request({ 'X-Shopify-Hmac-Sha256': sign(), 'X-Shopify-Topic': 'orders/create' }, payload), config);
    expect(verdict).toEqual({ ok: true, eventType: 'orders/create' });
  });

  it('refuses a tampered body, a wrong secret, a missing or malformed header', () => {
    expectRefused(verifyShopify(request({ 'X-Shopify-Hmac-Sha256': sign() }, `${payload} `), config), /x-shopify-hmac-sha256 does not match/, [secret]);
    expectRefused(verifyShopify(request({ 'X-Shopify-Hmac-Sha256': sign('other') }, payload), config), /does not match/, [secret]);
    expectRefused(verifyShopify(request({}, payload), config), /^missing header x-shopify-hmac-sha256$/, [secret]);
    expectRefused(verifyShopify(request({ 'X-Shopify-Hmac-Sha256': 'not base64!' }, payload), config), /malformed header/, [secret]);
  });

  it('accepts the second secret during rotation', () => {
    expect(verifyShopify(request({ 'X-Shopify-Hmac-Sha256': sign() }, payload), { signing_secrets: ['old', secret] })).toEqual({ ok: true, eventType: null });
  });
});

describe('slack', () => {
  // Slack ships no small signer: `v0=` + hex HMAC-SHA256 of `v0:<timestamp>:<body>`, as its docs describe
  const secret = '8f742231b10e8888abcd99yyyzzz85a5';
  const sign = (body: string, ts = NOW_S, s = secret) => ({
    'X-Slack-Request-Timestamp': String(ts),
    'X-Slack-Signature': `v0=${createHmac('sha256', s).update(`v0:${ts}:${body}`).digest('hex')}`,
  });
  const eventCallback = JSON.stringify({ type: 'event_callback', event: { type: 'app_mention', text: 'hi' } });
  const config = { signing_secret: secret };

  it('accepts a valid signature and reads the event type of each body shape', () => {
    expect(verifySlack(request(sign(eventCallback), eventCallback), config)).toEqual({ ok: true, eventType: 'app_mention' });
    const challenge = JSON.stringify({ type: 'url_verification', challenge: 'abc' });
    expect(verifySlack(request(sign(challenge), challenge), config)).toEqual({ ok: true, eventType: 'url_verification' });
    const form = `payload=${encodeURIComponent(JSON.stringify({ type: 'block_actions', actions: [] }))}`;
    expect(verifySlack(request(sign(form), form), config)).toEqual({ ok: true, eventType: 'block_actions' });
    const command = 'command=%2Fdeploy&text=now';
    expect(verifySlack(request(sign(command), command), config)).toEqual({ ok: true, eventType: null });
  });

  it('refuses a tampered body and a wrong secret', () => {
    expectRefused(verifySlack(request(sign(eventCallback), eventCallback.replace('hi', 'yo')), config), /x-slack-signature does not match/, [secret]);
    expectRefused(verifySlack(request(sign(eventCallback, NOW_S, 'other'), eventCallback), config), /does not match/, [secret]);
  });

  it('refuses expired and future timestamps', () => {
    expectRefused(verifySlack(request(sign(eventCallback, NOW_S - 301), eventCallback), config), /outside the tolerance \(300 s\)/, [secret]);
    expectRefused(verifySlack(request(sign(eventCallback, NOW_S + 301), eventCallback), config), /outside the tolerance \(300 s\)/, [secret]);
    expectRefused(verifySlack(request(sign(eventCallback, NOW_S - 61), eventCallback), { ...config, tolerance_seconds: 60 }), /\(60 s\)/, [secret]);
  });

  it('accepts the second secret during rotation', () => {
    expect(verifySlack(request(sign(eventCallback), eventCallback), { signing_secrets: ['old', secret] }).ok).toBe(true);
  });

  it('refuses missing headers', () => {
    const { 'X-Slack-Signature': signature, 'X-Slack-Request-Timestamp': timestamp } = sign(eventCallback);
    expectRefused(verifySlack(request({ 'X-Slack-Request-Timestamp': timestamp }, eventCallback), config), /^missing header x-slack-signature$/, [secret]);
    expectRefused(verifySlack(request({ 'X-Slack-Signature': signature }, eventCallback), config), /^missing header x-slack-request-timestamp$/, [secret]);
  });
});

describe('standard-webhooks and svix', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const other = 'whsec_dGhpcyBpcyBhbm90aGVyIHNlY3JldCBrZXkhIQ==';
  const payload = JSON.stringify({ type: 'invoice.paid', data: { id: 'in_1' } });
  const headers = (ts = NOW_S, s = secret, body = payload) => ({
    'webhook-id': 'msg_1',
    'webhook-timestamp': String(ts),
    'webhook-signature': new StandardWebhook(s).sign('msg_1', new Date(ts * 1000), body),
  });
  const config = { signing_secret: secret };

  it('accepts a signature made by the standardwebhooks package and reads the event type', () => {
    expect(verifyStandardWebhooks(request(headers(), payload), config)).toEqual({ ok: true, eventType: 'invoice.paid' });
    const eventTypeOnly = JSON.stringify({ eventType: 'user.created' });
    expect(verifyStandardWebhooks(request(headers(NOW_S, secret, eventTypeOnly), eventTypeOnly), config)).toEqual({ ok: true, eventType: 'user.created' });
  });

  it('accepts svix-* headers signed by the svix package', () => {
    const svixHeaders = {
      'svix-id': 'msg_2',
      'svix-timestamp': String(NOW_S),
      'svix-signature': new SvixWebhook(secret).sign('msg_2', new Date(NOW_MS), payload),
    };
    expect(verifyStandardWebhooks(request(svixHeaders, payload), config)).toEqual({ ok: true, eventType: 'invoice.paid' });
    expectRefused(verifyStandardWebhooks(request({ ...svixHeaders, 'svix-id': 'msg_3' }, payload), config), /svix-signature does not match/, [secret]);
  });

  it('refuses a tampered body and a wrong secret', () => {
    expectRefused(verifyStandardWebhooks(request(headers(), payload.replace('in_1', 'in_2')), config), /webhook-signature does not match/, [secret]);
    expectRefused(verifyStandardWebhooks(request(headers(NOW_S, other), payload), config), /does not match/, [secret, other]);
  });

  it('refuses expired and future timestamps', () => {
    expectRefused(verifyStandardWebhooks(request(headers(NOW_S - 301), payload), config), /webhook-timestamp is outside the tolerance \(300 s\)/, [secret]);
    expectRefused(verifyStandardWebhooks(request(headers(NOW_S + 301), payload), config), /outside the tolerance/, [secret]);
  });

  it('accepts the second secret, and any signature of a space-separated list', () => {
    expect(verifyStandardWebhooks(request(headers(), payload), { signing_secrets: [other, secret] }).ok).toBe(true);
    const both = headers();
    both['webhook-signature'] = `${headers(NOW_S, other)['webhook-signature']} v1a,ignored ${both['webhook-signature']}`;
    expect(verifyStandardWebhooks(request(both, payload), config).ok).toBe(true);
  });

  it('refuses each missing header', () => {
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const) {
      const partial: Record<string, string> = headers();
      delete partial[name];
      expectRefused(verifyStandardWebhooks(request(partial, payload), config), new RegExp(`^missing header ${name}$`), [secret]);
    }
  });
});

describe('generic and none event types', () => {
  const body = JSON.stringify({ data: { kind: 'order.paid' } });
  const sig = createHmac('sha256', 'k').update(body).digest('hex');

  it('generic reads the configured header, else the configured body field', () => {
    const req = request({ 'x-webhook-signature': sig, 'x-event': 'from-header' }, body);
    expect(verifyGenericHmac(req, { signing_secret: 'k', event_type_header: 'X-Event' })).toEqual({ ok: true, eventType: 'from-header' });
    expect(verifyGenericHmac(req, { signing_secret: 'k', event_type_field: 'data.kind' })).toEqual({ ok: true, eventType: 'order.paid' });
    expect(verifyGenericHmac(req, { signing_secret: 'k', event_type_field: 'data.missing' })).toEqual({ ok: true, eventType: null });
    expect(verifyGenericHmac(req, { signing_secret: 'k' })).toEqual({ ok: true, eventType: null });
  });

  it('generic still refuses without a secret; none accepts anything', () => {
    expectRefused(verifyGenericHmac(request({ 'x-webhook-signature': sig }, body), {}), /^no signing secret configured$/, []);
    expect(verifyNone(request({}, 'not json'), {})).toEqual({ ok: true, eventType: null });
    expect(verifyNone(request({}, body), { event_type_field: 'data.kind' })).toEqual({ ok: true, eventType: 'order.paid' });
    expect(verifyNone(request({}, body), { event_type_field: 'constructor' })).toEqual({ ok: true, eventType: null });
  });
});

describe('verifyRequest', () => {
  const ingester = (provider: Provider, config: Record<string, unknown>): Ingester => ({
    kind: 'ingester', id: 'ing_1', tenant_id: 't', name: 'n', provider, config, filters: [], created_at: '', updated_at: '',
  });

  it('dispatches every provider to its own verifier', () => {
    const req = request({}, '{}');
    const reasons = PROVIDERS.map((p) => {
      const v = verifyRequest(ingester(p, { signing_secret: 'whsec_AAAA' }), req);
      return v.ok ? 'ok' : v.reason;
    });
    expect(reasons).toEqual([
      'missing signature header x-webhook-signature',
      'missing header stripe-signature',
      'missing header x-hub-signature-256',
      'missing header x-shopify-hmac-sha256',
      'missing header x-slack-signature',
      'missing header webhook-id',
      'ok',
    ]);
  });
});

describe('checkProviderConfig', () => {
  it('supports and documents every provider', () => {
    expect([...SUPPORTED_PROVIDERS].sort()).toEqual([...PROVIDERS].sort());
    for (const p of PROVIDERS) expect(Object.keys(PROVIDER_DOCS[p])).toEqual(['signature', 'event_type', 'config']);
  });

  it('requires a secret for every provider but none', () => {
    for (const p of PROVIDERS.filter((x) => x !== 'none')) {
      expect(checkProviderConfig(p, {})).toEqual([{ field: 'config.signing_secret', message: expect.stringContaining('is required') }]);
      expect(checkProviderConfig(p, { signing_secrets: [] })).toHaveLength(1);
    }
    expect(checkProviderConfig('none', {})).toEqual([]);
    expect(checkProviderConfig('stripe', { signing_secret: 'whsec_x' })).toEqual([]);
    expect(checkProviderConfig('github', { signing_secrets: ['a', 'b'], some_unknown_key: 1 })).toEqual([]);
    expect(checkProviderConfig('slack', { signing_secrets: ['a', 7] })).toEqual([{ field: 'config.signing_secrets', message: expect.any(String) }]);
  });

  it('checks Standard Webhooks secrets for whsec_ + base64', () => {
    expect(checkProviderConfig('standard-webhooks', { signing_secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' })).toEqual([]);
    expect(checkProviderConfig('standard-webhooks', { signing_secret: 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' })).toEqual([]);
    expect(checkProviderConfig('standard-webhooks', { signing_secret: 'whsec_not base64!' }).map((p) => p.field)).toEqual(['config.signing_secret']);
    expect(checkProviderConfig('standard-webhooks', { signing_secrets: ['whsec_AAAA', 'nope!'] }).map((p) => p.field)).toEqual(['config.signing_secrets[1]']);
  });

  it('refuses a signature or event-type header whose value the Hook URL redacts', () => {
    expect(checkProviderConfig('generic', { signing_secret: 's', header: 'Authorization' }).map((p) => p.field)).toEqual(['config.header']);
    expect(checkProviderConfig('none', { event_type_header: 'cookie' }).map((p) => p.field)).toEqual(['config.event_type_header']);
    expect(checkProviderConfig('none', { event_type_header: 'x-event' })).toEqual([]);
  });

  it('checks the generic settings', () => {
    const problems = checkProviderConfig('generic', { signing_secret: 's', algorithm: 'md5', encoding: 'base32', header: 3, prefix: false });
    expect(problems.map((p) => p.field)).toEqual(['config.algorithm', 'config.encoding', 'config.header', 'config.prefix']);
    expect(problems[0]?.message).toBe('must be one of sha1, sha256, sha512');
    expect(checkProviderConfig('generic', { signing_secret: 's', algorithm: 'sha512', encoding: 'base64', header: 'x-sig', prefix: '' })).toEqual([]);
  });

  it.each([0, 1.5, 86_401, '300', -5])('refuses tolerance_seconds %p', (tolerance) => {
    expect(checkProviderConfig('stripe', { signing_secret: 's', tolerance_seconds: tolerance })).toEqual([
      { field: 'config.tolerance_seconds', message: 'must be an integer from 1 to 86400' },
    ]);
  });

  it('checks the event type keys when present', () => {
    expect(checkProviderConfig('none', { event_type_header: 'x-event', event_type_field: 'data.kind', tolerance_seconds: 86_400 })).toEqual([]);
    expect(checkProviderConfig('none', { event_type_header: 1, event_type_field: '' }).map((p) => p.field)).toEqual(['config.event_type_header', 'config.event_type_field']);
  });
});
