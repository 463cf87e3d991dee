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
}

export const LEAF_FORMAT_VERSION = 1;

export function leafBytes(f: LeafFields): Buffer {
  const canonical = {
    attempt_number: f.attempt_number,
    attempted_at: f.attempted_at,
    body_sha256: f.body_sha256,
    delivery_id: f.delivery_id,
    destination_id: f.destination_id,
    event_id: f.event_id,
    response_code: f.response_code,
    status: f.status,
    tenant_id: f.tenant_id,
    v: LEAF_FORMAT_VERSION,
  };
  return Buffer.from(JSON.stringify(canonical), 'utf8');
}

/** Milliseconds since the epoch -> the leaf's `attempted_at` text. */
export function leafTime(ms: number): string {
  return new Date(ms).toISOString();
}
