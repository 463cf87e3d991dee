import { ANALYTICS_BUCKETS, ANALYTICS_GROUP_BY } from '../../platform/clickhouse/analytics';
import { MAX_SEARCH_TEXT } from '../routes/deliveries-query';
import type { ToolContext, ToolDeps, ToolSpec } from './tools';

type Json = Record<string, unknown>;

/** What these tools borrow from api/mcp/tools.ts: the REST call as the caller. */
export interface AnalyticsToolHelpers {
  rest(deps: ToolDeps, ctx: ToolContext, method: string, path: string, options?: { query?: Json }): Promise<Json>;
  tenantPath(ctx: ToolContext, rest: string): string;
}

/** The tenant's delivery analytics, through the REST route it mirrors. */
export function analyticsTools(h: AnalyticsToolHelpers): ToolSpec[] {
  const text = (description: string): Json => ({ type: 'string', minLength: 1, maxLength: MAX_SEARCH_TEXT, description });
  return [
    {
      name: 'get_analytics', title: 'Delivery analytics over a range', group: 'read', scope: 'read:stats',
      description: 'The tenant\'s delivery attempts over a range (default the last 24 h, at most 90 days) per minute, hour or day bucket (at most 1,500) and optionally per destination, event type, HTTP status, status class or ingester (50 biggest groups, the rest as `other`): attempts by outcome, success rate, attempts per delivered event, attempt and end-to-end latency p50/p95/p99, and the 10 most frequent errors (as GET /v1/tenants/{tenant_id}/analytics).',
      input: {
        properties: {
          from: { type: 'string', format: 'date-time', description: 'Start of the range (RFC 3339; default 24 h before `to`).' },
          to: { type: 'string', format: 'date-time', description: 'End of the range (RFC 3339; default now).' },
          bucket: { type: 'string', enum: [...ANALYTICS_BUCKETS], description: 'Bucket width (default hour, or day past 1,500 hours).' },
          group_by: { type: 'string', enum: [...ANALYTICS_GROUP_BY], description: 'Figures per group besides the totals.' },
          destination_id: text('Only attempts to this destination.'),
          event_type: text('Only attempts of events of this type.'),
        },
      },
      output: 'DeliveryAnalytics', annotations: { readOnlyHint: true },
      run: (d, c) => h.rest(d, c, 'GET', h.tenantPath(c, '/analytics'), { query: { from: c.args.from, to: c.args.to, bucket: c.args.bucket, group_by: c.args.group_by, destination_id: c.args.destination_id, event_type: c.args.event_type } }),
    },
  ];
}
