/**
 * What the runtime and trust proofs check. Each proof is a live check run when it is asked for;
 * this catalogue gives its id, title and pass criterion (docs/api.md lists the same, a test keeps
 * them in step). `scope` says whether a proof looks at the whole service or at the caller's tenant.
 */
export interface ProofSpec {
  id: string;
  title: string;
  /** What is measured and when the proof passes. */
  criterion: string;
  scope: 'service' | 'tenant';
}

export const RUNTIME_PROOFS = [
  { id: 'PROOF-001', scope: 'tenant', title: 'Every accepted event is accounted for', criterion: 'Over the last 24 hours, no event of the tenant rests at `received` longer than PROOF_GRACE_MS, and no delivered attempt waits longer than that for `acked`. Events stopped by a filter or without an active destination are counted, not failed.' },
  { id: 'PROOF-002', scope: 'service', title: 'Stage consumer lag under threshold', criterion: 'The consumer lag of validate, filter, route, deliver and both evidence stages is at most PROOF_LAG_THRESHOLD records each.' },
  { id: 'PROOF-003', scope: 'service', title: 'No circuit breaker open beyond its window', criterion: 'No breaker of a live deliver process has stayed open longer than BREAKER_RESET_MS plus PROOF_GRACE_MS; the caller\'s own breakers are listed by destination, other tenants\' are only counted.' },
  { id: 'PROOF-004', scope: 'service', title: 'Query store keeps up (sink lag)', criterion: 'The sink\'s consumer lag over every topic it copies to ClickHouse is at most PROOF_LAG_THRESHOLD records.' },
  { id: 'PROOF-005', scope: 'service', title: 'Evidence log only grew', criterion: 'The newest signed checkpoint and the one before verify under the published key, and an RFC 9162 consistency proof between them, read from the stored hashes, verifies.' },
  { id: 'PROOF-006', scope: 'service', title: 'Kafka reachable with every topic', criterion: 'The cluster answers and every topic of the topology exists with its partitions.' },
  { id: 'PROOF-007', scope: 'service', title: 'Redis reachable', criterion: 'Redis answers PING within 2 seconds.' },
  { id: 'PROOF-008', scope: 'service', title: 'ClickHouse reachable with its schema', criterion: 'ClickHouse answers and every table of the migrations exists.' },
  { id: 'PROOF-009', scope: 'tenant', title: 'Dead-letter backlog under threshold', criterion: 'Dead deliveries of the tenant in the last 30 days that were not retried number at most PROOF_DLQ_THRESHOLD.' },
  { id: 'PROOF-010', scope: 'service', title: 'Retry tiers draining', criterion: 'Every record that was waiting in a retry tier left it within the tier\'s delay plus PROOF_GRACE_MS (an empty tier passes at once; otherwise `unknown` until a sample old enough exists).' },
] as const satisfies readonly ProofSpec[];

export const TRUST_PROOFS = [
  { id: 'TRUST-001', scope: 'service', title: 'API keys stored hashed', criterion: 'Every API key record holds only a 64-hex SHA-256 of the key, no secret.' },
  { id: 'TRUST-002', scope: 'service', title: 'Scopes enforced (live probe)', criterion: 'A probe through the running API: no key answers 401, a key without scopes answers 403 insufficient-scope on a read and a write route, a key of another tenant answers 404.' },
  { id: 'TRUST-003', scope: 'service', title: 'Checkpoint signing key loaded and published', criterion: 'The published verifier key verifies a note signed by the loaded key, and the newest checkpoint verifies under it.' },
  { id: 'TRUST-004', scope: 'tenant', title: 'Outbound signing on for every destination', criterion: 'Every destination of the tenant has a Standard Webhooks signing secret of at least 24 bytes; deliveries are always signed with it.' },
  { id: 'TRUST-005', scope: 'service', title: 'SSRF guard on', criterion: 'The delivery agent refuses the cloud-metadata address and a private address before connecting (probed without sending a packet).' },
  { id: 'TRUST-006', scope: 'tenant', title: 'Secrets masked in responses and logs', criterion: 'A probe read of the tenant\'s destinations and ingesters through the running API, and its log lines of the last 24 hours, contain none of its stored secrets.' },
  { id: 'TRUST-007', scope: 'tenant', title: 'HTTPS-only policy for destinations', criterion: 'DESTINATION_HTTPS_ONLY is on and every destination of the tenant has an https URL.' },
  { id: 'TRUST-008', scope: 'tenant', title: 'Inbound verification on every ingester', criterion: 'No ingester of the tenant uses provider `none` (no signature check).' },
  { id: 'TRUST-009', scope: 'service', title: 'Rate limits enforced', criterion: 'A probe answer of the running API carries the RateLimit headers, which the limiter sets only when Redis enforces the limit (it fails open otherwise).' },
  { id: 'TRUST-010', scope: 'service', title: 'Errors disclose no internals', criterion: 'A malformed probe request answers an RFC 9457 problem document with the documented members only and no stack trace.' },
] as const satisfies readonly ProofSpec[];

