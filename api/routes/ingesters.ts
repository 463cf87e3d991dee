import express, { type Response, type Router } from 'express';
import { AppError, notFound } from '../../core/errors';
import { parseFilters } from '../../core/filters';
import { newId } from '../../core/ids';
import type { DeliveryFlow, Ingester, Provider } from '../../core/model';
import { checkProviderConfig, SUPPORTED_PROVIDERS } from '../../core/providers';
import type { ConfigStore } from '../../platform/config-store/config-store';
import { authOf, requireResource, requireScope } from '../auth';
import { pageOf } from '../paging';
import { BodyChecker } from '../validation';

/** Config members whose values are secrets: masked in answers, looked for in TRUST-006's scan. */
export const SECRET_FIELDS = /secret|token|password|key/i;
const MASK = '****';

function maskValue(v: unknown): unknown {
  return typeof v === 'string' ? `${MASK}${v.slice(-4)}` : MASK;
}

/** Provider settings as the API shows them: every secret reduced to its last four characters. */
export function maskConfig(config: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(config)) out[k] = SECRET_FIELDS.test(k) ? (Array.isArray(v) ? v.map(maskValue) : maskValue(v)) : v;
  return out;
}

/**
 * A config sent back as it was shown keeps its secrets: a masked value equal to the mask of
 * the stored one stands for the stored one, so GET-then-PUT never overwrites a secret with stars.
 */
export function unmaskConfig(next: Record<string, unknown>, previous: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...next };
  for (const [k, v] of Object.entries(next)) {
    if (!SECRET_FIELDS.test(k)) continue;
    const old = previous[k];
    if (typeof v === 'string' && v.startsWith(MASK) && typeof old === 'string' && maskValue(old) === v) out[k] = old;
    if (Array.isArray(v) && Array.isArray(old)) {
      out[k] = v.map((item) => {
        if (typeof item !== 'string' || !item.startsWith(MASK)) return item;
        return old.find((o) => typeof o === 'string' && maskValue(o) === item) ?? item;
      });
    }
  }
  return out;
}

export function ingesterView(i: Ingester, flows: DeliveryFlow[], publicBaseUrl: string) {
  return {
    id: i.id,
    name: i.name,
    provider: i.provider,
    config: maskConfig(i.config),
    hook_url: `${publicBaseUrl}/v1/hooks/${i.id}`,
    filters: i.filters,
    delivery_flows: flows.filter((f) => f.ingester_id === i.id).map((f) => ({ id: f.id, name: f.name, destination_ids: f.destination_ids })),
    created_at: i.created_at,
    updated_at: i.updated_at,
  };
}

interface IngesterInput {
  name: string;
  provider: Provider;
  config: Record<string, unknown>;
  filters: unknown[];
  destinationIds: string[] | undefined;
}

/** Reads a create (all fields) or an update (name required, the rest kept from `previous`). */
function readIngester(body: unknown, store: ConfigStore, res: Response, tenantId: string, previous?: Ingester): IngesterInput {
  const check = new BodyChecker(body);
  const name = check.string('name', { required: true, max: 200 });
  const provider = check.oneOf('provider', SUPPORTED_PROVIDERS, { required: !previous }) ?? previous?.provider;
  const given = check.object('config');
  const config = given ? (previous ? unmaskConfig(given, previous.config) : given) : previous?.config ?? {};
  const destinationIds = check.stringArray('destination_ids');
  for (const [i, id] of (destinationIds ?? []).entries()) {
    if (!store.get('destination', tenantId, id)) check.fail(`destination_ids[${i}]`, `destination ${id} does not exist`);
  }
  const rawFilters = check.body.filters;
  const parsed = rawFilters === undefined ? { filters: previous?.filters ?? [], errors: [] } : parseFilters(rawFilters);
  for (const e of parsed.errors) check.fail(e.field, e.message);
  if (provider) for (const p of checkProviderConfig(provider, config)) check.fail(p.field, p.message);
  check.done();
  for (const id of destinationIds ?? []) requireResource(res, id);
  return { name: name!.trim(), provider: provider!, config, filters: parsed.filters, destinationIds: destinationIds ? [...new Set(destinationIds)] : undefined };
}

