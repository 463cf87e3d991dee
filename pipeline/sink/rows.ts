import { createHash } from 'node:crypto';
import type { DeliveryOutcome, EvidenceBatch, EventTransition, WebhookEvent } from '../../platform/avro/records';

/** ClickHouse DateTime64(3) text, UTC. */
export function chTime(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
}

export function eventRow(e: WebhookEvent) {
  return {
    tenant_id: e.tenant_id,
    event_id: e.event_id,
    ingester_id: e.ingester_id,
    correlation_id: e.correlation_id,
    received_at: chTime(e.received_at),
    event_type: e.event_type,
    content_type: e.content_type,
    headers: JSON.stringify(e.headers.map((h) => [h.name, h.value])),
    // ClickHouse String holds bytes; JSON transport needs text, so non-UTF-8 bodies go as base64
    body: isUtf8(e.body) ? e.body.toString('utf8') : `base64:${e.body.toString('base64')}`,
    body_sha256: createHash('sha256').update(e.body).digest('hex'),
  };
}

export function transitionRow(t: EventTransition) {
  return {
    tenant_id: t.tenant_id,
    event_id: t.event_id,
    ingester_id: t.ingester_id,
    state: t.state,
    at: chTime(t.at),
    correlation_id: t.correlation_id,
    reason: t.reason,
    delivery_id: t.delivery_id ?? '',
    destination_id: t.destination_id ?? '',
  };
}

export function deliveryRow(o: DeliveryOutcome) {
  return {
    tenant_id: o.tenant_id,
    delivery_id: o.delivery_id,
    attempt_number: o.attempt_number,
    event_id: o.event_id,
    destination_id: o.destination_id,
    correlation_id: o.correlation_id,
    status: o.status,
    response_code: o.response_code,
    attempted_at: chTime(o.attempted_at),
    duration_ms: o.duration_ms,
    error_message: o.error_message,
    body_sha256: o.body_sha256,
    next_attempt_at: o.next_attempt_at === null ? null : chTime(o.next_attempt_at),
  };
}

/** The rows of one sealed evidence batch, per table. */
export function evidenceRows(b: EvidenceBatch) {
  const sealedAt = chTime(b.sealed_at);
  return {
    leaves: b.leaves.map((l) => ({
      tenant_id: l.tenant_id,
      delivery_id: l.delivery_id,
      attempt_number: l.attempt_number,
      leaf_index: l.leaf_index,
      event_id: l.event_id,
      destination_id: l.destination_id,
      correlation_id: l.correlation_id,
      status: l.status,
      response_code: l.response_code,
      attempted_at: chTime(l.attempted_at),
      body_sha256: l.body_sha256,
      leaf_hash: l.leaf_hash.toString('hex'),
      first_tree_size: b.tree_size,
      sealed_at: sealedAt,
    })),
    nodes: b.nodes.map((n) => ({ level: n.level, idx: n.index, hash_hex: n.hash.toString('hex') })),
    checkpoint: { tree_size: b.tree_size, first_index: b.first_index, root_hash: b.root_hash.toString('hex'), checkpoint: b.checkpoint, sealed_at: sealedAt },
  };
}

function isUtf8(buf: Buffer): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(buf);
    return true;
  } catch {
    return false;
  }
}

export function logRow(l: import('../../platform/avro/records').LogEntry) {
  return {
    tenant_id: l.tenant_id,
    id: l.id,
    ts: chTime(l.ts),
    level: l.level,
    message: l.message,
    stage: l.stage,
    event_id: l.event_id,
    delivery_id: l.delivery_id,
    destination_id: l.destination_id,
    ingester_id: l.ingester_id,
    correlation_id: l.correlation_id,
    fields: l.fields,
  };
}
