import express, { type Router } from 'express';
import type { ClickHouseClient } from '@clickhouse/client';
import { AppError } from '../../core/errors';
import { authOf, requireResourceOf, requireScope } from '../auth';
import type { ApiKey } from '../../core/model';
import { decodeCursor, encodeCursor } from '../cursor';
import { parseLimit } from '../paging';
import { CH_TIME, isoFromClickHouse } from '../../platform/clickhouse/time';
import { eventTypesOf, listDeliveries, type DeliveryRow } from '../../platform/clickhouse/deliveries-list';
import { cursorFiltersOf, searchFiltersOf } from './deliveries-query';

export const DELIVERY_STATUSES = ['delivered', 'retrying', 'failed', 'dropped'] as const;

/** `status` of a deliveries search: one of DELIVERY_STATUSES, null when absent (422 otherwise). */
export function deliveryStatusOf(raw: unknown): string | null {
  if (raw !== undefined && (typeof raw !== 'string' || !(DELIVERY_STATUSES as readonly string[]).includes(raw))) {
    throw new AppError('unprocessable-entity', `status must be one of ${DELIVERY_STATUSES.join(', ')}`);
  }
  return raw ?? null;
}

export function deliveriesRouter(clickhouse: ClickHouseClient, database: string): Router {
  const router = express.Router({ mergeParams: true });

  /** Delivery attempts, newest first, one item per attempt, narrowed by the search filters. */
  router.get('/', requireScope('read:deliveries'), async (req, res) => {
    const key = authOf(res);
    const limit = parseLimit(req.query.limit);
    const status = deliveryStatusOf(req.query.status);
    const search = searchFiltersOf(req.query);
    const filters = cursorFiltersOf(status, search);
    let before: { at: string; id: string; n: number } | null = null;
    if (typeof req.query.cursor === 'string' && req.query.cursor !== '') {
      const [at, id, n] = decodeCursor(req.query.cursor, filters);
      if (typeof at !== 'string' || !CH_TIME.test(at) || typeof id !== 'string' || typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 0xffffffff) {
        throw new AppError('validation-error', 'the cursor is not one this API issued', { errors: [{ field: 'cursor', message: 'is not a valid cursor' }] });
      }
      before = { at, id, n };
    }
    const rows = await listDeliveries(clickhouse, database, { tenant: key.tenant_id, status, search, before, destinationIds: key.resource_ids ?? null }, limit + 1);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    const types = await eventTypesOf(clickhouse, database, key.tenant_id, page.map((r) => r.event_id));
    res.json({
      deliveries: page.map((r) => ({
        id: r.delivery_id,
        event_id: r.event_id,
        destination_id: r.destination_id,
        status: r.status,
        response_code: r.response_code,
        attempt_number: r.attempt_number,
        attempted_at: isoFromClickHouse(r.attempted_at_text),
        body_sha256: r.body_sha256,
        ...(r.error_message ? { error_message: r.error_message } : {}),
        event_type: types.get(r.event_id) ?? null,
        trace_id: r.trace_id || null,
      })),
      next_cursor: rows.length > limit && last ? encodeCursor([last.attempted_at_text, last.delivery_id, last.attempt_number], filters) : null,
    });
  });

  /** One delivery with every attempt, oldest first; its status is the latest attempt's. */
  router.get('/:deliveryId', requireScope('read:deliveries'), async (req, res) => {
    res.json(await deliveryWithAttempts(clickhouse, database, authOf(res), String(req.params.deliveryId)));
  });

  return router;
}

/** One attempt as the view of a delivery shows it: with when the next is due and the start of the answer. */
export type AttemptRow = DeliveryRow & { next_attempt_at_text: string | null; response_body?: string };

/** Every attempt of a delivery the key may see, oldest first (404 or 403 otherwise). */
export async function attemptsOf(clickhouse: ClickHouseClient, database: string, key: ApiKey, deliveryId: string): Promise<AttemptRow[]> {
  const rs = await clickhouse.query({
    query: `SELECT delivery_id, attempt_number, event_id, destination_id, status, response_code, toString(attempted_at) AS attempted_at_text, error_message, body_sha256,
                   if(isNull(next_attempt_at), NULL, toString(next_attempt_at)) AS next_attempt_at_text,
                   if(body_expires_at <= now(), '', response_body) AS shown_response_body, trace_id
            FROM ${database}.deliveries FINAL WHERE tenant_id = {tenant:String} AND delivery_id = {id:String} ORDER BY attempt_number`,
    query_params: { tenant: key.tenant_id, id: deliveryId },
    format: 'JSONEachRow',
  });
  // a response body past its retention is not shown, whether ClickHouse has cleared it yet or not
  const attempts = (await rs.json<AttemptRow & { shown_response_body: string }>()).map(({ shown_response_body, ...a }): AttemptRow => ({ ...a, response_body: shown_response_body }));
  const last = attempts[attempts.length - 1];
  if (!last) throw new AppError('not-found', `delivery ${deliveryId} does not exist`);
  requireResourceOf(key, last.destination_id);
  return attempts;
}

/** GET .../deliveries/{id}: the latest attempt and every attempt, oldest first. */
export async function deliveryWithAttempts(clickhouse: ClickHouseClient, database: string, key: ApiKey, deliveryId: string) {
  return deliveryBody(await attemptsOf(clickhouse, database, key, deliveryId));
}

/** The answer of GET .../deliveries/{id} from the delivery's attempts (at least one). */
export function deliveryBody(attempts: (DeliveryRow & { response_body?: string })[]) {
  const last = attempts[attempts.length - 1]!;
  return {
    id: last.delivery_id,
    event_id: last.event_id,
    destination_id: last.destination_id,
    status: last.status,
    response_code: last.response_code,
    attempt_number: last.attempt_number,
    attempted_at: isoFromClickHouse(last.attempted_at_text),
    body_sha256: last.body_sha256,
    ...(last.error_message ? { error_message: last.error_message } : {}),
    trace_id: last.trace_id || null,
    attempts: attempts.map((a) => ({
      attempt_number: a.attempt_number,
      status: a.status,
      response_code: a.response_code,
      attempted_at: isoFromClickHouse(a.attempted_at_text),
      body_sha256: a.body_sha256,
      ...(a.error_message ? { error_message: a.error_message } : {}),
      // the table keeps '' for no answer; an attempt without a response code had none
      response_body: a.response_code === null ? null : a.response_body ?? '',
      trace_id: a.trace_id || null,
    })),
  };
}
