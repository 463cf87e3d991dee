import { createHmac, timingSafeEqual } from 'node:crypto';
import { header, secretsOf, type SignedRequest, type Verdict } from '../verification';

export const GENERIC_ALGORITHMS = ['sha1', 'sha256', 'sha512'] as const;
export const GENERIC_ENCODINGS = ['hex', 'base64'] as const;

export interface GenericHmacConfig {
  header: string;
  algorithm: (typeof GENERIC_ALGORITHMS)[number];
  encoding: (typeof GENERIC_ENCODINGS)[number];
  /** Text before the digest in the header, e.g. `sha256=`. */
  prefix: string;
  secrets: string[];
}

export function genericConfig(config: Record<string, unknown>): GenericHmacConfig {
  const algorithm = GENERIC_ALGORITHMS.find((a) => a === config.algorithm) ?? 'sha256';
  const encoding = GENERIC_ENCODINGS.find((e) => e === config.encoding) ?? 'hex';
  return {
    header: typeof config.header === 'string' && config.header ? config.header : 'x-webhook-signature',
    algorithm,
    encoding,
    prefix: typeof config.prefix === 'string' ? config.prefix : '',
    secrets: secretsOf(config),
  };
}

/** Constant-time comparison of two digests given as text; unequal lengths never match. */
export function digestsEqual(expected: Buffer, actual: Buffer): boolean {
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

/** HMAC of the raw body with any of the ingester's secrets, as one header. */
export function verifyGenericHmac(req: SignedRequest, config: Record<string, unknown>): Verdict {
  const c = genericConfig(config);
  if (c.secrets.length === 0) return { ok: false, reason: 'the ingester has no signing secret' };
  const value = header(req.headers, c.header);
  if (value === undefined) return { ok: false, reason: `missing signature header ${c.header}` };
  if (!value.startsWith(c.prefix)) return { ok: false, reason: `signature header ${c.header} lacks the prefix "${c.prefix}"` };
  const given = Buffer.from(value.slice(c.prefix.length).trim(), c.encoding);
  for (const secret of c.secrets) {
    const expected = createHmac(c.algorithm, secret).update(req.body).digest();
    if (digestsEqual(expected, given)) return { ok: true, eventType: null };
  }
  return { ok: false, reason: `signature in ${c.header} does not match the body` };
}
