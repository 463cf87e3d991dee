import type { ToolContext, ToolDeps, ToolSpec } from './tools';

type Json = Record<string, unknown>;

/** What these tools borrow from api/mcp/tools.ts: the REST call as the caller and the id schema. */
export interface DashboardToolHelpers {
  rest(deps: ToolDeps, ctx: ToolContext, method: string, path: string, options?: { query?: Json }): Promise<Json>;
  tenantPath(ctx: ToolContext, rest: string): string;
  id(what: string, pattern?: string): Json;
}

/** The tenant's stats, a received event and the caller's identity, each through the REST route it mirrors. */
export function dashboardTools(h: DashboardToolHelpers): ToolSpec[] {
  return [
    {
      name: 'get_tenant_stats', title: 'Throughput, errors, lag and breakers', group: 'read', scope: 'read:stats',
      description: 'The tenant\'s delivery attempts over a window (default 1h, 5m to 24h) per bucket by outcome with totals and error rate, the pipeline\'s consumer lag per stage and the circuit breaker of each destination (as GET /v1/tenants/{tenant_id}/stats).',
      input: { properties: { window: { type: 'string', pattern: '^[1-9][0-9]{0,4}[mh]$', description: 'How far back: 15m, 1h, 24h (5m to 24h).' } } }, output: 'TenantStats', annotations: { readOnlyHint: true },
      run: (d, c) => h.rest(d, c, 'GET', h.tenantPath(c, '/stats'), { query: { window: c.args.window } }),
    },
    {
      name: 'get_event', title: 'A received event', group: 'read', scope: 'read:events',
      description: 'An event as its Hook URL received it: ingester, correlation id, type, content type and (up to 64 KiB of) the body its deliveries send (as GET /v1/tenants/{tenant_id}/events/{event_id}).',
      input: { properties: { event_id: h.id('The event (evt_...).') }, required: ['event_id'] }, output: 'ReceivedEvent', annotations: { readOnlyHint: true },
      run: (d, c) => h.rest(d, c, 'GET', h.tenantPath(c, `/events/${encodeURIComponent(String(c.args.event_id))}`)),
    },
    {
      name: 'get_identity', title: 'The calling key', group: 'read', scope: null,
      description: 'The API key this session uses: its tenant, scopes, resource limits and expiry (as GET /v1/me).',
      input: {}, output: 'KeyIdentity', annotations: { readOnlyHint: true },
      run: (d, c) => h.rest(d, c, 'GET', '/v1/me'),
    },
  ];
}
