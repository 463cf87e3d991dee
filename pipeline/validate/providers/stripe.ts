import { header, reasons, reject, secretsOf, type SignedRequest, type Verdict } from '../verification';
import { anyDigestMatches, hmac, strictHex } from './digest';
import { parseJson, stringAt } from './json-body';
import { parseUnixSeconds, toleranceOf, withinTolerance } from './timestamp';

const HEADER = 'stripe-signature';

interface StripeSignature {
  timestamp: string;
  v1: Buffer[];
}

/** `t=<ts>,v1=<hex>[,v1=…][,v0=…]`; Stripe sends several v1 while an endpoint secret is being rolled. */
function parseHeader(value: string): StripeSignature | string {
  let timestamp: string | undefined;
  const v1: Buffer[] = [];
  for (const item of value.split(',')) {
    const eq = item.indexOf('=');
    if (eq < 0) continue;
    const key = item.slice(0, eq).trim();
    const val = item.slice(eq + 1).trim();
    if (key === 't' && timestamp === undefined) timestamp = val;
    if (key === 'v1') {
      const digest = strictHex(val);
      if (digest) v1.push(digest);
    }
  }
  if (timestamp === undefined) return 'no t= timestamp';
  if (v1.length === 0) return 'no v1= signature';
  return { timestamp, v1 };
}

/** Stripe: HMAC-SHA256 of `${t}.${body}`, keyed with the whole `whsec_…` text as Stripe's own libraries do. */
export function verifyStripe(req: SignedRequest, config: Record<string, unknown>): Verdict {
  const secrets = secretsOf(config);
  if (secrets.length === 0) return reject(reasons.noSecret);
  const value = header(req.headers, HEADER);
  if (value === undefined) return reject(reasons.missingHeader(HEADER));
  const sig = parseHeader(value);
  if (typeof sig === 'string') return reject(reasons.malformedHeader(HEADER, sig));
  const seconds = parseUnixSeconds(sig.timestamp);
  if (seconds === null) return reject(reasons.malformedHeader(HEADER, 't= is not a Unix timestamp'));
  const expected = secrets.map((s) => hmac('sha256', s, `${sig.timestamp}.`, req.body));
  if (!anyDigestMatches(expected, sig.v1)) return reject(reasons.mismatch(HEADER));
  const tolerance = toleranceOf(config);
  if (!withinTolerance(seconds, req.receivedAt, tolerance)) return reject(reasons.outsideTolerance(HEADER, tolerance));
  return { ok: true, eventType: stringAt(parseJson(req.body), 'type') };
}
