import { header, reasons, reject, secretsOf, type SignedRequest, type Verdict } from '../verification';
import { anyDigestMatches, hmac, strictBase64 } from './digest';
import { parseJson, stringAt } from './json-body';
import { parseUnixSeconds, toleranceOf, withinTolerance } from './timestamp';

/** Svix sends the same scheme under its own header names; one request uses one family throughout. */
const FAMILIES = ['webhook', 'svix'] as const;

function headersOf(req: SignedRequest) {
  const family = FAMILIES.find((f) => header(req.headers, `${f}-id`) !== undefined) ?? 'webhook';
  const names = { id: `${family}-id`, timestamp: `${family}-timestamp`, signature: `${family}-signature` };
  return {
    names,
    id: header(req.headers, names.id),
    timestamp: header(req.headers, names.timestamp)?.trim(),
    signature: header(req.headers, names.signature),
  };
}

/** The key is the base64 part of `whsec_<base64>` (the spec's libraries also take it without the prefix). */
function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
}

/** `v1,<base64>` entries of a space-separated list; other versions (v1a, asymmetric) are not ours to check. */
function v1Signatures(value: string): Buffer[] {
  const out: Buffer[] = [];
  for (const entry of value.split(' ')) {
    if (!entry.startsWith('v1,')) continue;
    const digest = strictBase64(entry.slice(3));
    if (digest) out.push(digest);
  }
  return out;
}

/** Standard Webhooks (and Svix): base64 HMAC-SHA256 of `${id}.${timestamp}.${body}`. */
export function verifyStandardWebhooks(req: SignedRequest, config: Record<string, unknown>): Verdict {
  const secrets = secretsOf(config);
  if (secrets.length === 0) return reject(reasons.noSecret);
  const h = headersOf(req);
  if (h.id === undefined) return reject(reasons.missingHeader(h.names.id));
  if (h.timestamp === undefined) return reject(reasons.missingHeader(h.names.timestamp));
  if (h.signature === undefined) return reject(reasons.missingHeader(h.names.signature));
  const seconds = parseUnixSeconds(h.timestamp);
  if (seconds === null) return reject(reasons.malformedHeader(h.names.timestamp, 'not a Unix timestamp'));
  const given = v1Signatures(h.signature);
  if (given.length === 0) return reject(reasons.malformedHeader(h.names.signature, 'no v1 signature'));
  const expected = secrets.map((s) => hmac('sha256', keyOf(s), `${h.id}.${h.timestamp}.`, req.body));
  if (!anyDigestMatches(expected, given)) return reject(reasons.mismatch(h.names.signature));
  const tolerance = toleranceOf(config);
  if (!withinTolerance(seconds, req.receivedAt, tolerance)) return reject(reasons.outsideTolerance(h.names.timestamp, tolerance));
  const json = parseJson(req.body);
  return { ok: true, eventType: stringAt(json, 'type') ?? stringAt(json, 'eventType') };
}
