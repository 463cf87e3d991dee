import type { Ingester } from '../../core/model';
import { DEFAULT_FILTER_LIMITS, parseFilters, type FilterLimits } from '../../core/filters';
import { webhookKey } from '../../core/record-keys';
import { stageIo, type Topics } from '../../core/topics';
import type { WebhookEvent } from '../../platform/avro/records';
import { deadLetter } from '../dead-letter';
import type { AnyOutput, RecordStage, StageContext } from '../runtime/stage';
import { transition } from '../transitions';
import { evaluateFilters } from './evaluate';
import { traceIdOf } from '../../platform/tracing/trace-context';
import { SPAN_ATTRIBUTES } from '../../platform/tracing/tracing';

export interface IngesterLookup {
  get(kind: 'ingester', tenantId: string, id: string): Ingester | undefined;
}

/**
 * validated -> filtered when the ingester's filters pass. An event a filter drops goes no
 * further; it is logged with the rule that dropped it and the reason. An event the filters
 * cannot judge (it exceeds `limits`, or the stored filters no longer compile) is neither passed
 * nor dropped: it moves to `failed` and `dlq_queued` with the reason, and its record goes to
 * `events.dlq`, so the partition behind it goes on.
 */
export function filterStage(topics: Topics, config: IngesterLookup, limits: FilterLimits = DEFAULT_FILTER_LIMITS): RecordStage<'WebhookEvent'> {
  // an update replaces the ingester object, so its parsed filters are kept per object
  const parsed = new WeakMap<Ingester, ReturnType<typeof parseFilters>>();
  const filtersOf = (ingester: Ingester | undefined) => {
    if (!ingester) return parseFilters([]);
    let p = parsed.get(ingester);
    if (!p) parsed.set(ingester, (p = parseFilters(ingester.filters)));
    return p;
  };
  const setAside = (event: WebhookEvent, ctx: StageContext, reason: string): AnyOutput[] => [
    deadLetter(topics.eventsDlq, 'filter', ctx, event, reason),
    transition(topics, event, 'failed', { reason }),
    transition(topics, event, 'dlq_queued', { reason }),
  ];
  return {
    kind: 'record',
    ...stageIo(topics, 'filter', 'WebhookEvent'),
    async handle(event: WebhookEvent, ctx): Promise<AnyOutput[]> {
      const { log, span } = ctx;
      const fields = { tenant_id: event.tenant_id, event_id: event.event_id, ingester_id: event.ingester_id, correlation_id: event.correlation_id, trace_id: traceIdOf(ctx.trace), event_type: event.event_type };
      const ingester = config.get('ingester', event.tenant_id, event.ingester_id);
      const { filters, errors, refused } = filtersOf(ingester);
      const problems = [...errors, ...refused];
      if (problems.length > 0) {
        // stored filters that no longer parse hold events back rather than let everything through
        const reason = `filter not evaluated: the ingester's filters are invalid: ${problems.map((e) => `${e.field} ${e.message}`).join('; ')}`;
        log.error('event set aside: the ingester\'s filters are invalid', { ...fields, errors: problems });
        span?.setAttribute(SPAN_ATTRIBUTES.outcome, 'set_aside');
        return setAside(event, ctx, reason);
      }
      const verdict = evaluateFilters(filters, event, limits);
      if ('unevaluable' in verdict) {
        const reason = `filter not evaluated: rule ${verdict.rule_index}: ${verdict.reason}`;
        log.warn('event set aside: the filters cannot evaluate it', { ...fields, rule_index: verdict.rule_index, reason: verdict.reason });
        span?.setAttribute(SPAN_ATTRIBUTES.outcome, 'set_aside');
        return setAside(event, ctx, reason);
      }
      span?.setAttribute(SPAN_ATTRIBUTES.outcome, verdict.pass ? 'passed' : 'dropped');
      if (!verdict.pass) {
        log.info('event dropped by filter', { ...fields, rule_index: verdict.rule_index, rule: verdict.rule, reason: verdict.reason });
        return [];
      }
      // the record on webhooks.filtered is the record of the `filtered` state: the sink derives its row
      return [{ topic: topics.filtered, key: webhookKey(event, ingester), record: 'WebhookEvent', value: event }];
    },
  };
}
