import type { Topics } from '../../core/topics';
import type { WebhookEvent } from '../../platform/avro/records';
import type { AnyOutput, RecordStage } from '../runner/stage';
import { transition } from '../transitions';

/** validated -> filtered. Ingester filters are applied here. */
export function filterStage(topics: Topics): RecordStage<'WebhookEvent'> {
  return {
    kind: 'record',
    name: 'filter',
    input: { topic: topics.validated, record: 'WebhookEvent' },
    async handle(event: WebhookEvent): Promise<AnyOutput[]> {
      return [
        { topic: topics.filtered, key: `${event.tenant_id}/${event.ingester_id}`, record: 'WebhookEvent', value: event },
        transition(topics, event, 'filtered'),
      ];
    },
  };
}
