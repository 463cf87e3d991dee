import express, { type Router } from 'express';
import { AppError, notFound, unprocessable } from '../../core/errors';
import { exampleOf, schemaProblems } from '../../core/event-type-schema';
import { newId } from '../../core/ids';
import type { EventType } from '../../core/model';
import { checkQuota, DEFAULT_QUOTAS, type Quotas } from '../../core/quotas';
import type { ConfigStore } from '../../platform/config-store/config-store';
import { authOf, requireResource, requireScope } from '../auth';
import { configListHandler } from '../paging';
import type { NameClaims } from '../ports';
import { validateBody, type BodyCheck } from '../validation';

/**
 * The tenant's catalogue of event types: the names its events carry (what destinations subscribe
 * to), each with a description and the JSON Schema of its payload. A name is fixed once created:
 * subscriptions name types by name, and a rename would silently change what they receive.
 */

export function eventTypeView(t: EventType) {
  return { id: t.id, name: t.name, description: t.description, schema: t.schema, example: t.schema ? exampleOf(t.schema) : null, created_at: t.created_at, updated_at: t.updated_at };
}

interface EventTypeBody {
  name: string;
  description?: string | null;
  schema?: Record<string, unknown> | null;
}

const CLAIM_KIND = 'event-type-name';

/** What the body schema cannot say of a payload schema: that it compiles, stays small and refers to nothing outside. */
function checkSchema(check: BodyCheck<Partial<EventTypeBody>>): FieldProblems {
  const schema = check.body.schema;
  if (schema === undefined || schema === null || !check.usable('schema')) return [];
  return schemaProblems(schema);
}
type FieldProblems = ReturnType<typeof schemaProblems>;

export function eventTypesRouter(store: ConfigStore, claims: NameClaims, quotas: Quotas = DEFAULT_QUOTAS): Router {
  const router = express.Router({ mergeParams: true });

  router.get('/', requireScope('read:event-types'), configListHandler(store, 'event_type', 'event_types', eventTypeView));

  router.post('/', requireScope('write:event-types'), async (req, res) => {
    const key = authOf(res);
    const check = validateBody<EventTypeBody>('createEventType', req.body);
    check.done();
    const refused = checkSchema(check);
    if (refused.length > 0) throw unprocessable(refused);
    checkQuota(store, key.tenant_id, 'event_types', quotas);
    const { name, description, schema } = check.body;
    const id = newId('eventType');
    const claimed = await claims.claim(key.tenant_id, CLAIM_KIND, name, id, (owner) => store.get('event_type', key.tenant_id, owner) !== undefined);
    if (!claimed) throw new AppError('conflict', `an event type named "${name}" already exists`);
    const now = new Date().toISOString();
    const eventType: EventType = { kind: 'event_type', id, tenant_id: key.tenant_id, name, description: description ?? null, schema: schema ?? null, created_at: now, updated_at: now };
    await store.put(eventType);
    res.status(201).location(`${req.baseUrl}/${id}`).json(eventTypeView(eventType));
  });

  router.get('/:eventTypeId', requireScope('read:event-types'), (req, res) => {
    const t = store.get('event_type', authOf(res).tenant_id, String(req.params.eventTypeId));
    if (!t) throw notFound(`event type ${String(req.params.eventTypeId)}`);
    requireResource(res, t.id);
    res.json(eventTypeView(t));
  });

  /** Replaces description and schema (absent ones become null); the name may be sent back unchanged, not changed. */
  router.put('/:eventTypeId', requireScope('write:event-types'), async (req, res) => {
    const key = authOf(res);
    const t = store.get('event_type', key.tenant_id, String(req.params.eventTypeId));
    if (!t) throw notFound(`event type ${String(req.params.eventTypeId)}`);
    requireResource(res, t.id);
    const check = validateBody<Partial<EventTypeBody>>('replaceEventType', req.body);
    check.done();
    const refused = checkSchema(check);
    if (check.body.name !== undefined && check.body.name !== t.name) refused.unshift({ field: 'name', message: `cannot be changed (it is "${t.name}"): subscriptions name event types by name; create a new event type instead` });
    if (refused.length > 0) throw unprocessable(refused);
    const replaced: EventType = { ...t, description: check.body.description ?? null, schema: check.body.schema ?? null, updated_at: new Date().toISOString() };
    await store.put(replaced);
    res.json(eventTypeView(replaced));
  });

  router.delete('/:eventTypeId', requireScope('write:event-types'), async (req, res) => {
    const key = authOf(res);
    const t = store.get('event_type', key.tenant_id, String(req.params.eventTypeId));
    if (!t) throw notFound(`event type ${String(req.params.eventTypeId)}`);
    requireResource(res, t.id);
    await store.remove('event_type', key.tenant_id, t.id);
    await claims.release(key.tenant_id, CLAIM_KIND, t.name, t.id);
    res.status(204).end();
  });

  return router;
}
