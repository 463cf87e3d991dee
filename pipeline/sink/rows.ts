import { derivedId } from '../../core/ids';
import { DELIVERY_STAGE_ACTOR, type MemberChange } from '../../core/destination-changes';
import { changeRow } from '../../platform/clickhouse/destination-changes';
import { encodeStoredBody, sha256Hex } from '../../core/stored-body';
import { OUTCOME_LINES, outcomeLineFields } from '../deliver/lines';
import type { DeadLetter, DeadLetterReplay, DeliveryOutcome, EvidenceBatch, EventTransition, WebhookEvent } from '../../platform/avro/records';
import { fencingTokenOf } from '../evidence/chain';
import { deadLetterId, type LetterOwner } from '../dead-letter';

let cachedSecond = Number.NaN;
let cachedPrefix = '';

/**
 * ClickHouse DateTime64(3) text, UTC ("2026-11-23 14:05:09.123"). Rows of one batch mostly share
 * their second, so its text is kept and only the milliseconds are formatted again.
 */
export function chTime(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== cachedSecond) {
    cachedPrefix = new Date(second * 1000).toISOString().slice(0, 19).replace('T', ' ');
    cachedSecond = second;
  }
  const millis = ms - second * 1000;
  return `${cachedPrefix}.${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}`;
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
    // ClickHouse String holds bytes; JSON transport needs text (see encodeStoredBody)
    body: encodeStoredBody(e.body),
    body_sha256: sha256Hex(e.body),
  };
}

/** The type validation found for an event (only events that have one get a row). */
export function eventTypeRow(e: Pick<WebhookEvent, 'event_id' | 'tenant_id' | 'received_at' | 'event_type'>) {
  return { tenant_id: e.tenant_id, event_id: e.event_id, event_type: e.event_type ?? '', received_at: chTime(e.received_at) };
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

/** The `received` transition of an event: Kafka acknowledged it at `received_at`. */
export function receivedRow(e: WebhookEvent) {
  return transitionRow({ event_id: e.event_id, tenant_id: e.tenant_id, ingester_id: e.ingester_id, correlation_id: e.correlation_id, state: 'received', at: e.received_at, reason: null, delivery_id: null, destination_id: null });
}

/**
 * The `validated` or `filtered` transition of an event: the stage's output record on
 * webhooks.validated or webhooks.filtered is the record of that state, at its Kafka time.
 */
export function stateRow(e: Pick<WebhookEvent, 'event_id' | 'tenant_id' | 'ingester_id' | 'correlation_id'>, state: 'validated' | 'filtered', at: number) {
  return transitionRow({ event_id: e.event_id, tenant_id: e.tenant_id, ingester_id: e.ingester_id, correlation_id: e.correlation_id, state, at, reason: null, delivery_id: null, destination_id: null });
}

/**
 * The `acked` transition of a delivered attempt, from the sealed batch that holds its leaf: at the
 * batch's seal time, so that a batch read twice gives the same row (the table dedupes on it).
 */
export function ackedRow(l: EvidenceBatch['leaves'][number], sealedAt: number) {
  return transitionRow({ event_id: l.event_id, tenant_id: l.tenant_id, ingester_id: '', correlation_id: l.correlation_id, state: 'acked', at: sealedAt, reason: null, delivery_id: l.delivery_id, destination_id: l.destination_id });
}

/**
 * The `delivered` transition of a delivery: its outcome record with status `delivered` is the
 * record of that state, at the end of the attempt. Outcomes carry no ingester id (the
 * transition rows of a delivery are found by event and delivery).
 */
export function deliveredRow(o: DeliveryOutcome) {
  return transitionRow({ event_id: o.event_id, tenant_id: o.tenant_id, ingester_id: '', correlation_id: o.correlation_id, state: 'delivered', at: o.attempted_at + o.duration_ms, reason: null, delivery_id: o.delivery_id, destination_id: o.destination_id });
}

/**
 * The log line of an attempt, from its outcome record: what the deliver stage printed, at the end
 * of the attempt, with an id derived from the attempt so that an outcome read twice gives one row,
 * and the trace id the outcome record's trace context names (in its fields, as printed).
 */
export function outcomeLogRow(o: DeliveryOutcome, traceId?: string) {
  const ts = o.attempted_at + o.duration_ms;
  const line = OUTCOME_LINES[o.status];
  return {
    tenant_id: o.tenant_id,
    id: derivedId('log', ts, `${o.delivery_id}/${o.attempt_number}`),
    ts: chTime(ts),
    level: line.level,
    message: line.msg,
    stage: 'deliver',
    event_id: o.event_id,
    delivery_id: o.delivery_id,
    destination_id: o.destination_id,
    ingester_id: null,
    correlation_id: o.correlation_id,
    fields: JSON.stringify(traceId ? { ...outcomeLineFields(o), trace_id: traceId } : outcomeLineFields(o)),
  };
}

/** An attempt's row; `traceId` is the trace its outcome record names ('' for none). */
export function deliveryRow(o: DeliveryOutcome, traceId = '') {
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
    response_body: o.response_body ?? '',
    replay_of: o.replay_of ?? null,
    replay_job_id: o.replay_job_id ?? null,
    trace_id: traceId,
    event_type: o.event_type ?? '',
    ingester_id: o.ingester_id ?? '',
    received_at: o.received_at == null ? null : chTime(o.received_at),
  };
}

