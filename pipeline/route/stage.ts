import { derivedId } from '../../core/ids';
import type { DeliveryFlow, Destination } from '../../core/model';
import { deliveryKey } from '../../core/record-keys';
import { stageIo, type Topics } from '../../core/topics';
import type { DeliveryTask, WebhookEvent } from '../../platform/avro/records';
import type { AnyOutput, RecordStage } from '../runtime/stage';
import { DEFAULT_FILTER_LIMITS, type FilterLimits } from '../../core/filters';
import { filterContext } from '../filter/evaluate';
import { isOperational, subscribesExplicitly } from '../../core/operational-events';
import { subscribed } from './subscriptions';
import { traceIdOf } from '../../platform/tracing/trace-context';
import { SPAN_ATTRIBUTES } from '../../platform/tracing/tracing';

/** What routing needs to know of the configuration. */
export interface FlowLookup {
  list(kind: 'flow', tenantId: string): DeliveryFlow[];
  get(kind: 'destination', tenantId: string, id: string): Destination | undefined;
}

/** Every destination of a tenant: the candidates of an operational event. */
export type TenantDestinations = (tenantId: string) => readonly Destination[];

/**
 * filtered -> one delivery task per destination of the ingester's delivery flows that subscribes
 * to the event (its event types and filter, pipeline/route/subscriptions.ts). An operational
 * event (core/operational-events.ts) has no flows: it goes to the tenant's destinations whose
 * event types name its type explicitly (not a null list or `*`), their filter applying as usual.
 */
export function routeStage(topics: Topics, config: FlowLookup, maxFanout: number, limits: FilterLimits = DEFAULT_FILTER_LIMITS, tenantDestinations: TenantDestinations = () => []): RecordStage<'WebhookEvent'> {
  return {
    kind: 'record',
    ...stageIo(topics, 'route', 'WebhookEvent'),
    async handle(event: WebhookEvent, { log, trace, span }): Promise<AnyOutput[]> {
      const traceId = traceIdOf(trace);
      const destinations = new Set<string>();
      const considered = new Set<string>();
      // one context for every destination: the body is parsed at most once per event
      const view = filterContext(event, limits);
      const consider = (destination: Destination | undefined) => {
        // paused and disabled destinations get their tasks too: deliver holds them until resumed
        if (!destination) return;
        const id = destination.id;
        // a destination in several flows is judged once
        if (considered.has(id)) return;
        considered.add(id);
        const skipped = subscribed(destination, event.event_type, view);
        if (skipped === null) destinations.add(id);
        else if (skipped.invalid) log.warn('destination skipped: its stored filter is invalid', { tenant_id: event.tenant_id, event_id: event.event_id, destination_id: id, trace_id: traceId, reason: skipped.reason });
        else log.debug('event not routed to a destination: not subscribed', { tenant_id: event.tenant_id, event_id: event.event_id, destination_id: id, trace_id: traceId, event_type: event.event_type, ...skipped });
      };
      const operational = isOperational(event);
      if (operational) {
        // no flows: every destination of the tenant that names the type explicitly
        for (const d of tenantDestinations(event.tenant_id)) if (subscribesExplicitly(d.event_types, event.event_type ?? '')) consider(d);
      } else {
        for (const flow of config.list('flow', event.tenant_id)) {
          if (flow.ingester_id !== event.ingester_id) continue;
          for (const id of flow.destination_ids) consider(config.get('destination', event.tenant_id, id));
        }
      }
      if (destinations.size === 0) {
        span?.setAttribute(SPAN_ATTRIBUTES.outcome, 'not_routed');
        if (considered.size > 0 || operational) {
          log.debug('no destination subscribes to the event; it goes no further', { tenant_id: event.tenant_id, event_id: event.event_id, ingester_id: event.ingester_id, correlation_id: event.correlation_id, trace_id: traceId, event_type: event.event_type });
          return [];
        }
        log.warn('no destination in the ingester\'s delivery flows; the event goes no further', { tenant_id: event.tenant_id, event_id: event.event_id, ingester_id: event.ingester_id, correlation_id: event.correlation_id, trace_id: traceId });
        return [];
      }
      // MAX_FANOUT may have been lowered after the flows were written: the first ones in a
      // stable order go, so the same event always reaches the same destinations
      const chosen = [...destinations].sort();
      if (chosen.length > maxFanout) {
        log.warn('more destinations than MAX_FANOUT; the rest are left out', { tenant_id: event.tenant_id, event_id: event.event_id, ingester_id: event.ingester_id, correlation_id: event.correlation_id, trace_id: traceId, destinations: chosen.length, max_fanout: maxFanout, left_out: chosen.length - maxFanout });
        chosen.length = maxFanout;
      }
      span?.setAttributes({ [SPAN_ATTRIBUTES.outcome]: 'routed', 'hookline.deliveries': chosen.length });
      return chosen.map((destinationId): AnyOutput => {
        const task: DeliveryTask = {
          // derived, so routing the same event twice yields the same delivery (and webhook-id)
          delivery_id: derivedId('delivery', event.received_at, `${event.event_id}/${destinationId}`),
          event_id: event.event_id,
          tenant_id: event.tenant_id,
          ingester_id: event.ingester_id,
          destination_id: destinationId,
          correlation_id: event.correlation_id,
          attempt: 1,
          not_before: Date.now(),
          received_at: event.received_at,
          content_type: event.content_type,
          body: event.body,
          replay_of: null,
          // records written before the field existed decode without it (writer's schema)
          hops: event.hops ?? 0,
          event_type: event.event_type,
        };
        return { topic: topics.deliveryRequested, key: deliveryKey(task, config.get('destination', event.tenant_id, destinationId)), record: 'DeliveryTask', value: task };
      });
    },
  };
}
