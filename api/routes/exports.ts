import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import express, { type Request, type Response, type Router } from 'express';
import type { ClickHouseClient } from '@clickhouse/client';
import { AppError, validationError } from '../../core/errors';
import type { Logger } from '../../core/log';
import type { Scope } from '../../core/scopes';
import { authOf, requireScope } from '../auth';
import { decodeCursor, encodeCursor } from '../cursor';
import { CH_TIME } from '../../platform/clickhouse/time';
import { EXPORT_FORMATS, exportRows, pageEndOf, type ExportFilter, type ExportFormat, type ExportKind } from '../../platform/clickhouse/exports';
import { cursorFiltersOf, searchFiltersOf } from './deliveries-query';
import { deliveryStatusOf } from './deliveries';
import { logLevelsOf } from './logs';

/** Rows per request by kind: default and most. An event row carries up to 64 KiB of body, so fewer of them. */
export const EXPORT_LIMITS: Record<ExportKind, { default: number; max: number }> = {
  deliveries: { default: 10_000, max: 100_000 },
  events: { default: 1_000, max: 10_000 },
  logs: { default: 10_000, max: 100_000 },
};

export const EXPORT_MEDIA_TYPES: Record<ExportFormat, string> = {
  ndjson: 'application/x-ndjson',
  csv: 'text/csv',
  parquet: 'application/vnd.apache.parquet',
};
const CONTENT_TYPE: Record<ExportFormat, string> = { ndjson: 'application/x-ndjson; charset=utf-8', csv: 'text/csv; charset=utf-8; header=present', parquet: 'application/vnd.apache.parquet' };
const EXTENSION: Record<ExportFormat, string> = { ndjson: 'ndjson', csv: 'csv', parquet: 'parquet' };

/** The header that carries the next page's cursor (beside `Link: <...>; rel="next"`); absent on the last page. */
export const NEXT_CURSOR_HEADER = 'Hookline-Next-Cursor';

/** The query parameters each kind takes besides format, limit and cursor; the other search filters are refused. */
export const EXPORT_FILTERS: Record<ExportKind, readonly string[]> = {
  deliveries: ['status', 'destination_id', 'event_type', 'from', 'to', 'response_code', 'q'],
  events: ['event_type', 'from', 'to'],
  logs: ['level', 'from', 'to'],
};
const ALL_FILTERS = [...new Set(Object.values(EXPORT_FILTERS).flat())];

const SCOPE_OF: Record<ExportKind, Scope> = { deliveries: 'read:deliveries', events: 'read:events', logs: 'read:logs' };

/** GET .../exports/{deliveries,events,logs}: a page of rows in NDJSON, CSV or Parquet, in key order, with the next cursor in the headers. */
export function exportsRouter(clickhouse: ClickHouseClient, database: string, log?: Logger): Router {
  const router = express.Router({ mergeParams: true });
  for (const kind of Object.keys(SCOPE_OF) as ExportKind[]) {
    router.get(`/${kind}`, requireScope(SCOPE_OF[kind]), async (req, res) => {
      const request = exportRequestOf(kind, req, authOf(res).tenant_id, authOf(res).resource_ids ?? null);
      const end = await pageEndOf(clickhouse, database, request.filter, request.limit);
      // an error of the query itself is answered here, as a problem, before any row is sent
      const rows = await exportRows(clickhouse, database, request.filter, end, request.limit, request.format);
      res.status(200);
      res.setHeader('Content-Type', CONTENT_TYPE[request.format]);
      res.setHeader('Content-Disposition', `attachment; filename="${kind}-${fileTime(new Date())}.${EXTENSION[request.format]}"`);
      res.setHeader('Cache-Control', 'no-store');
      if (end) {
        const cursor = encodeCursor(end, request.cursorFilters);
        res.setHeader('Link', `<${nextLink(req, request.format, cursor)}>; rel="next"`);
        res.setHeader(NEXT_CURSOR_HEADER, cursor);
      }
      await sendExport(res, rows, (err) => log?.warn('export ended before its last row: the source failed or the client went away', { kind, error: String(err) }));
    });
  }
  return router;
}

interface ExportRequest {
  filter: ExportFilter;
  format: ExportFormat;
  limit: number;
  /** What the cursor is bound to: the kind and its filters (not format or limit, which may change between pages). */
  cursorFilters: Record<string, unknown>;
}

