import type { Query, Schema } from '../clients/typescript/src';
import { dataOf, tenantApi } from './api-client';
import { CliError } from './connect';

type Values = Record<string, string | string[] | boolean | undefined>;

/** The options of `analytics` and the query parameter each one sets. */
export const ANALYTICS_OPTIONS = { from: 'from', to: 'to', bucket: 'bucket', 'group-by': 'group_by', destination: 'destination_id', 'event-type': 'event_type' } as const;

export const ANALYTICS_USAGE = `  npm run cli -- analytics [--last 7d | --from <time> --to <time>] [--bucket minute|hour|day]
                 [--group-by destination|event_type|response_code|response_class|ingester] [--destination <id>] [--event-type <type>] [--json]
                 (delivery analytics as GET /v1/tenants/{tenant}/analytics: a table of the groups or the buckets with attempts,
                  then the top errors; --json prints the API's answer; --tenant or HOOKLINE_TENANT, key in HOOKLINE_API_KEY)`;

const LAST = /^([1-9][0-9]{0,4})([mhd])$/;
const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The query of `analytics`: each option given as its parameter; `--last 7d` sets `from` that far before now. */
export function analyticsQueryOf(values: Values, now = Date.now()): URLSearchParams {
  const query = new URLSearchParams();
  for (const [option, param] of Object.entries(ANALYTICS_OPTIONS)) {
    const v = values[option];
    if (v === undefined) continue;
    if (typeof v !== 'string') throw new CliError(`--${option} takes one value`);
    if (v !== '') query.set(param, v);
  }
  const last = values.last;
  if (last !== undefined) {
    const m = typeof last === 'string' ? LAST.exec(last) : null;
    if (!m) throw new CliError('--last takes a count of minutes, hours or days, like 90m, 6h or 7d');
    if (query.has('from') || query.has('to')) throw new CliError('--last stands for --from and --to: give one or the other');
    query.set('from', new Date(now - Number(m[1]) * UNIT_MS[m[2]!]!).toISOString());
    query.set('to', new Date(now).toISOString());
  }
  return query;
}

type Figures = Schema<'AnalyticsFigures'>;
type Answer = Schema<'DeliveryAnalytics'>;

const HEADER = ['attempts', 'delivered', 'retrying', 'failed', 'dropped', 'success', 'att/dlv', 'p50 ms', 'p95 ms', 'p99 ms', 'e2e p50', 'e2e p95', 'e2e p99'];
const dash = (v: number | null) => (v === null ? '-' : String(v));

function cells(f: Figures): string[] {
  return [
    String(f.attempts), String(f.delivered), String(f.retrying), String(f.failed), String(f.dropped),
    f.success_rate === null ? '-' : `${(f.success_rate * 100).toFixed(1)}%`,
    f.attempts_per_delivered === null ? '-' : f.attempts_per_delivered.toFixed(2),
    dash(f.attempt_latency_ms.p50), dash(f.attempt_latency_ms.p95), dash(f.attempt_latency_ms.p99),
    dash(f.end_to_end_latency_ms.p50), dash(f.end_to_end_latency_ms.p95), dash(f.end_to_end_latency_ms.p99),
  ];
}

/** Columns padded to their widest cell: the first left-aligned, the figures right-aligned. */
function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ').trimEnd()).join('\n');
}

/**
 * The answer as text: one row per group (grouped) or per bucket that has attempts, then the
 * totals, then the top errors.
 */
export function analyticsTable(a: Answer): string {
  const first = a.group_by ?? `${a.bucket} (UTC)`;
  const rows = [[first, ...HEADER]];
  if (a.groups) for (const g of a.groups) rows.push([g.other ? `(other ${(a.groups_total ?? 0) - (a.groups.length - 1)})` : (g.key ?? '(none)'), ...cells(g.totals)]);
  else for (const b of a.buckets) if (b.attempts > 0) rows.push([b.start, ...cells(b)]);
  rows.push(['total', ...cells(a.totals)]);
  const errors = a.top_errors.length === 0 ? 'no errors' : `top errors:\n${a.top_errors.map((e) => `  ${String(e.attempts).padStart(8)}  ${e.message}`).join('\n')}`;
  return `${a.from} to ${a.to}\n${table(rows)}\n${errors}\n`;
}

/**
 * `analytics`: GET /v1/tenants/{tenant}/analytics with the given range, bucket, grouping and
 * filters; the API judges each value and refuses a wrong one in its own words.
 */
export async function analyticsCommand(values: Values): Promise<string> {
  const { client, tenant_id } = tenantApi(values, 'analytics');
  const query = Object.fromEntries(analyticsQueryOf(values)) as Query<'getDeliveryAnalytics'>;
  const body = await dataOf(client.GET('/v1/tenants/{tenant_id}/analytics', { params: { path: { tenant_id }, query } }));
  return values.json ? `${JSON.stringify(body)}\n` : analyticsTable(body);
}
