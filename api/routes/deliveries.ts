import express, { type Router } from 'express';
import type { ClickHouseClient } from '@clickhouse/client';
import { AppError } from '../../core/errors';
import { authOf, requireScope } from '../auth';
import { decodeCursor, encodeCursor } from '../cursor';

export const DELIVERY_STATUSES = ['delivered', 'retrying', 'failed'] as const;
export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;

interface DeliveryRow {
  delivery_id: string;
  attempt_number: number;
  event_id: string;
  destination_id: string;
  status: string;
  response_code: number | null;
  attempted_at: string;
  error_message: string | null;
}

/** `2026-01-02 03:04:05.678` (ClickHouse, UTC) -> `2026-01-02T03:04:05.678Z`. */
export function isoFromClickHouse(value: string): string {
  return `${value.replace(' ', 'T')}Z`;
}

export function parseLimit(raw: unknown): number {
  if (raw === undefined) return DEFAULT_LIMIT;
  if (typeof raw !== 'string' || !/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_LIMIT) {
    throw new AppError('validation-error', `limit must be an integer from 1 to ${MAX_LIMIT}`, { errors: [{ field: 'limit', message: `must be an integer from 1 to ${MAX_LIMIT}` }] });
  }
  return Number(raw);
}

export function deliveriesRouter(clickhouse: ClickHouseClient, database: string): Router {
  const router = express.Router({ mergeParams: true });

  /** Delivery attempts, newest first; one item per attempt. */
  router.get('/', requireScope('read:deliveries'), async (req, res) => {
    const key = authOf(res);
    const limit = parseLimit(req.query.limit);
    const status = req.query.status;
    if (status !== undefined && (typeof status !== 'string' || !(DELIVERY_STATUSES as readonly string[]).includes(status))) {
      throw new AppError('unprocessable-entity', `status must be one of ${DELIVERY_STATUSES.join(', ')}`);
    }
    const filters = { status: status ?? null };
    const params: Record<string, unknown> = { tenant: key.tenant_id, limit: limit + 1 };
    const where = ['tenant_id = {tenant:String}'];
    if (status) {
      where.push('status = {status:String}');
      params.status = status;
    }
    if (typeof req.query.cursor === 'string' && req.query.cursor !== '') {
      const [at, id, n] = decodeCursor(req.query.cursor, filters);
      if (typeof at !== 'string' || typeof id !== 'string' || typeof n !== 'number') {
        throw new AppError('validation-error', 'the cursor is not one this API issued', { errors: [{ field: 'cursor', message: 'is not a valid cursor' }] });
      }
      where.push('(attempted_at, delivery_id, attempt_number) < ({at:DateTime64(3)}, {id:String}, {n:UInt32})');
      Object.assign(params, { at, id, n });
    }
    if (key.resource_ids) {
      where.push('destination_id IN {resources:Array(String)}');
      params.resources = key.resource_ids;
    }
    const rs = await clickhouse.query({
      query: `SELECT delivery_id, attempt_number, event_id, destination_id, status, response_code, toString(attempted_at) AS attempted_at, error_message
              FROM ${database}.deliveries FINAL
              WHERE ${where.join(' AND ')}
              ORDER BY attempted_at DESC, delivery_id DESC, attempt_number DESC
              LIMIT {limit:UInt32}`,
      query_params: params,
      format: 'JSONEachRow',
    });
    const rows = await rs.json<DeliveryRow>();
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    res.json({
      deliveries: page.map((r) => ({
        id: r.delivery_id,
        event_id: r.event_id,
        destination_id: r.destination_id,
        status: r.status,
        response_code: r.response_code,
        attempt_number: r.attempt_number,
        attempted_at: isoFromClickHouse(r.attempted_at),
        ...(r.error_message ? { error_message: r.error_message } : {}),
      })),
      next_cursor: rows.length > limit && last ? encodeCursor([last.attempted_at, last.delivery_id, last.attempt_number], filters) : null,
    });
  });

  return router;
}