/** The export a request asks for, every parameter checked (400 naming it; an unknown status or level 422, as the lists answer). */
function exportRequestOf(kind: ExportKind, req: Request, tenant: string, resourceIds: string[] | null): ExportRequest {
  const query = req.query as Record<string, unknown>;
  const foreign = ALL_FILTERS.filter((name) => query[name] !== undefined && !EXPORT_FILTERS[kind].includes(name));
  if (foreign.length > 0) throw validationError(foreign.map((field) => ({ field, message: `is not a filter of ${kind} exports (${EXPORT_FILTERS[kind].join(', ')})` })));
  const format = formatOf(req);
  const limit = exportLimitOf(kind, query.limit);
  const status = kind === 'deliveries' ? deliveryStatusOf(query.status) : null;
  const levels = kind === 'logs' ? logLevelsOf(query.level) : null;
  const search = searchFiltersOf(query);
  const cursorFilters = { export: kind, ...cursorFiltersOf(status, search), ...(levels ? { level: levels.level } : {}) };
  let after: unknown[] | null = null;
  if (typeof query.cursor === 'string' && query.cursor !== '') {
    after = decodeCursor(query.cursor, cursorFilters);
    if (!isKeyOf(kind, after)) throw validationError([{ field: 'cursor', message: 'is not a valid cursor' }]);
  } else if (query.cursor !== undefined && typeof query.cursor !== 'string') {
    throw validationError([{ field: 'cursor', message: 'must be given once' }]);
  }
  return { filter: { kind, tenant, resourceIds, search, status, levels: levels?.levels ?? null, after }, format, limit, cursorFilters };
}

/** `format`, else the first of the three media types the Accept header prefers; NDJSON when it names none. */
function formatOf(req: Request): ExportFormat {
  const raw = req.query.format;
  if (raw !== undefined) {
    if (typeof raw !== 'string' || !(EXPORT_FORMATS as readonly string[]).includes(raw)) throw validationError([{ field: 'format', message: `must be one of ${EXPORT_FORMATS.join(', ')}` }]);
    return raw as ExportFormat;
  }
  const accepted = req.accepts(EXPORT_FORMATS.map((f) => EXPORT_MEDIA_TYPES[f]));
  return (EXPORT_FORMATS.find((f) => EXPORT_MEDIA_TYPES[f] === accepted) ?? 'ndjson');
}

/** `limit` of an export of `kind`: an integer from 1 to the kind's most. */
export function exportLimitOf(kind: ExportKind, raw: unknown): number {
  const { default: fallback, max } = EXPORT_LIMITS[kind];
  if (raw === undefined) return fallback;
  if (typeof raw !== 'string' || !/^\d{1,7}$/.test(raw) || Number(raw) < 1 || Number(raw) > max) {
    throw new AppError('validation-error', `limit must be an integer from 1 to ${max}`, { errors: [{ field: 'limit', message: `must be an integer from 1 to ${max}` }] });
  }
  return Number(raw);
}

/** Whether a decoded cursor position is a key of the kind's table (the cursor went through JSON). */
function isKeyOf(kind: ExportKind, p: unknown[]): boolean {
  const [a, b, c] = p;
  if (kind === 'events') return p.length === 1 && typeof a === 'string';
  if (kind === 'logs') return p.length === 2 && typeof a === 'string' && CH_TIME.test(a) && typeof b === 'string';
  return p.length === 3 && typeof a === 'string' && CH_TIME.test(a) && typeof b === 'string' && typeof c === 'number' && Number.isInteger(c) && c >= 0 && c <= 0xffffffff;
}

/** The same request with the next cursor and the format it was answered in: a path and query, no host. */
function nextLink(req: Request, format: ExportFormat, cursor: string): string {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(req.query)) if (typeof v === 'string' && k !== 'cursor' && k !== 'format') qs.set(k, v);
  qs.set('format', format);
  qs.set('cursor', cursor);
  return `${req.originalUrl.split('?')[0]}?${qs}`;
}

/** `20260102T030405Z`: the time of the export in a file name. */
function fileTime(d: Date): string {
  return d.toISOString().replace(/\.\d{3}/, '').replace(/[-:]/g, '');
}

/**
 * Streams an export's bytes as the answer (chunked, no length). When the source fails after the
 * headers are out, the connection is destroyed without the terminating chunk: the client sees an
 * incomplete transfer, never an answer that looks complete.
 */
export async function sendExport(res: Response, rows: Readable, onCutShort: (err: unknown) => void): Promise<void> {
  try {
    await pipeline(rows, res);
  } catch (err) {
    // pipeline destroyed the answer already; its socket goes with it
    res.socket?.destroy();
    onCutShort(err);
  }
}
