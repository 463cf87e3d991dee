import type { ClickHouseClient } from '@clickhouse/client';
import { HOPS_HEADER, hopsOf } from '../../core/hops';
import type { DeliveryTask } from '../avro/records';

/** An event as the `events` table keeps it: what sending it again needs. */
export interface StoredEvent {
  event_id: string;
  ingester_id: string;
  correlation_id: string;
  received_at_ms: string;
  content_type: string | null;
  body: string;
  body_sha256: string;
  /** The request headers as received, a JSON array of [name, value]. */
  headers: string;
  /** 1 once the body's retention passed (RETENTION_BODIES): body and headers are gone, or about to be. */
  body_expired: number;
  /** The type validation found ('' when none): event_types holds it, the events row is written before. */
  event_type: string;
}

/** The stored events of these ids in one tenant, by id (ids without a row are absent). */
export async function readStoredEvents(clickhouse: ClickHouseClient, database: string, tenantId: string, eventIds: readonly string[]): Promise<Map<string, StoredEvent>> {
  if (eventIds.length === 0) return new Map();
  const rs = await clickhouse.query({
    query: `SELECT event_id, ingester_id, correlation_id, toString(toUnixTimestamp64Milli(received_at)) AS received_at_ms, content_type, body, body_sha256, headers, t.event_type AS event_type, e.body_expires_at <= now() AS body_expired
            FROM ${database}.events AS e FINAL
            LEFT JOIN (SELECT event_id, any(event_type) AS event_type FROM ${database}.event_types WHERE tenant_id = {tenant:String} AND event_id IN {ids:Array(String)} GROUP BY event_id) AS t USING event_id
            WHERE e.tenant_id = {tenant:String} AND e.event_id IN {ids:Array(String)}`,
    query_params: { tenant: tenantId, ids: [...new Set(eventIds)] },
    format: 'JSONEachRow',
  });
  return new Map((await rs.json<StoredEvent>()).map((e) => [e.event_id, e]));
}

/** The hop count the event arrived with (its X-Hookline-Hops header), as routing gave it to deliveries. */
function hopsOfStored(headers: string): number {
  const pairs = JSON.parse(headers) as [string, string][];
  return hopsOf(pairs.find(([name]) => name === HOPS_HEADER)?.[1]);
}

/**
 * A first attempt, due now, that sends a stored event again to one destination: the event's
 * ingester, correlation id, content type and hop count, and `body`, the stored bytes the caller
 * checked against their SHA-256 (core/stored-body.ts).
 */
export function taskOfStoredEvent(
  event: StoredEvent,
  body: Buffer,
  delivery: Pick<DeliveryTask, 'delivery_id' | 'tenant_id' | 'destination_id' | 'replay_of'> & { replay_job_id?: string | null },
): DeliveryTask {
  return {
    ...delivery,
    event_id: event.event_id,
    ingester_id: event.ingester_id,
    correlation_id: event.correlation_id,
    attempt: 1,
    not_before: Date.now(),
    received_at: Number(event.received_at_ms),
    content_type: event.content_type,
    body,
    hops: hopsOfStored(event.headers),
    event_type: event.event_type || null,
  };
}
