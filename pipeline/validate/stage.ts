import type { Ingester } from '../../core/model';
import { isOperational } from '../../core/operational-events';
import { isTestEvent } from '../../core/test-events';
import { eventKey, webhookKey } from '../../core/record-keys';
import { stageIo, type Topics } from '../../core/topics';
import type { WebhookEvent } from '../../platform/avro/records';
import type { AnyOutput, RecordStage } from '../runtime/stage';
import { transition } from '../transitions';
import { verifyRequest } from './verify';
import { traceIdOf } from '../../platform/tracing/trace-context';
import { SPAN_ATTRIBUTES } from '../../platform/tracing/tracing';

/** What validation needs to know of the configuration. */
export interface IngesterLookup {
  get(kind: 'ingester', tenantId: string, id: string): Ingester | undefined;
}

/** received -> validated (the validated record is that transition's record), or -> failed with the reason (the raw body stays on the received topic and in ClickHouse). */
export function validateStage(topics: Topics, config: IngesterLookup): RecordStage<'WebhookEvent'> {
  return {
    kind: 'record',
    ...stageIo(topics, 'validate', 'WebhookEvent'),
    async handle(event: WebhookEvent, { log, trace, span }): Promise<AnyOutput[]> {
      // the service wrote an operational or a test event itself: there is no ingester and nothing to verify
      if (isOperational(event) || isTestEvent(event)) return [{ topic: topics.validated, key: eventKey(event), record: 'WebhookEvent', value: event }];
      const ingester = config.get('ingester', event.tenant_id, event.ingester_id);
      const verdict = ingester
        ? verifyRequest(ingester, { headers: event.headers, body: event.body, receivedAt: event.received_at })
        : ({ ok: false, reason: 'the ingester no longer exists' } as const);
      span?.setAttribute(SPAN_ATTRIBUTES.outcome, verdict.ok ? 'validated' : 'failed');
      if (!verdict.ok) {
        log.warn('verification failed', { tenant_id: event.tenant_id, event_id: event.event_id, ingester_id: event.ingester_id, correlation_id: event.correlation_id, trace_id: traceIdOf(trace), reason: verdict.reason });
        return [transition(topics, event, 'failed', { reason: `verification failed: ${verdict.reason}` })];
      }
      const validated: WebhookEvent = { ...event, event_type: verdict.eventType ?? event.event_type };
      // the record on webhooks.validated is the record of the `validated` state: the sink derives its row
      return [{ topic: topics.validated, key: webhookKey(event, ingester), record: 'WebhookEvent', value: validated }];
    },
  };
}
