import express, { type Router } from 'express';
import type { ClickHouseClient } from '@clickhouse/client';
import { AppError, notFound } from '../../core/errors';
import { decodeStoredBody } from '../../core/stored-body';
import type { ConfigStore } from '../../platform/config-store/config-store';
import { readStoredEvents, taskOfStoredEvent } from '../../platform/replay/stored-events';
import { replayDelivery, type ReplayDeps } from '../../platform/replay/replay';
import { authOf, requireResource, requireScope } from '../auth';

export function eventsRouter(clickhouse: ClickHouseClient, database: string, store: ConfigStore, replay: ReplayDeps): Router {
  const router = express.Router({ mergeParams: true });

  /**
   * Retries an event's dead deliveries: each becomes a new delivery (status queued) to the
   * same destination. 404 for an unknown event, 409 when it has no dead delivery left.
   */
  router.post('/:eventId/retry', requireScope('write:events'), async (req, res) => {
    const key = authOf(res);
    const eventId = String(req.params.eventId);
    const params = { tenant: key.tenant_id, event: eventId };
    const event = (await readStoredEvents(clickhouse, database, key.tenant_id, [eventId])).get(eventId);
    if (!event) throw notFound(`event ${eventId}`);
    // never deliver bytes other than the ones received
    const body = decodeStoredBody(event.body, event.body_sha256);
    if (!body) throw new AppError('conflict', `event ${eventId} cannot be retried: its stored body does not match the SHA-256 recorded when it was received`);
    const deadRs = await clickhouse.query({
      query: `SELECT delivery_id, destination_id FROM ${database}.deliveries FINAL
              WHERE tenant_id = {tenant:String} AND event_id = {event:String}
              GROUP BY delivery_id, destination_id
              HAVING argMax(status, attempt_number) = 'failed'
              ORDER BY delivery_id`,
      query_params: params,
      format: 'JSONEachRow',
    });
    const dead = await deadRs.json<{ delivery_id: string; destination_id: string }>();
    for (const d of dead) requireResource(res, d.destination_id);
    const queued: string[] = [];
    const skipped: string[] = [];
    for (const d of dead) {
      const destination = store.get('destination', key.tenant_id, d.destination_id);
      if (!destination || destination.status !== 'active') {
        skipped.push(d.destination_id);
        continue;
      }
      const task = taskOfStoredEvent(event, body, { delivery_id: d.delivery_id, tenant_id: key.tenant_id, destination_id: d.destination_id, replay_of: null });
      const id = await replayDelivery(replay, task, `retry requested through the API (request ${String(res.getHeader('x-request-id'))})`);
      if (id) queued.push(id);
    }
    if (queued.length === 0) {
      const why = dead.length === 0 ? 'it has no failed delivery' : skipped.length > 0 ? `its failed deliveries go to destinations that are not active (${skipped.join(', ')})` : 'its failed deliveries were already retried';
      throw new AppError('conflict', `event ${eventId} cannot be retried: ${why}`);
    }
    res.status(202).json({
      status: 'queued',
      delivery_id: queued[0],
      delivery_ids: queued,
      message: `${queued.length} failed ${queued.length === 1 ? 'delivery' : 'deliveries'} of event ${eventId} queued again as new ${queued.length === 1 ? 'delivery' : 'deliveries'}`,
    });
  });

  return router;
}
