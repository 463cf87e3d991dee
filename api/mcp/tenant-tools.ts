import type { ToolContext, ToolDeps, ToolSpec } from './tools';

type Json = Record<string, unknown>;

/** What these tools borrow from api/mcp/tools.ts: the REST call as the caller and the shared argument schemas. */
export interface TenantToolHelpers {
  rest(deps: ToolDeps, ctx: ToolContext, method: string, path: string, options?: { query?: Json; body?: Json }): Promise<Json>;
  tenantPath(ctx: ToolContext, rest: string): string;
  bodyOf(args: Json, ...drop: string[]): Json;
  id(what: string, pattern?: string): Json;
  idempotencyKey: Json;
  limit: Json;
  cursor: Json;
}

const enc = encodeURIComponent;
const tenantId: Json = { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]{0,62}$', description: 'The tenant.' };

/**
 * Tenants (operator keys only), portal sessions (the tenant's keys, or an operator's on its
 * behalf) and test events, each through the REST route it mirrors. A tenant's key does not see
 * the operators' tools; an operator key does not see the tenants' own.
 */
export function tenantTools(h: TenantToolHelpers): ToolSpec[] {
  /** The tenant a portal tool acts on: `tenant_id` (an operator's call), else the caller's own. */
  const sessions = (c: ToolContext, rest = '') => `/v1/tenants/${enc(typeof c.args.tenant_id === 'string' ? c.args.tenant_id : c.key.tenant_id)}/portal-sessions${rest}`;
  const forTenant: Json = { ...tenantId, description: 'The tenant (an operator key names it; a tenant key may leave it out: its own).' };
  return [
    {
      name: 'list_tenants', title: 'Tenants of the deployment', group: 'read', scope: null, audience: 'operator',
      description: 'Every tenant with its state, limits and portal settings (as GET /v1/tenants). Operator keys only.',
      input: { properties: { limit: h.limit, cursor: h.cursor } }, output: 'TenantList', annotations: { readOnlyHint: true },
      run: (d, c) => h.rest(d, c, 'GET', '/v1/tenants', { query: { limit: c.args.limit, cursor: c.args.cursor } }),
    },
    {
      name: 'get_tenant', title: 'A tenant', group: 'read', scope: null, audience: 'operator',
      description: 'One tenant with every limit (null where the deployment\'s setting applies). Operator keys only.',
      input: { properties: { tenant_id: tenantId }, required: ['tenant_id'] }, output: 'Tenant', annotations: { readOnlyHint: true },
      run: (d, c) => h.rest(d, c, 'GET', `/v1/tenants/${enc(String(c.args.tenant_id))}`),
    },
    {
      name: 'create_tenant', title: 'Create a tenant', group: 'operator', scope: null, audience: 'operator',
      description: 'Creates a tenant with its name, metadata, limits of its own and portal branding. Operator keys only.',
      input: { body: 'TenantCreate', properties: { idempotency_key: h.idempotencyKey } }, output: 'Tenant', annotations: { readOnlyHint: false, destructiveHint: false },
      run: (d, c) => h.rest(d, c, 'POST', '/v1/tenants', { body: h.bodyOf(c.args) }),
    },
    {
      name: 'update_tenant', title: 'Change, suspend or resume a tenant', group: 'operator', scope: null, audience: 'operator',
      description: 'Changes the members given: `state` suspended (its Hook URLs answer 403, its deliveries are held) or active (held deliveries go out), name, metadata, limits, portal. Operator keys only.',
      input: { body: 'TenantUpdate', properties: { tenant_id: tenantId, idempotency_key: h.idempotencyKey }, required: ['tenant_id'] }, output: 'Tenant', annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
      run: (d, c) => h.rest(d, c, 'PATCH', `/v1/tenants/${enc(String(c.args.tenant_id))}`, { body: h.bodyOf(c.args, 'tenant_id') }),
    },
    {
      name: 'delete_tenant', title: 'Erase a tenant', group: 'operator', scope: null, audience: 'operator',
      description: 'Erases the tenant for good (as DELETE /v1/tenants/{id}): its config entities with its data keys and secrets, its Redis keys and its ClickHouse rows; the evidence log keeps its hashes, and its id cannot be created again. Takes seconds. Operator keys only.',
      input: { properties: { tenant_id: tenantId, idempotency_key: h.idempotencyKey }, required: ['tenant_id'] }, output: 'Deleted', annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
      run: async (d, c) => {
        await h.rest(d, c, 'DELETE', `/v1/tenants/${enc(String(c.args.tenant_id))}`);
        return { deleted: true, id: String(c.args.tenant_id) };
      },
    },
    {
      name: 'create_portal_session', title: 'Make a portal link', group: 'write:portal-sessions', scope: 'write:portal-sessions', audience: 'both',
      description: 'Makes a one-time link that opens the portal (/ui) signed in for the tenant, with the scopes and destinations given; the link is in this answer only.',
      input: { body: 'PortalSessionCreate', properties: { tenant_id: forTenant, idempotency_key: h.idempotencyKey } }, output: 'PortalSessionCreated', annotations: { readOnlyHint: false, destructiveHint: false },
      run: (d, c) => h.rest(d, c, 'POST', sessions(c), { body: h.bodyOf(c.args, 'tenant_id') }),
    },
    {
      name: 'list_portal_sessions', title: 'Live portal sessions', group: 'read', scope: 'read:portal-sessions', audience: 'both',
      description: 'The tenant\'s live portal sessions (never their link or cookie).',
      input: { properties: { tenant_id: forTenant } }, output: 'PortalSessionList', annotations: { readOnlyHint: true },
      run: (d, c) => h.rest(d, c, 'GET', sessions(c)),
    },
    {
      name: 'revoke_portal_session', title: 'Revoke a portal session', group: 'write:portal-sessions', scope: 'write:portal-sessions', audience: 'both',
      description: 'Ends a portal session at once: its link no longer opens and its browser is signed out at its next request.',
      input: { properties: { tenant_id: forTenant, portal_session_id: h.id('The session (pss_...).'), idempotency_key: h.idempotencyKey }, required: ['portal_session_id'] }, output: 'Deleted', annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
      run: async (d, c) => {
        await h.rest(d, c, 'DELETE', sessions(c, `/${enc(String(c.args.portal_session_id))}`));
        return { deleted: true, id: String(c.args.portal_session_id) };
      },
    },
    {
      name: 'send_test_event', title: 'Send a test event to a destination', group: 'write:events', scope: 'write:events',
      description: 'Sends one event to this destination only: a payload given, a saved payload, or an event type\'s example; its delivery is attempted, recorded and proved like any other.',
      input: { body: 'TestEventSend', properties: { destination_id: h.id('The destination (dst_...).'), idempotency_key: h.idempotencyKey }, required: ['destination_id'] }, output: 'TestEventQueued', annotations: { readOnlyHint: false, destructiveHint: false },
      run: (d, c) => h.rest(d, c, 'POST', h.tenantPath(c, `/destinations/${enc(String(c.args.destination_id))}/test-events`), { body: h.bodyOf(c.args, 'destination_id') }),
    },
  ];
}
