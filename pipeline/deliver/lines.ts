import type { LogLevel } from '../../core/config';
import type { DeliveryOutcome } from '../../platform/avro/records';

/**
 * The log line of each attempt's outcome. The deliver stage prints it; the sink writes its row in
 * the logs table from the outcome record, so the attempt costs no record on the `logs` topic.
 */
export const OUTCOME_LINES: Record<DeliveryOutcome['status'], { level: LogLevel; msg: string }> = {
  delivered: { level: 'info', msg: 'delivered' },
  retrying: { level: 'info', msg: 'attempt failed; retry scheduled' },
  failed: { level: 'warn', msg: 'delivery failed for good; dead-lettered' },
  dropped: { level: 'info', msg: 'delivery dropped by the destination\'s transformation; nothing sent' },
};

/** The line's own fields, beside the ids: what the attempt gave, and why it goes on or ends. */
export function outcomeLineFields(o: DeliveryOutcome): Record<string, unknown> {
  const fields: Record<string, unknown> = { attempt: o.attempt_number, response_code: o.response_code, duration_ms: o.duration_ms };
  if (o.status !== 'delivered') fields.reason = o.error_message;
  if (o.status === 'retrying' && o.next_attempt_at !== null) fields.next_attempt_at = new Date(o.next_attempt_at).toISOString();
  return fields;
}
