import { GENERIC_ALGORITHMS, GENERIC_ENCODINGS } from '../../../core/providers';
import { header, reasons, secretsOf, type SignedRequest, type Verdict } from '../verification';
import { configuredEventType } from './configured-event-type';
import { digestsEqual, hmac } from './digest';

export { GENERIC_ALGORITHMS, GENERIC_ENCODINGS } from '../../../core/providers';
export { digestsEqual } from './digest';

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

/** HMAC of the raw body with any of the ingester's secrets, as one header. */
export function verifyGenericHmac(req: SignedRequest, config: Record<string, unknown>): Verdict {
  const c = genericConfig(config);
  if (c.secrets.length === 0) return { ok: false, reason: reasons.noSecret };
  const value = header(req.headers, c.header);
  if (value === undefined) return { ok: false, reason: `missing signature header ${c.header}` };
  if (!value.startsWith(c.prefix)) return { ok: false, reason: `signature header ${c.header} lacks the prefix "${c.prefix}"` };
  const given = Buffer.from(value.slice(c.prefix.length).trim(), c.encoding);
  for (const secret of c.secrets) {
    if (digestsEqual(hmac(c.algorithm, secret, req.body), given)) return { ok: true, eventType: configuredEventType(req, config) };
  }
  return { ok: false, reason: reasons.mismatch(c.header) };
}