export type ProofId = (typeof RUNTIME_PROOFS)[number]['id'] | (typeof TRUST_PROOFS)[number]['id'];
export type ProofStatus = 'pass' | 'fail' | 'unknown';

/** The operational planes and the proofs (and other signals) each stands on. */
export const PLANES = [
  { name: 'ingestion', description: 'Hook URLs accept webhooks once Kafka acknowledges them.' },
  { name: 'processing', description: 'Verification, filters and routing keep up.' },
  { name: 'delivery', description: 'Deliveries go out, breakers recover, retries drain, dead letters stay few.' },
  { name: 'evidence', description: 'Outcomes are sealed into the signed, append-only evidence log.' },
  { name: 'query', description: 'ClickHouse holds what happened, close behind Kafka.' },
  { name: 'control', description: 'Configuration, keys, scopes, rate limits and idempotency work.' },
] as const;

export type PlaneName = (typeof PLANES)[number]['name'];

/** Capabilities as get_capabilities reports them, each backed by the proofs named. */
export const CAPABILITIES = [
  { id: 'ingestion', kind: 'runtime', title: 'Webhook ingestion with durable acknowledgement', proofs: ['PROOF-006', 'PROOF-002'] },
  { id: 'delivery', kind: 'runtime', title: 'Delivery with per-destination circuit breakers', proofs: ['PROOF-002', 'PROOF-003'] },
  { id: 'retries', kind: 'runtime', title: 'Retries through delay tiers and a dead-letter queue', proofs: ['PROOF-010', 'PROOF-009'] },
  { id: 'accounting', kind: 'runtime', title: 'Every accepted event reaches a known state', proofs: ['PROOF-001'] },
  { id: 'query', kind: 'runtime', title: 'Delivery logs and status queries', proofs: ['PROOF-008', 'PROOF-004'] },
  { id: 'coordination', kind: 'runtime', title: 'Idempotency keys, rate limits and name claims', proofs: ['PROOF-007'] },
  { id: 'evidence-log', kind: 'runtime', title: 'Append-only evidence log with consistency proofs', proofs: ['PROOF-005'] },
  { id: 'authentication', kind: 'trust', title: 'Hashed tenant API keys with scopes', proofs: ['TRUST-001', 'TRUST-002'] },
  { id: 'signed-checkpoints', kind: 'trust', title: 'Ed25519-signed checkpoints (C2SP signed note)', proofs: ['TRUST-003'] },
  { id: 'outbound-signatures', kind: 'trust', title: 'Standard Webhooks signatures on every delivery', proofs: ['TRUST-004'] },
  { id: 'inbound-verification', kind: 'trust', title: 'Provider signature verification at ingestion', proofs: ['TRUST-008'] },
  { id: 'ssrf-guard', kind: 'trust', title: 'Deliveries only to allowed addresses', proofs: ['TRUST-005'] },
  { id: 'secret-hygiene', kind: 'trust', title: 'Secrets masked in answers and logs', proofs: ['TRUST-006'] },
  { id: 'transport-policy', kind: 'trust', title: 'HTTPS-only destinations', proofs: ['TRUST-007'] },
  { id: 'abuse-limits', kind: 'trust', title: 'Per-key rate limits', proofs: ['TRUST-009'] },
  { id: 'error-hygiene', kind: 'trust', title: 'Problem documents without internals', proofs: ['TRUST-010'] },
] as const satisfies readonly { id: string; kind: 'runtime' | 'trust'; title: string; proofs: readonly ProofId[] }[];
