import { isUtf8 } from 'node:buffer';
import express, { type Router } from 'express';
import type { ClickHouseClient } from '@clickhouse/client';
import { AppError, notFound } from '../../core/errors';
import { decodeStoredBody } from '../../core/stored-body';
import type { ConfigStore } from '../../platform/config-store/config-store';
import { readStoredEvents, taskOfStoredEvent } from '../../platform/replay/stored-events';
import { replayDelivery, type ReplayDeps } from '../../platform/replay/replay';
import { authOf, requireResource, requireResourceOf, requireScope } from '../auth';
import { eventTypesOf } from '../../platform/clickhouse/deliveries-list';
import type { ApiKey } from '../../core/model';

/** Most bytes of a received body GET .../events/{id} shows; the rest is left out (`body_truncated`). */
export const MAX_EVENT_BODY_SHOWN = 64 * 1024;

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
    if (event.body_expired) throw bodyExpired(eventId, 'retried');
    // never deliver bytes other than the ones received
    const body = decodeStoredBody(event.body, event.body_sha256);
    if (!body) throw new AppError('conflict', `event ${eventId} cannot be retried: its stored body does not match the SHA-256 recorded when it was received`);
    const deadRs = await clickhouse.query({
      query: `SELECT delivery_id, destination_id, argMax(trace_id, attempt_number) AS trace_id FROM ${database}.deliveries FINAL
              WHERE tenant_id = {tenant:String} AND event_id = {event:String}
              GROUP BY delivery_id, destination_id
              HAVING argMax(status, attempt_number) = 'failed'
              ORDER BY delivery_id`,
      query_params: params,
      format: 'JSONEachRow',
    });
    const dead = await deadRs.json<{ delivery_id: string; destination_id: string; trace_id: string }>();
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
      const id = await replayDelivery(replay, task, `retry requested through the API (request ${String(res.getHeader('x-request-id'))})`, d.trace_id);
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

  /** The event as received: its ingester, correlation id, type, content type and (the start of) its body. */
  router.get('/:eventId', requireScope('read:events'), async (req, res) => {
    const key = authOf(res);
    const eventId = String(req.params.eventId);
    const event = (await readStoredEvents(clickhouse, database, key.tenant_id, [eventId])).get(eventId);
    if (!event) throw notFound(`event ${eventId}`);
    await requireEventResource(clickhouse, database, key, event.event_id, event.ingester_id, Number(event.received_at_ms));
    const types = await eventTypesOf(clickhouse, database, key.tenant_id, [eventId]);
    // past its retention the body is not shown, whether ClickHouse has cleared it yet or not
    const bytes = event.body_expired ? undefined : decodeStoredBody(event.body, event.body_sha256);
    res.json({
      id: event.event_id,
      ingester_id: event.ingester_id,
      correlation_id: event.correlation_id,
      event_type: types.get(eventId) ?? null,
      received_at: new Date(Number(event.received_at_ms)).toISOString(),
      content_type: event.content_type,
      body_sha256: event.body_sha256,
      ...bodyShown(bytes),
      body_expired: event.body_expired === 1,
    });
  });

  return router;
}

/** 409 for an event whose body is past its retention: nothing can be sent again. */
export function bodyExpired(eventId: string, what: 'retried' | 'replayed'): AppError {
  return new AppError('conflict', `event ${eventId} cannot be ${what}: its body was removed by the retention of bodies (the tenant's limits.retention.bodies_seconds, else RETENTION_BODIES); its delivery attempts and their evidence remain`);
}

/**
 * At most MAX_EVENT_BODY_SHOWN bytes of a body: UTF-8 text as it is (cut at a character
 * boundary), anything else as base64. A stored body whose bytes do not match the SHA-256 recorded
 * at receipt is not shown (`body_verified` false).
 */
export function bodyShown(bytes: Buffer | undefined) {
  if (!bytes) return { body: null, body_encoding: null, body_bytes: null, body_truncated: false, body_verified: false };
  let cut = Math.min(bytes.length, MAX_EVENT_BODY_SHOWN);
  const text = isUtf8(bytes);
  // back to the start of a character: UTF-8 continuation bytes are 10xxxxxx
  if (text && cut < bytes.length) while (cut > 0 && (bytes[cut]! & 0xc0) === 0x80) cut--;
  const shown = bytes.subarray(0, cut);
  return { body: text ? shown.toString('utf8') : shown.toString('base64'), body_encoding: text ? 'utf8' : 'base64', body_bytes: bytes.length, body_truncated: cut < bytes.length, body_verified: true };
}

/**
 * A key limited to resource ids reads an event of one of its ingesters, or an event delivered
 * (or being delivered) to one of its destinations; 403 permission-denied otherwise.
 */
async function requireEventResource(clickhouse: ClickHouseClient, database: string, key: ApiKey, eventId: string, ingesterId: string, receivedAtMs: number): Promise<void> {
  if (!key.resource_ids || key.resource_ids.includes(ingesterId)) return;
  // attempts come after receipt: the read starts there, in the (tenant_id, attempted_at) key order
  const rs = await clickhouse.query({
    query: `SELECT 1 FROM ${database}.deliveries WHERE tenant_id = {tenant:String} AND attempted_at >= fromUnixTimestamp64Milli({from:Int64})
            AND event_id = {event:String} AND destination_id IN {ids:Array(String)} LIMIT 1`,
    query_params: { tenant: key.tenant_id, from: receivedAtMs, event: eventId, ids: key.resource_ids },
    format: 'JSONEachRow',
  });
  if ((await rs.json()).length === 0) requireResourceOf(key, ingesterId);
}
