import type { EventState, EventTransition, WebhookEvent } from '../platform/avro/records';
import { eventKey } from '../core/record-keys';
import type { Topics } from '../core/topics';
import type { Output } from './runtime/stage';

/** The transition record of an event (or of one delivery of it) entering `state`. */
export function transition(
  topics: Topics,
  event: Pick<WebhookEvent, 'event_id' | 'tenant_id' | 'ingester_id' | 'correlation_id'>,
  state: EventState,
  extra: { reason?: string | null; delivery_id?: string | null; destination_id?: string | null; at?: number } = {},
): Output<'EventTransition'> {
  const value: EventTransition = {
    event_id: event.event_id,
    tenant_id: event.tenant_id,
    ingester_id: event.ingester_id,
    correlation_id: event.correlation_id,
    state,
    at: extra.at ?? Date.now(),
    reason: extra.reason ?? null,
    delivery_id: extra.delivery_id ?? null,
    destination_id: extra.destination_id ?? null,
  };
  return { topic: topics.transitions, key: eventKey(event), record: 'EventTransition', value };
}