export function ingestersRouter(store: ConfigStore, publicBaseUrl: string): Router {
  const router = express.Router({ mergeParams: true });
  const view = (i: Ingester, tenantId: string) => ingesterView(i, store.list('flow', tenantId), publicBaseUrl);
  const find = (res: Response, id: string): Ingester => {
    const key = authOf(res);
    const i = store.get('ingester', key.tenant_id, id);
    if (!i) throw notFound(`ingester ${id}`);
    requireResource(res, i.id);
    return i;
  };

  router.get('/', requireScope('read:ingesters'), (req, res) => {
    const key = authOf(res);
    const all = store.list('ingester', key.tenant_id).filter((i) => !key.resource_ids || key.resource_ids.includes(i.id));
    const { page, next_cursor } = pageOf(all, req.query);
    res.json({ ingesters: page.map((i) => view(i, key.tenant_id)), next_cursor });
  });

  router.post('/', requireScope('write:ingesters'), async (req, res) => {
    const key = authOf(res);
    const input = readIngester(req.body, store, res, key.tenant_id);
    const now = new Date().toISOString();
    const ingester: Ingester = { kind: 'ingester', id: newId('ingester'), tenant_id: key.tenant_id, name: input.name, provider: input.provider, config: input.config, filters: input.filters, created_at: now, updated_at: now };
    // the flow first: an event arriving the moment the ingester exists already has a route
    if (input.destinationIds && input.destinationIds.length > 0) {
      await store.put({ kind: 'flow', id: newId('flow'), tenant_id: key.tenant_id, name: `${ingester.name} default`, ingester_id: ingester.id, destination_ids: input.destinationIds, created_at: now, updated_at: now });
    }
    await store.put(ingester);
    res.status(201).location(`${req.baseUrl}/${ingester.id}`).json(view(ingester, key.tenant_id));
  });

  router.get('/:ingesterId', requireScope('read:ingesters'), (req, res) => {
    res.json(view(find(res, String(req.params.ingesterId)), authOf(res).tenant_id));
  });

  /**
   * Updates an ingester: `name` is required; provider, config, filters are replaced when
   * given; `destination_ids` replaces the destinations of its first delivery flow (creating
   * one if it has none).
   */
  router.put('/:ingesterId', requireScope('write:ingesters'), async (req, res) => {
    const key = authOf(res);
    const previous = find(res, String(req.params.ingesterId));
    const input = readIngester(req.body, store, res, key.tenant_id, previous);
    const now = new Date().toISOString();
    if (input.destinationIds) {
      const [flow] = store.list('flow', key.tenant_id).filter((f) => f.ingester_id === previous.id);
      if (flow) await store.put({ ...flow, destination_ids: input.destinationIds, updated_at: now });
      else if (input.destinationIds.length > 0) {
        await store.put({ kind: 'flow', id: newId('flow'), tenant_id: key.tenant_id, name: `${input.name} default`, ingester_id: previous.id, destination_ids: input.destinationIds, created_at: now, updated_at: now });
      }
    }
    const next: Ingester = { ...previous, name: input.name, provider: input.provider, config: input.config, filters: input.filters, updated_at: now };
    await store.put(next);
    res.json(view(next, key.tenant_id));
  });

  /** Deletes the ingester and its delivery flows; its Hook URL answers 404 from then on. */
  router.delete('/:ingesterId', requireScope('write:ingesters'), async (req, res) => {
    const key = authOf(res);
    const i = find(res, String(req.params.ingesterId));
    for (const flow of store.list('flow', key.tenant_id).filter((f) => f.ingester_id === i.id)) await store.remove('flow', key.tenant_id, flow.id);
    await store.remove('ingester', key.tenant_id, i.id);
    res.status(204).end();
  });

  router.all('/', (_req, res) => {
    res.setHeader('allow', 'GET, POST');
    throw new AppError('method-not-allowed', 'this method is not allowed here');
  });

  return router;
}
