import type { Ingester } from '../../core/model';
import { parseFilters } from '../../core/filters';
import type { Topics } from '../../core/topics';
import type { WebhookEvent } from '../../platform/avro/records';
import type { AnyOutput, RecordStage } from '../runner/stage';
import { transition } from '../transitions';
import { evaluateFilters } from './evaluate';

export interface IngesterLookup {
  get(kind: 'ingester', tenantId: string, id: string): Ingester | undefined;
}

/**
 * validated -> filtered when the ingester's filters pass. An event a filter drops goes no
 * further; it is logged with the rule that dropped it and the reason.
 */
export function filterStage(topics: Topics, config: IngesterLookup): RecordStage<'WebhookEvent'> {
  // an update replaces the ingester object, so its parsed filters are kept per object
  const parsed = new WeakMap<Ingester, ReturnType<typeof parseFilters>>();
  const filtersOf = (ingester: Ingester | undefined) => {
    if (!ingester) return parseFilters([]);
    let p = parsed.get(ingester);
    if (!p) parsed.set(ingester, (p = parseFilters(ingester.filters)));
    return p;
  };
  return {
    kind: 'record',
    name: 'filter',
    input: { topic: topics.validated, record: 'WebhookEvent' },
    async handle(event: WebhookEvent, { log }): Promise<AnyOutput[]> {
      const fields = { tenant_id: event.tenant_id, event_id: event.event_id, ingester_id: event.ingester_id, correlation_id: event.correlation_id, event_type: event.event_type };
      const ingester = config.get('ingester', event.tenant_id, event.ingester_id);
      const { filters, errors } = filtersOf(ingester);
      if (errors.length > 0) {
        // stored filters that no longer parse hold events back rather than let everything through
        log.error('event dropped: the ingester\'s filters are invalid', { ...fields, errors });
        return [];
      }
      const verdict = evaluateFilters(filters, event);
      if (!verdict.pass) {
        log.info('event dropped by filter', { ...fields, rule_index: verdict.rule_index, rule: verdict.rule, reason: verdict.reason });
        return [];
      }
      return [
        { topic: topics.filtered, key: `${event.tenant_id}/${event.ingester_id}`, record: 'WebhookEvent', value: event },
        transition(topics, event, 'filtered'),
      ];
    },
  };
}
