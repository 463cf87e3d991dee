import express, { type Router } from 'express';
import type { ClickHouseClient } from '@clickhouse/client';
import { AppError } from '../../core/errors';
import { LOG_LEVELS } from '../../core/config';
import { authOf, requireScope } from '../auth';
import type { ApiKey } from '../../core/model';
import { decodeCursor, encodeCursor } from '../cursor';
import { parseLimit } from '../paging';
import { CH_TIME, isoFromClickHouse } from '../../platform/clickhouse/time';

interface LogRow {
  id: string;
  ts_text: string;
  level: string;
  message: string;
  stage: string | null;
  event_id: string | null;
  delivery_id: string | null;
  destination_id: string | null;
  ingester_id: string | null;
  correlation_id: string | null;
  fields: string;
}

/**
 * The tenant's pipeline log, newest first. `level` is a minimum: `warn` gives warnings and
 * errors. Cursors are keyset (time, id), stable while lines are being added.
 */
export function logsRouter(clickhouse: ClickHouseClient, database: string): Router {
  const router = express.Router({ mergeParams: true });
  router.get('/', requireScope('read:logs'), async (req, res) => {
    res.json(await readLogs(clickhouse, database, authOf(res), req.query));
  });
  return router;
}

/** `level`, a minimum, and the levels it takes in (`warn`: warn and error); every level when absent (422 for another value). */
export function logLevelsOf(raw: unknown): { level: string | null; levels: string[] } {
  if (raw !== undefined && (typeof raw !== 'string' || !(LOG_LEVELS as readonly string[]).includes(raw))) {
    throw new AppError('unprocessable-entity', `level must be one of ${LOG_LEVELS.join(', ')}`);
  }
  return { level: raw ?? null, levels: raw ? LOG_LEVELS.slice(LOG_LEVELS.indexOf(raw as (typeof LOG_LEVELS)[number])) : [...LOG_LEVELS] };
}

/**
 * One page of the tenant's log, newest first; with `resourceId`, only the lines that name that
 * resource (event, delivery, destination, ingester or correlation id).
 */
export async function readLogs(clickhouse: ClickHouseClient, database: string, key: ApiKey, query: Record<string, unknown>, resourceId?: string) {
  const limit = parseLimit(query.limit);
  const { level, levels } = logLevelsOf(query.level);
  const filters = { level, ...(resourceId === undefined ? {} : { resource: resourceId }) };
  const where = ['tenant_id = {tenant:String}', 'level IN {levels:Array(String)}'];
  const params: Record<string, unknown> = { tenant: key.tenant_id, levels, limit: limit + 1 };
  if (key.resource_ids) {
    // a key limited to some resources sees only lines about them
    where.push('(destination_id IN {resources:Array(String)} OR ingester_id IN {resources:Array(String)})');
    params.resources = key.resource_ids;
  }
  if (resourceId !== undefined) {
    where.push('{resource:String} IN (event_id, delivery_id, destination_id, ingester_id, correlation_id)');
    params.resource = resourceId;
  }
  if (typeof query.cursor === 'string' && query.cursor !== '') {
    const [ts, id] = decodeCursor(query.cursor, filters);
    if (typeof ts !== 'string' || !CH_TIME.test(ts) || typeof id !== 'string') throw new AppError('validation-error', 'the cursor is not one this API issued', { errors: [{ field: 'cursor', message: 'is not a valid cursor' }] });
    where.push('(ts, id) < ({ts:DateTime64(3)}, {id:String})');
    Object.assign(params, { ts, id });
  }
  // aliases must not shadow columns: ClickHouse resolves WHERE names to SELECT aliases
  const rs = await clickhouse.query({
    query: `SELECT id, toString(ts) AS ts_text, level, message, stage, event_id, delivery_id, destination_id, ingester_id, correlation_id, fields
            FROM ${database}.logs FINAL WHERE ${where.join(' AND ')} ORDER BY ts DESC, id DESC LIMIT {limit:UInt32}`,
    query_params: params,
    format: 'JSONEachRow',
  });
  const rows = await rs.json<LogRow>();
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    logs: page.map((r) => ({
      id: r.id,
      timestamp: isoFromClickHouse(r.ts_text),
      level: r.level,
      message: r.message,
      stage: r.stage,
      event_id: r.event_id,
      delivery_id: r.delivery_id,
      destination_id: r.destination_id,
      ingester_id: r.ingester_id,
      correlation_id: r.correlation_id,
      fields: JSON.parse(r.fields) as Record<string, unknown>,
    })),
    next_cursor: rows.length > limit && last ? encodeCursor([last.ts_text, last.id], filters) : null,
  };
}
