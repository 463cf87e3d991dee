import type { Topics } from '../../core/topics';
import type { DeliveryOutcome, EventTransition, RecordTypes, RecordName, WebhookEvent } from '../../platform/avro/records';
import type { BatchStage } from '../runner/stage';
import { deliveryRow, eventRow, transitionRow } from './rows';

/** The port the sink writes through: one insert per call. */
export interface RowWriter {
  insert(table: 'events' | 'event_transitions' | 'deliveries', rows: Record<string, unknown>[]): Promise<void>;
}

/**
 * Copies events, transitions and delivery attempts into ClickHouse, a whole Kafka batch per
 * insert. Tables dedupe on their ORDER BY, so a batch consumed twice leaves one copy.
 */
export function sinkStage(topics: Topics, writer: RowWriter): BatchStage {
  return {
    kind: 'batch',
    name: 'sink',
    inputs: [
      { topic: topics.received, record: 'WebhookEvent' },
      { topic: topics.transitions, record: 'EventTransition' },
      { topic: topics.deliveryCompleted, record: 'DeliveryOutcome' },
    ],
    async handleBatch(topic: string, values: RecordTypes[RecordName][]): Promise<void> {
      if (topic === topics.received) await writer.insert('events', (values as WebhookEvent[]).map(eventRow));
      else if (topic === topics.transitions) await writer.insert('event_transitions', (values as EventTransition[]).map(transitionRow));
      else if (topic === topics.deliveryCompleted) await writer.insert('deliveries', (values as DeliveryOutcome[]).map(deliveryRow));
    },
  };
}
