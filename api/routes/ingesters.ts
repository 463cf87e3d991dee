import { checkFanout } from '../../core/fanout';
import express, { type Response, type Router } from 'express';
import { AppError, notFound, unprocessable } from '../../core/errors';
import { parseFilters } from '../../core/filters';
import { checkQuota, DEFAULT_QUOTAS, type Quotas } from '../../core/quotas';
import { newId } from '../../core/ids';
import type { DeliveryFlow, Ingester, Provider } from '../../core/model';
import { checkProviderConfig } from '../../core/providers';
import type { ConfigStore } from '../../platform/config-store/config-store';
import { authOf, requireResource, requireScope } from '../auth';
import { configListHandler } from '../paging';
import { validateBody, type BodyCheck } from '../validation';

import { MASK, maskValue, SECRET_FIELDS } from '../../core/secrets/fields';

/** Config members whose values are secrets: masked in answers, looked for in TRUST-006's scan. */
export { SECRET_FIELDS };

/** Provider settings as the API shows them: every secret masked (`maskValue`). */
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
      out[k] = v.map((item, i) => {
        if (typeof item !== 'string' || !item.startsWith(MASK)) return item;
        // short secrets may share a mask: an array sent back as shown keeps each in its place
        const same = old[i];
        if (typeof same === 'string' && maskValue(same) === item) return same;
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
    ordered: i.ordered === true,
    delivery_flows: flows.filter((f) => f.ingester_id === i.id).map((f) => ({ id: f.id, name: f.name, destination_ids: f.destination_ids })),
    created_at: i.created_at,
    updated_at: i.updated_at,
  };
}

interface FlowInput {
  /** On an update, the ingester's flow this entry rewrites; unset, a new flow. */
  id: string | undefined;
  name: string;
  destinationIds: string[];
}

interface IngesterInput {
  name: string;
  provider: Provider;
  config: Record<string, unknown>;
  filters: unknown[];
  ordered: boolean;
  destinationIds: string[] | undefined;
  /** The ingester's delivery flows as they are to be, when `delivery_flows` was given. */
  flows: FlowInput[] | undefined;
}

/** A body the IngesterCreate or IngesterUpdate schema accepted; what a GET shows beside it is accepted and left as the service sets it. */
interface IngesterBody {
  name: string;
  provider?: Provider;
  config?: Record<string, unknown>;
  filters?: unknown[];
  ordered?: boolean;
  destination_ids?: string[];
  delivery_flows?: { id?: string; name?: string; destination_ids: string[] }[];
}

/**
 * `delivery_flows` as a GET shows it: `[{id?, name?, destination_ids}]`. On a create every entry
 * makes a new flow (an `id` is the shown one of another ingester, and ignored); on an update an
 * entry with the id of one of this ingester's flows rewrites it, one without makes a new flow,
 * and the ingester's flows left out are deleted.
 */
function readFlows(check: BodyCheck<IngesterBody>, store: ConfigStore, tenantId: string, ingesterName: string, previous?: Ingester): FlowInput[] | undefined {
  const entries = check.body.delivery_flows;
  if (entries === undefined) return undefined;
  if (check.body.destination_ids !== undefined) check.fail('delivery_flows', 'give destination_ids or delivery_flows, not both');
  if (!Array.isArray(entries)) return undefined;
  const flows: FlowInput[] = [];
  const seen = new Set<string>();
  for (const [i, e] of entries.entries()) {
    const at = `delivery_flows[${i}]`;
    let id: string | undefined;
    if (previous && check.usable(`${at}.id`) && e.id !== undefined) {
      const flow = store.get('flow', tenantId, e.id);
      if (!flow || flow.ingester_id !== previous.id) check.fail(`${at}.id`, 'is not a delivery flow of this ingester');
      else if (seen.has(e.id)) check.fail(`${at}.id`, 'appears twice');
      else id = e.id;
      seen.add(e.id);
    }
    if (!check.usable(`${at}.destination_ids`)) continue;
    for (const [j, d] of e.destination_ids.entries()) {
      if (!store.get('destination', tenantId, d)) check.fail(`${at}.destination_ids[${j}]`, `destination ${d} does not exist`);
    }
    // a flow rewritten without a name keeps its own
    const name = (check.usable(`${at}.name`) && e.name?.trim()) || (id && store.get('flow', tenantId, id)?.name) || `${ingesterName} ${i === 0 ? 'default' : i + 1}`;
    flows.push({ id, name, destinationIds: [...new Set(e.destination_ids)] });
  }
  return flows;
}

/** Reads a create (all fields) or an update (name required, the rest kept from `previous`). */
function readIngester(body: unknown, store: ConfigStore, res: Response, tenantId: string, previous?: Ingester): IngesterInput {
  const check = validateBody<IngesterBody>(previous ? 'updateIngester' : 'createIngester', body);
  const b = check.body;
  const provider = b.provider ?? previous?.provider;
  const config = b.config ? (previous ? unmaskConfig(b.config, previous.config) : b.config) : previous?.config ?? {};
  if (check.usable('destination_ids')) {
    for (const [i, id] of (b.destination_ids ?? []).entries()) {
      if (!store.get('destination', tenantId, id)) check.fail(`destination_ids[${i}]`, `destination ${id} does not exist`);
    }
  }
  const flows = readFlows(check, store, tenantId, check.usable('name') ? b.name.trim() : '', previous);
  const parsed = b.filters === undefined || !check.usable('filters') ? { filters: previous?.filters ?? [], errors: [], refused: [] } : parseFilters(b.filters);
  for (const e of parsed.errors) check.fail(e.field, e.message);
  if (provider && check.usable('provider') && check.usable('config')) for (const p of checkProviderConfig(provider, config)) check.fail(p.field, p.message);
  check.done();
  // well-formed, but a pattern the regex engine cannot run: 422 once nothing is malformed
  if (parsed.refused.length > 0) throw unprocessable(parsed.refused);
  for (const id of [...(b.destination_ids ?? []), ...(flows ?? []).flatMap((f) => f.destinationIds)]) requireResource(res, id);
  return { name: b.name.trim(), provider: provider!, config, filters: parsed.filters, ordered: b.ordered ?? (previous?.ordered === true), destinationIds: b.destination_ids ? [...new Set(b.destination_ids)] : undefined, flows };
}

