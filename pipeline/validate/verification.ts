import type { Header } from '../../platform/avro/records';

/** What a verifier sees of an incoming webhook. */
export interface SignedRequest {
  headers: Header[];
  body: Buffer;
  /** Milliseconds since the epoch when the request arrived. */
  receivedAt: number;
}

export type Verdict = { ok: true; eventType: string | null } | { ok: false; reason: string };

export function header(headers: Header[], name: string): string | undefined {
  const lower = name.toLowerCase();
  return headers.find((h) => h.name === lower)?.value;
}

/** Secrets of an ingester config: `signing_secret` and/or `signing_secrets` (several during rotation). */
export function secretsOf(config: Record<string, unknown>): string[] {
  const out: string[] = [];
  if (typeof config.signing_secret === 'string' && config.signing_secret) out.push(config.signing_secret);
  if (Array.isArray(config.signing_secrets)) {
    for (const s of config.signing_secrets) if (typeof s === 'string' && s) out.push(s);
  }
  return out;
}

export function reject(reason: string): Verdict {
  return { ok: false, reason };
}

/** Failure sentences shared by the providers, so that operators see one wording; never include a secret. */
export const reasons = {
  noSecret: 'no signing secret configured',
  missingHeader: (name: string) => `missing header ${name}`,
  malformedHeader: (name: string, why: string) => `malformed header ${name}: ${why}`,
  mismatch: (name: string) => `signature in ${name} does not match the body`,
  outsideTolerance: (name: string, toleranceSeconds: number) => `timestamp in ${name} is outside the tolerance (${toleranceSeconds} s)`,
};
