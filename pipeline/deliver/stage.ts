import { createHash } from 'node:crypto';
import type { Destination } from '../../core/model';
import type { Topics } from '../../core/topics';
import { signStandardWebhook } from '../../core/signing/standard-webhooks';
import { errorMessage } from '../../core/log';
import type { DeliveryOutcome, DeliveryTask } from '../../platform/avro/records';
import type { AnyOutput, RecordStage } from '../runner/stage';
import { transition } from '../transitions';
import type { HttpSender } from './http-sender';

export interface DestinationLookup {
  get(kind: 'destination', tenantId: string, id: string): Destination | undefined;
}

/** The Standard Webhooks headers, the original content type and the correlation id. */
export function outboundHeaders(task: DeliveryTask, destination: Destination, nowMs: number): Record<string, string> {
  const timestamp = Math.floor(nowMs / 1000);
  return {
    'content-type': task.content_type ?? 'application/octet-stream',
    'webhook-id': task.delivery_id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signStandardWebhook(destination.signing_secret, task.delivery_id, timestamp, task.body),
    'x-correlation-id': task.correlation_id,
    'user-agent': 'hookline/0.1',
  };
}

/** One attempt per delivery task: POST the original body, record the outcome. */
export function deliverStage(topics: Topics, config: DestinationLookup, sender: HttpSender): RecordStage<'DeliveryTask'> {
  return {
    kind: 'record',
    name: 'deliver',
    input: { topic: topics.deliveryRequested, record: 'DeliveryTask' },
    concurrency: 64,
    async handle(task: DeliveryTask, { log }): Promise<AnyOutput[]> {
      const destination = config.get('destination', task.tenant_id, task.destination_id);
      const attemptedAt = Date.now();
      const outcome: DeliveryOutcome = {
        delivery_id: task.delivery_id,
        event_id: task.event_id,
        tenant_id: task.tenant_id,
        destination_id: task.destination_id,
        correlation_id: task.correlation_id,
        attempt_number: task.attempt,
        status: 'failed',
        response_code: null,
        attempted_at: attemptedAt,
        duration_ms: 0,
        error_message: null,
        body_sha256: createHash('sha256').update(task.body).digest('hex'),
        next_attempt_at: null,
      };
      if (!destination) {
        outcome.error_message = 'the destination no longer exists';
      } else {
        try {
          const res = await sender.send({ url: destination.url, headers: outboundHeaders(task, destination, attemptedAt), body: task.body });
          outcome.response_code = res.status;
          outcome.duration_ms = res.durationMs;
          if (res.status >= 200 && res.status < 300) outcome.status = 'delivered';
          else outcome.error_message = `the destination answered ${res.status}`;
        } catch (err) {
          outcome.duration_ms = Date.now() - attemptedAt;
          outcome.error_message = errorMessage(err);
        }
      }
      const fields = { tenant_id: task.tenant_id, event_id: task.event_id, delivery_id: task.delivery_id, destination_id: task.destination_id, correlation_id: task.correlation_id, response_code: outcome.response_code };
      if (outcome.status === 'delivered') log.info('delivered', fields);
      else log.warn('delivery failed', { ...fields, error: outcome.error_message });
      const event = { event_id: task.event_id, tenant_id: task.tenant_id, ingester_id: task.ingester_id, correlation_id: task.correlation_id };
      return [
        { topic: topics.deliveryCompleted, key: task.destination_id, record: 'DeliveryOutcome', value: outcome },
        transition(topics, event, outcome.status === 'delivered' ? 'delivered' : 'failed', {
          delivery_id: task.delivery_id,
          destination_id: task.destination_id,
          reason: outcome.error_message,
        }),
      ];
    },
  };
}
