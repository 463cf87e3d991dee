import type { ToolContext, ToolDeps, ToolSpec } from './tools';

type Json = Record<string, unknown>;

/** What the event type tools borrow from api/mcp/tools.ts: the REST call as the caller and the shared argument schemas. */
export interface ToolHelpers {
  rest(deps: ToolDeps, ctx: ToolContext, method: string, path: string, options?: { query?: Json; body?: Json }): Promise<Json>;
  tenantPath(ctx: ToolContext, rest: string): string;
  bodyOf(args: Json, ...drop: string[]): Json;
  deleteRun(collection: string, arg: string): ToolSpec['run'];
  id(what: string, pattern?: string): Json;
  idempotencyKey: Json;
  limit: Json;
  cursor: Json;
}

/** The tools of the event type catalogue, each through the REST route it mirrors. */
export function eventTypeTools(h: ToolHelpers): ToolSpec[] {
  const typeId = h.id('The event type (etp_...).');
  const at = (c: ToolContext) => h.tenantPath(c, `/event-types/${encodeURIComponent(String(c.args.event_type_id))}`);
  return [
    {
      name: 'list_event_types', title: 'Event types of the tenant', group: 'read', scope: 'read:event-types',
      description: 'The tenant\'s event type catalogue, oldest first, each with its description and payload schema (as GET /v1/tenants/{tenant_id}/event-types).',
      input: { properties: { limit: h.limit, cursor: h.cursor } }, output: 'EventTypeList', annotations: { readOnlyHint: true },
      run: (d, c) => h.rest(d, c, 'GET', h.tenantPath(c, '/event-types'), { query: { limit: c.args.limit, cursor: c.args.cursor } }),
    },
    {
      name: 'get_event_type', title: 'An event type', group: 'read', scope: 'read:event-types',
      description: 'One event type of the catalogue with its payload schema.',
      input: { properties: { event_type_id: typeId }, required: ['event_type_id'] }, output: 'EventType', annotations: { readOnlyHint: true },
      run: (d, c) => h.rest(d, c, 'GET', at(c)),
    },
    {
      name: 'create_event_type', title: 'Create an event type', group: 'write:event-types', scope: 'write:event-types',
      description: 'Adds an event type (a name such as invoice.paid, unique in the tenant) with an optional description and JSON Schema 2020-12 of its payload.',
      input: { body: 'EventTypeCreate', properties: { idempotency_key: h.idempotencyKey } }, output: 'EventType', annotations: { readOnlyHint: false, destructiveHint: false },
      run: (d, c) => h.rest(d, c, 'POST', h.tenantPath(c, '/event-types'), { body: h.bodyOf(c.args) }),
    },
    {
      name: 'update_event_type', title: 'Replace an event type\'s description and schema', group: 'write:event-types', scope: 'write:event-types',
      description: 'Replaces the description and schema of an event type (an absent one becomes null); the name cannot change.',
      input: { body: 'EventTypeReplace', properties: { event_type_id: typeId, idempotency_key: h.idempotencyKey }, required: ['event_type_id'] }, output: 'EventType', annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
      run: (d, c) => h.rest(d, c, 'PUT', at(c), { body: h.bodyOf(c.args, 'event_type_id') }),
    },
    {
      name: 'delete_event_type', title: 'Delete an event type', group: 'write:event-types', scope: 'write:event-types',
      description: 'Removes an event type from the catalogue; subscriptions naming it are left as they are.',
      input: { properties: { event_type_id: typeId, idempotency_key: h.idempotencyKey }, required: ['event_type_id'] }, output: 'Deleted', annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
      run: h.deleteRun('/event-types', 'event_type_id'),
    },
  ];
}