/**
 * The history entry of the destination an attempt's 410 Gone disabled: made by the delivery
 * stage, caused by that attempt. Its id is derived from the attempt, so a record read twice
 * leaves one row.
 */
function disabledRow(o: DeliveryOutcome, changes: string) {
  const at = o.attempted_at + o.duration_ms;
  return changeRow({
    id: derivedId('change', at, `${o.delivery_id}:${o.attempt_number}:disabled`),
    tenant_id: o.tenant_id,
    destination_id: o.destination_id,
    at: new Date(at).toISOString(),
    actor: DELIVERY_STAGE_ACTOR,
    action: 'disabled',
    changes: JSON.parse(changes) as Record<string, MemberChange>,
    cause: { delivery_id: o.delivery_id, event_id: o.event_id, attempt_number: o.attempt_number, response_code: o.response_code },
  });
}

/**
 * Every row one delivery attempt's outcome makes: the attempt, its log line, when it delivered
 * the event's `delivered` transition, and when it disabled its destination that change; the
 * first two name the attempt's trace.
 */
export function outcomeRows(o: DeliveryOutcome, traceId?: string): { deliveries: ReturnType<typeof deliveryRow>; logs: ReturnType<typeof outcomeLogRow>; event_transitions?: ReturnType<typeof deliveredRow>; destination_changes?: ReturnType<typeof disabledRow> } {
  return {
    deliveries: deliveryRow(o, traceId),
    logs: outcomeLogRow(o, traceId),
    ...(o.status === 'delivered' ? { event_transitions: deliveredRow(o) } : {}),
    ...(o.destination_change ? { destination_changes: disabledRow(o, o.destination_change) } : {}),
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
      replay_of: l.replay_of ?? null,
      first_tree_size: b.tree_size,
      sealed_at: sealedAt,
    })),
    nodes: b.nodes.map((n) => ({ level: n.level, idx: n.index, hash_hex: n.hash.toString('hex') })),
    checkpoint: { tree_size: b.tree_size, first_index: b.first_index, root_hash: b.root_hash.toString('hex'), checkpoint: b.checkpoint, sealed_at: sealedAt, fencing_token: fencingTokenOf(b) },
  };
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

/**
 * A dead letter's row, filed under its owner (ownerOfLetter): the input's bytes as a stored body
 * with their SHA-256 and its key in base64, so that a replay writes back exactly what was read.
 */
export function deadLetterRow(l: DeadLetter, owner: LetterOwner) {
  return {
    tenant_id: owner.tenant_id,
    id: deadLetterId(l),
    at: chTime(l.at),
    stage: l.stage,
    reason: l.reason,
    source_topic: l.source_topic,
    source_partition: l.source_partition,
    source_offset: l.source_offset,
    record: owner.record,
    resource_id: owner.resource_id,
    named_tenant_id: l.tenant_id,
    event_id: l.event_id,
    key: l.key === null ? null : Buffer.from(l.key).toString('base64'),
    value: encodeStoredBody(Buffer.from(l.value)),
    value_sha256: sha256Hex(Buffer.from(l.value)),
  };
}

/** The row saying a dead letter's input was put back. */
export function deadLetterReplayRow(r: DeadLetterReplay) {
  return {
    tenant_id: r.tenant_id,
    source_topic: r.source_topic,
    source_partition: r.source_partition,
    source_offset: r.source_offset,
    letter_id: r.letter_id,
    stage: r.stage,
    event_id: r.event_id,
    replayed_at: chTime(r.replayed_at),
    replayed_by: r.replayed_by,
  };
}
