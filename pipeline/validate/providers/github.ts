import { header, reasons, reject, secretsOf, type SignedRequest, type Verdict } from '../verification';
import { anyDigestMatches, hmac, strictHex } from './digest';

const SHA256_HEADER = 'x-hub-signature-256';
const SHA1_HEADER = 'x-hub-signature';

function signatureHeader(req: SignedRequest, allowSha1: boolean) {
  const sha256 = header(req.headers, SHA256_HEADER);
  if (sha256 !== undefined) return { name: SHA256_HEADER, algorithm: 'sha256' as const, value: sha256 };
  const sha1 = allowSha1 ? header(req.headers, SHA1_HEADER) : undefined;
  if (sha1 !== undefined) return { name: SHA1_HEADER, algorithm: 'sha1' as const, value: sha1 };
  return null;
}

/**
 * GitHub: `X-Hub-Signature-256: sha256=<hex>` of the body. SHA-1 is weak, so the legacy
 * `X-Hub-Signature` counts only when the config opts in (`allow_sha1: true`) for senders that
 * cannot do better, and even then only when the SHA-256 header is absent.
 */
export function verifyGithub(req: SignedRequest, config: Record<string, unknown>): Verdict {
  const secrets = secretsOf(config);
  if (secrets.length === 0) return reject(reasons.noSecret);
  const signed = signatureHeader(req, config.allow_sha1 === true);
  if (!signed) return reject(reasons.missingHeader(SHA256_HEADER));
  const { name, algorithm, value } = signed;
  const prefix = `${algorithm}=`;
  const digest = value.startsWith(prefix) ? strictHex(value.slice(prefix.length).trim()) : null;
  if (!digest) return reject(reasons.malformedHeader(name, `expected ${prefix} and a hex digest`));
  const expected = secrets.map((s) => hmac(algorithm, s, req.body));
  if (!anyDigestMatches(expected, [digest])) return reject(reasons.mismatch(name));
  // the header only (e.g. `issues`); the body's `action` stays in the body for filters to match on
  return { ok: true, eventType: header(req.headers, 'x-github-event')?.trim() || null };
}
