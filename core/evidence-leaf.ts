/**
 * The canonical bytes of an evidence leaf: what anyone can rebuild from a delivery attempt
 * as the API shows it, and hash with RFC 6962's leaf hash (SHA-256 of 0x00 || bytes).
 *
 * The bytes are UTF-8 JSON of one object with exactly these members, keys in code-point
 * order, no white space, integers in decimal, `response_code` null when no answer came:
 *
 *   {"attempt_number":1,"attempted_at":"2026-01-02T03:04:05.678Z","body_sha256":"<64 hex>",
 *    "delivery_id":"dlv_…","destination_id":"dst_…","event_id":"evt_…","response_code":200,
 *    "status":"delivered","tenant_id":"acme","v":1}
 *
 * That is the RFC 8785 (JCS) form of the object, and also what JSON.stringify gives for it
 * with its keys sorted, since every value is a string, a small integer or null.
 *
 * An attempt of a replayed delivery (one queued again by a replay job, a retry or `dlq replay`)
 * names the delivery it replays: its leaf has one more member, `replay_of`, and `v` is 2:
 *
 *   {"attempt_number":1,…,"event_id":"evt_…","replay_of":"dlv_<original>","response_code":200,
 *    "status":"delivered","tenant_id":"acme","v":2}
 *
 * Every other leaf keeps the v 1 form byte for byte (no `replay_of` member at all, not null), so
 * leaves sealed before replays were linked, and their proofs, stay as they were.
 */
export interface LeafFields {
  tenant_id: string;
  delivery_id: string;
  event_id: string;
  destination_id: string;
  attempt_number: number;
  status: string;
  response_code: number | null;
  /** ISO 8601 UTC with milliseconds, e.g. 2026-01-02T03:04:05.678Z. */
  attempted_at: string;
  /** SHA-256 of the delivered body, lowercase hex. */
  body_sha256: string;
  /** The delivery this attempt's delivery replays; null or absent: a v 1 leaf. */
  replay_of?: string | null;
}

export const LEAF_FORMAT_VERSION = 1;
/** The form of a leaf that names the delivery it replays. */
export const REPLAY_LEAF_FORMAT_VERSION = 2;

export function leafBytes(f: LeafFields): Buffer {
  const replayOf = f.replay_of ?? null;
  // members in code-point order; `replay_of` sorts between event_id and response_code
  const canonical = {
    attempt_number: f.attempt_number,
    attempted_at: f.attempted_at,
    body_sha256: f.body_sha256,
    delivery_id: f.delivery_id,
    destination_id: f.destination_id,
    event_id: f.event_id,
    ...(replayOf === null ? {} : { replay_of: replayOf }),
    response_code: f.response_code,
    status: f.status,
    tenant_id: f.tenant_id,
    v: replayOf === null ? LEAF_FORMAT_VERSION : REPLAY_LEAF_FORMAT_VERSION,
  };
  return Buffer.from(JSON.stringify(canonical), 'utf8');
}

/** Milliseconds since the epoch -> the leaf's `attempted_at` text. */
export function leafTime(ms: number): string {
  return new Date(ms).toISOString();
}