export function ingestersRouter(store: ConfigStore, publicBaseUrl: string, maxFanout: number, quotas: Quotas = DEFAULT_QUOTAS): Router {
  const router = express.Router({ mergeParams: true });
  const view = (i: Ingester, tenantId: string) => ingesterView(i, store.list('flow', tenantId), publicBaseUrl);
  const find = (res: Response, id: string): Ingester => {
    const key = authOf(res);
    const i = store.get('ingester', key.tenant_id, id);
    if (!i) throw notFound(`ingester ${id}`);
    requireResource(res, i.id);
    return i;
  };

  router.get('/', requireScope('read:ingesters'), configListHandler(store, 'ingester', 'ingesters', view));

  router.post('/', requireScope('write:ingesters'), async (req, res) => {
    const key = authOf(res);
    const input = readIngester(req.body, store, res, key.tenant_id);
    const flows = input.flows ?? (input.destinationIds && input.destinationIds.length > 0 ? [{ id: undefined, name: `${input.name} default`, destinationIds: input.destinationIds }] : []);
    checkFanout([], '', undefined, flows.flatMap((f) => f.destinationIds), maxFanout);
    checkQuota(store, key.tenant_id, 'ingesters', quotas);
    if (flows.length > 0) checkQuota(store, key.tenant_id, 'delivery_flows', quotas, flows.length);
    const now = new Date().toISOString();
    const ingester: Ingester = { kind: 'ingester', id: newId('ingester'), tenant_id: key.tenant_id, name: input.name, provider: input.provider, config: input.config, filters: input.filters, ordered: input.ordered, created_at: now, updated_at: now };
    // the flows first: an event arriving the moment the ingester exists already has a route
    for (const f of flows) {
      await store.put({ kind: 'flow', id: newId('flow'), tenant_id: key.tenant_id, name: f.name, ingester_id: ingester.id, destination_ids: f.destinationIds, created_at: now, updated_at: now });
    }
    await store.put(ingester);
    res.status(201).location(`${req.baseUrl}/${ingester.id}`).json(view(ingester, key.tenant_id));
  });

  router.get('/:ingesterId', requireScope('read:ingesters'), (req, res) => {
    res.json(view(find(res, String(req.params.ingesterId)), authOf(res).tenant_id));
  });

  /**
   * Updates an ingester: `name` is required; provider, config, filters and ordered are replaced
   * when given; `destination_ids` replaces the destinations of its first delivery flow (creating
   * one if it has none).
   */
  router.put('/:ingesterId', requireScope('write:ingesters'), async (req, res) => {
    const key = authOf(res);
    const previous = find(res, String(req.params.ingesterId));
    const input = readIngester(req.body, store, res, key.tenant_id, previous);
    const now = new Date().toISOString();
    if (input.flows) {
      const current = store.list('flow', key.tenant_id).filter((f) => f.ingester_id === previous.id);
      checkFanout([], '', undefined, input.flows.flatMap((f) => f.destinationIds), maxFanout);
      const added = input.flows.filter((f) => !f.id).length;
      const removed = current.filter((c) => !input.flows!.some((f) => f.id === c.id));
      if (added > removed.length) checkQuota(store, key.tenant_id, 'delivery_flows', quotas, added - removed.length);
      for (const f of input.flows) {
        const old = f.id ? current.find((c) => c.id === f.id) : undefined;
        if (old) await store.put({ ...old, name: f.name, destination_ids: f.destinationIds, updated_at: now });
        else await store.put({ kind: 'flow', id: newId('flow'), tenant_id: key.tenant_id, name: f.name, ingester_id: previous.id, destination_ids: f.destinationIds, created_at: now, updated_at: now });
      }
      for (const c of removed) await store.remove('flow', key.tenant_id, c.id);
    } else if (input.destinationIds) {
      const [flow] = store.list('flow', key.tenant_id).filter((f) => f.ingester_id === previous.id);
      checkFanout(store.list('flow', key.tenant_id), previous.id, flow?.id, input.destinationIds, maxFanout);
      if (flow) await store.put({ ...flow, destination_ids: input.destinationIds, updated_at: now });
      else if (input.destinationIds.length > 0) {
        await store.put({ kind: 'flow', id: newId('flow'), tenant_id: key.tenant_id, name: `${input.name} default`, ingester_id: previous.id, destination_ids: input.destinationIds, created_at: now, updated_at: now });
      }
    }
    const next: Ingester = { ...previous, name: input.name, provider: input.provider, config: input.config, filters: input.filters, ordered: input.ordered, updated_at: now };
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
