import { DELIVERY_STATUSES } from '../routes/deliveries';
import { LOG_LEVELS } from '../../core/config';
import type { ToolContext, ToolDeps, ToolSpec } from './tools';

type Json = Record<string, unknown>;

/** Most rows export_rows answers at once: a tool's answer is read whole, by a model. */
export const MAX_EXPORT_TOOL_ROWS = 1000;

export interface ExportToolHelpers {
  tenantPath(ctx: ToolContext, rest: string): string;
  /** The tool's error for a REST answer that is not a success (its problem document). */
  problem(status: number, body: unknown): Error;
}

/**
 * export_rows: a page of an export as NDJSON text (GET .../exports/{kind}?format=ndjson). CSV
 * and Parquet stay with the REST route and the CLI: a tool's answer is JSON text, and binary
 * has no place in it.
 */
export function exportTools(h: ExportToolHelpers): ToolSpec[] {
  const text = (description: string): Json => ({ type: 'string', minLength: 1, maxLength: 200, description });
  return [
    {
      name: 'export_rows', title: 'Rows of an export as NDJSON', group: 'read', scope: null,
      description: `Up to ${MAX_EXPORT_TOOL_ROWS} delivery attempts, events or log lines, oldest first, as NDJSON text (one JSON object per line), with the cursor of the rest (as GET /v1/tenants/{tenant_id}/exports/{kind}?format=ndjson). Needs read:deliveries, read:events or read:logs for the kind. Filters: deliveries take status, destination_id, event_type, from, to, response_code and q; events event_type, from and to; logs level, from and to. A next_cursor works only with the same kind and filters.`,
      input: {
        properties: {
          kind: { type: 'string', enum: ['deliveries', 'events', 'logs'] },
          status: { type: 'string', enum: [...DELIVERY_STATUSES] },
          destination_id: text('Only attempts to this destination.'),
          event_type: text('Only rows of events of this type.'),
          from: { type: 'string', format: 'date-time', description: 'Rows at or after this time (RFC 3339).' },
          to: { type: 'string', format: 'date-time', description: 'Rows before this time (RFC 3339).' },
          response_code: { type: 'string', pattern: '^[1-5]([0-9]{2}|xx|XX)$', description: 'An HTTP status (503) or class (5xx).' },
          q: text('Text in the response body start or the request body, ignoring case.'),
          level: { type: 'string', enum: [...LOG_LEVELS], description: 'Minimum level of log lines.' },
          limit: { type: 'integer', minimum: 1, maximum: MAX_EXPORT_TOOL_ROWS, description: 'Rows (default 100).' },
          cursor: { type: 'string', minLength: 1, description: 'The next_cursor of the previous call.' },
        },
        required: ['kind'],
      },
      output: 'ExportRows', annotations: { readOnlyHint: true },
      run: (d, c) => exportRows(h, d, c),
    },
  ];
}

async function exportRows(h: ExportToolHelpers, deps: ToolDeps, ctx: ToolContext): Promise<Json> {
  const { kind, ...rest } = ctx.args;
  const qs = new URLSearchParams({ format: 'ndjson', limit: String(rest.limit ?? 100) });
  for (const [k, v] of Object.entries(rest)) if (k !== 'limit' && v !== undefined && v !== null) qs.set(k, String(v));
  const answer = await deps.api.send({ method: 'GET', url: `${h.tenantPath(ctx, `/exports/${encodeURIComponent(String(kind))}`)}?${qs}`, headers: { authorization: ctx.authorization, accept: 'application/x-ndjson' } });
  if (answer.status !== 200) throw h.problem(answer.status, answer.body);
  // the probe parses an answer that is one JSON document: a page of one row comes back parsed
  const ndjson = typeof answer.body === 'string' ? answer.body : answer.body === undefined ? '' : `${JSON.stringify(answer.body)}\n`;
  const next = answer.headers['hookline-next-cursor'];
  return { kind, rows: ndjson.split('\n').filter((l) => l !== '').length, ndjson, next_cursor: typeof next === 'string' ? next : null };
}
