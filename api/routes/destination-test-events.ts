import express, { type Router } from 'express';
import { AppError, notFound } from '../../core/errors';
import { exampleOf } from '../../core/event-type-schema';
import type { ConfigStore } from '../../platform/config-store/config-store';
import { queueTestEvent, type ReplayDeps } from '../../platform/replay/replay';
import { authOf, requireResource, requireScope } from '../auth';
import { validateBody } from '../validation';
import { MAX_PAYLOAD_BYTES } from './saved-payloads';

interface TestEventBody {
  event_type?: string;
  payload?: Record<string, unknown>;
  saved_payload_id?: string;
}

/**
 * `POST .../destinations/{id}/test-events`: sends one test event to the destination, with a
 * payload given, a saved payload, or the example of an event type of the catalogue. The event
 * goes to this destination only (whatever its subscriptions), and its delivery is made, retried,
 * recorded and proved like any other, so a user sees it arrive, and checks its proof, as they
 * would a real one.
 */
export function destinationTestEventsRouter(store: ConfigStore, replay: ReplayDeps): Router {
  const router = express.Router({ mergeParams: true });

  router.post('/:destinationId/test-events', requireScope('write:events'), async (req, res) => {
    const key = authOf(res);
    const destination = store.get('destination', key.tenant_id, String(req.params.destinationId));
    if (!destination) throw notFound(`destination ${String(req.params.destinationId)}`);
    requireResource(res, destination.id);
    const check = validateBody<TestEventBody>('sendTestEvent', req.body ?? {});
    const b = check.body;
    if (b.payload !== undefined && b.saved_payload_id !== undefined) check.fail('saved_payload_id', 'give either payload or saved_payload_id, not both');
    const type = b.event_type === undefined ? undefined : store.list('event_type', key.tenant_id).find((t) => t.name === b.event_type);
    if (b.event_type !== undefined && check.usable('event_type') && !type) check.fail('event_type', `the tenant's catalogue has no event type ${b.event_type}`);
    check.done();
    let payload: unknown;
    if (b.saved_payload_id !== undefined) {
      const saved = store.get('saved_payload', key.tenant_id, b.saved_payload_id);
      if (!saved) throw notFound(`saved payload ${b.saved_payload_id}`);
      payload = saved.payload;
    } else if (b.payload !== undefined) {
      payload = b.payload;
    } else if (type) {
      payload = type.schema ? exampleOf(type.schema) : {};
    } else {
      payload = { type: 'hookline.test', message: 'A test event sent from hookline', sent_at: new Date().toISOString() };
    }
    const body = Buffer.from(JSON.stringify(payload));
    if (body.length > MAX_PAYLOAD_BYTES) throw new AppError('payload-too-large', `a test event's payload may be at most ${MAX_PAYLOAD_BYTES} bytes of JSON`);
    const task = await queueTestEvent(replay, { tenantId: key.tenant_id, destination, body, contentType: 'application/json', eventType: b.event_type ?? null });
    res.status(202).json({ event_id: task.event_id, delivery_id: task.delivery_id, destination_id: destination.id, event_type: b.event_type ?? null, status: 'queued' });
  });

  return router;
}
