import { header, reasons, reject, secretsOf, type SignedRequest, type Verdict } from '../verification';
import { anyDigestMatches, hmac, strictBase64 } from './digest';

const HEADER = 'x-shopify-hmac-sha256';

/** Shopify: base64 HMAC-SHA256 of the body; it signs no timestamp, so there is nothing to bound replays by. */
export function verifyShopify(req: SignedRequest, config: Record<string, unknown>): Verdict {
  const secrets = secretsOf(config);
  if (secrets.length === 0) return reject(reasons.noSecret);
  const value = header(req.headers, HEADER);
  if (value === undefined) return reject(reasons.missingHeader(HEADER));
  const digest = strictBase64(value.trim());
  if (!digest) return reject(reasons.malformedHeader(HEADER, 'not base64'));
  const expected = secrets.map((s) => hmac('sha256', s, req.body));
  if (!anyDigestMatches(expected, [digest])) return reject(reasons.mismatch(HEADER));
  return { ok: true, eventType: header(req.headers, 'x-shopify-topic')?.trim() || null };
}
