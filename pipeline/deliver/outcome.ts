import { sha256Hex } from '../../core/stored-body';
import type { DeliveryOutcome, DeliveryTask } from '../../platform/avro/records';

/**
 * The outcome of an attempt of `task` at `at` before anything is known of it: failed, no answer.
 * Deliver fills in what the attempt came to; a delivery failed without an attempt keeps it.
 */
export function blankOutcome(task: DeliveryTask, at: number): DeliveryOutcome {
  return {
    delivery_id: task.delivery_id,
    event_id: task.event_id,
    tenant_id: task.tenant_id,
    destination_id: task.destination_id,
    correlation_id: task.correlation_id,
    attempt_number: task.attempt,
    status: 'failed',
    response_code: null,
    attempted_at: at,
    duration_ms: 0,
    error_message: null,
    body_sha256: sha256Hex(task.body),
    next_attempt_at: null,
    replay_of: task.replay_of ?? null,
    replay_job_id: task.replay_job_id ?? null,
    // what the analytics group by (migration 013)
    event_type: task.event_type ?? null,
    ingester_id: task.ingester_id,
    received_at: task.received_at,
  };
}
