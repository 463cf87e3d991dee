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
