/** TypeScript shapes of the Avro records in schemas/. Times are milliseconds since the epoch. */

export interface Header {
  name: string;
  value: string;
}

export interface WebhookEvent {
  event_id: string;
  tenant_id: string;
  ingester_id: string;
  correlation_id: string;
  received_at: number;
  method: string;
  query: string;
  headers: Header[];
  content_type: string | null;
  body: Buffer;
  /** The data key the body is sealed with on Kafka (the codec seals and opens it); null or absent: in clear. */
  body_key?: string | null;
  source_ip: string | null;
  event_type: string | null;
  /** deliveries of this service the webhook already went through (X-Hookline-Hops); 0 by default */
  hops: number;
}

export const EVENT_STATES = ['received', 'validated', 'filtered', 'delivered', 'acked', 'failed', 'dlq_queued', 'replayed'] as const;
export type EventState = (typeof EVENT_STATES)[number];

export interface EventTransition {
  event_id: string;
  tenant_id: string;
  ingester_id: string;
  state: EventState;
  at: number;
  correlation_id: string;
  reason: string | null;
  delivery_id: string | null;
  destination_id: string | null;
}

export interface DeliveryTask {
  delivery_id: string;
  event_id: string;
  tenant_id: string;
  ingester_id: string;
  destination_id: string;
  correlation_id: string;
  attempt: number;
  not_before: number;
  received_at: number;
  content_type: string | null;
  body: Buffer;
  /** The data key the body is sealed with on Kafka (the codec seals and opens it); null or absent: in clear. */
  body_key?: string | null;
  replay_of: string | null;
  /** the event's hop count; the delivery carries hops + 1 */
  hops: number;
  /** The replay job that queued this delivery (absent from records written before the field). */
  replay_job_id?: string | null;
  /** Send time the destination's rate limit reserved for this attempt (ms), once reserved. */
  slot_at?: number | null;
  /** The type validation found for the event (absent from records written before the field). */
  event_type?: string | null;
}

/** `dropped`: the destination's transformation returned null, and nothing was sent. */
export type DeliveryStatus = 'delivered' | 'retrying' | 'failed' | 'dropped';

export interface DeliveryOutcome {
  delivery_id: string;
  event_id: string;
  tenant_id: string;
  destination_id: string;
  correlation_id: string;
  attempt_number: number;
  status: DeliveryStatus;
  response_code: number | null;
  attempted_at: number;
  duration_ms: number;
  error_message: string | null;
  body_sha256: string;
  next_attempt_at: number | null;
  /** The delivery this one replays (absent from records written before the field). */
  replay_of?: string | null;
  replay_job_id?: string | null;
  /** First 4 KiB of the response body as text; null when no answer came. */
  response_body?: string | null;
  /** The members this attempt's 410 Gone moved when it disabled the destination, as JSON; else null. */
  destination_change?: string | null;
  /** The event's type, ingester and receipt time, from the task (absent from records written before the fields). */
  event_type?: string | null;
  ingester_id?: string;
  received_at?: number | null;
}

export interface ConfigEntry {
  kind: string;
  tenant_id: string;
  id: string;
  data: string;
  written_at: number;
  /** Applied only over an existing entity: a write that must never recreate a deleted one. */
  update_only: boolean;
}

export interface LogEntry {
  id: string;
  ts: number;
  level: string;
  message: string;
  stage: string | null;
  tenant_id: string;
  event_id: string | null;
  delivery_id: string | null;
  destination_id: string | null;
  ingester_id: string | null;
  correlation_id: string | null;
  fields: string;
}

/** A delivery attempt outcome as a leaf of the evidence log, in a sealed batch. */
export interface SealedLeaf {
  tenant_id: string;
  delivery_id: string;
  event_id: string;
  destination_id: string;
  correlation_id: string;
  attempt_number: number;
  status: string;
  response_code: number | null;
  attempted_at: number;
  body_sha256: string;
  /** The delivery this one replays (absent from batches written before the field: read as null). */
  replay_of?: string | null;
  leaf_index: number;
  leaf_hash: Buffer;
}

/** One sealed batch of the evidence log (schemas/evidence-batch.avsc). */
export interface EvidenceBatch {
  first_index: number;
  tree_size: number;
  root_hash: Buffer;
  checkpoint: string;
  sealed_at: number;
  leaves: SealedLeaf[];
  nodes: { level: number; index: number; hash: Buffer }[];
  frontier: Buffer[];
  pending_next_offset: number;
  source_marks: { partition: number; next_offset: number }[];
  /**
   * The term of the sequencer that sealed it. Absent from batches written before terms were
   * recorded (records decode with the schema they were written with): read as 0.
   */
  fencing_token?: number;
}

/** An input record a stage set aside (schemas/dead-letter.avsc), with its original bytes. */
export interface DeadLetter {
  stage: string;
  reason: string;
  source_topic: string;
  source_partition: number;
  source_offset: number;
  key: Buffer | null;
  value: Buffer;
  tenant_id: string;
  event_id: string | null;
  at: number;
}

/** A dead letter whose input record was written again where it was read (schemas/dead-letter-replay.avsc). */
export interface DeadLetterReplay {
  letter_id: string;
  tenant_id: string;
  stage: string;
  source_topic: string;
  source_partition: number;
  source_offset: number;
  event_id: string | null;
  replayed_at: number;
  replayed_by: string;
}

/** Which schema file describes which record. */
export interface RecordTypes {
  LogEntry: LogEntry;
  WebhookEvent: WebhookEvent;
  EventTransition: EventTransition;
  DeliveryTask: DeliveryTask;
  DeliveryOutcome: DeliveryOutcome;
  ConfigEntry: ConfigEntry;
  EvidenceBatch: EvidenceBatch;
  DeadLetter: DeadLetter;
  DeadLetterReplay: DeadLetterReplay;
}

export type RecordName = keyof RecordTypes;

export const SCHEMA_FILES: Record<RecordName, string> = {
  WebhookEvent: 'webhook-event.avsc',
  EventTransition: 'event-transition.avsc',
  DeliveryTask: 'delivery-task.avsc',
  DeliveryOutcome: 'delivery-outcome.avsc',
  ConfigEntry: 'config-entry.avsc',
  LogEntry: 'log-entry.avsc',
  EvidenceBatch: 'evidence-batch.avsc',
  DeadLetter: 'dead-letter.avsc',
  DeadLetterReplay: 'dead-letter-replay.avsc',
};
