import { header, reasons, reject, secretsOf, type SignedRequest, type Verdict } from '../verification';
import { anyDigestMatches, hmac, strictHex } from './digest';
import { parseJson, stringAt } from './json-body';
import { parseUnixSeconds, toleranceOf, withinTolerance } from './timestamp';

const SIGNATURE = 'x-slack-signature';
const TIMESTAMP = 'x-slack-request-timestamp';

/**
 * Events API bodies are JSON (`event_callback` carries the real type in `event.type`); interactive
 * requests are form-encoded with the JSON in `payload`. Anything else (slash commands) has no type.
 */
export function slackEventType(body: Buffer): string | null {
  const json = parseJson(body);
  if (json !== undefined) {
    const type = stringAt(json, 'type');
    return type === 'event_callback' ? stringAt(json, 'event.type') : type;
  }
  const payload = new URLSearchParams(body.toString()).get('payload');
  return payload === null ? null : stringAt(parseJson(payload), 'type');
}

/** Slack: `v0=` + hex HMAC-SHA256 of `v0:<X-Slack-Request-Timestamp>:<body>`. */
export function verifySlack(req: SignedRequest, config: Record<string, unknown>): Verdict {
  const secrets = secretsOf(config);
  if (secrets.length === 0) return reject(reasons.noSecret);
  const signature = header(req.headers, SIGNATURE);
  if (signature === undefined) return reject(reasons.missingHeader(SIGNATURE));
  const timestamp = header(req.headers, TIMESTAMP)?.trim();
  if (timestamp === undefined) return reject(reasons.missingHeader(TIMESTAMP));
  const seconds = parseUnixSeconds(timestamp);
  if (seconds === null) return reject(reasons.malformedHeader(TIMESTAMP, 'not a Unix timestamp'));
  const digest = signature.startsWith('v0=') ? strictHex(signature.slice(3).trim()) : null;
  if (!digest) return reject(reasons.malformedHeader(SIGNATURE, 'expected v0= and a hex digest'));
  const expected = secrets.map((s) => hmac('sha256', s, `v0:${timestamp}:`, req.body));
  if (!anyDigestMatches(expected, [digest])) return reject(reasons.mismatch(SIGNATURE));
  const tolerance = toleranceOf(config);
  if (!withinTolerance(seconds, req.receivedAt, tolerance)) return reject(reasons.outsideTolerance(TIMESTAMP, tolerance));
  return { ok: true, eventType: slackEventType(req.body) };
}
