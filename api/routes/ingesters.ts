import express, { type Router } from 'express';
import { AppError, notFound } from '../../core/errors';
import { newId } from '../../core/ids';
import type { DeliveryFlow, Ingester } from '../../core/model';
import { checkProviderConfig, SUPPORTED_PROVIDERS } from '../../core/providers';
import type { ConfigStore } from '../../platform/config-store/config-store';
import { authOf, requireResource, requireScope } from '../auth';
import { BodyChecker } from '../validation';
import { parseFilters } from '../../core/filters';

const SECRET_FIELDS = /secret|token|password|key/i;

/** Provider settings as the API shows them: every secret reduced to its last four characters. */
export function maskConfig(config: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(config)) {
    if (SECRET_FIELDS.test(k)) {
      const mask = (s: unknown) => (typeof s === 'string' ? `****${s.slice(-4)}` : '****');
      out[k] = Array.isArray(v) ? v.map(mask) : mask(v);
    } else out[k] = v;
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

export function ingestersRouter(store: ConfigStore, publicBaseUrl: string): Router {
  const router = express.Router({ mergeParams: true });

  router.get('/', requireScope('read:ingesters'), (_req, res) => {
    const key = authOf(res);
    const flows = store.list('flow', key.tenant_id);
    const all = store.list('ingester', key.tenant_id).filter((i) => !key.resource_ids || key.resource_ids.includes(i.id));
    res.json({ ingesters: all.map((i) => ingesterView(i, flows, publicBaseUrl)), next_cursor: null });
  });

  router.post('/', requireScope('write:ingesters'), async (req, res) => {
    const key = authOf(res);
    const check = new BodyChecker(req.body);
    const name = check.string('name', { required: true, max: 200 });
    const provider = check.oneOf('provider', SUPPORTED_PROVIDERS, { required: true });
    const config = check.object('config') ?? {};
    const destinationIds = check.stringArray('destination_ids') ?? [];
    const parsedFilters = parseFilters(req.body && typeof req.body === 'object' ? (req.body as Record<string, unknown>).filters : undefined);
    for (const e of parsedFilters.errors) check.fail(e.field, e.message);
    for (const [i, id] of destinationIds.entries()) {
      if (!store.get('destination', key.tenant_id, id)) check.fail(`destination_ids[${i}]`, `destination ${id} does not exist`);
    }
    if (provider) for (const p of checkProviderConfig(provider, config)) check.fail(p.field, p.message);
    check.done();
    for (const id of destinationIds) requireResource(res, id);
    const now = new Date().toISOString();
    const ingester: Ingester = {
      kind: 'ingester',
      id: newId('ingester'),
      tenant_id: key.tenant_id,
      name: name!.trim(),
      provider: provider!,
      config,
      filters: parsedFilters.filters,
      created_at: now,
      updated_at: now,
    };
    // the flow first: an event arriving the moment the ingester exists already has a route
    if (destinationIds.length > 0) {
      const flow: DeliveryFlow = {
        kind: 'flow',
        id: newId('flow'),
        tenant_id: key.tenant_id,
        name: `${ingester.name} default`,
        ingester_id: ingester.id,
        destination_ids: [...new Set(destinationIds)],
        created_at: now,
        updated_at: now,
      };
      await store.put(flow);
    }
    await store.put(ingester);
    res.status(201).location(`${req.baseUrl}/${ingester.id}`).json(ingesterView(ingester, store.list('flow', key.tenant_id), publicBaseUrl));
  });

  router.get('/:ingesterId', requireScope('read:ingesters'), (req, res) => {
    const key = authOf(res);
    const i = store.get('ingester', key.tenant_id, String(req.params.ingesterId));
    if (!i) throw notFound(`ingester ${String(req.params.ingesterId)}`);
    requireResource(res, i.id);
    res.json(ingesterView(i, store.list('flow', key.tenant_id), publicBaseUrl));
  });

  router.all('/', (_req, _res) => {
    throw new AppError('method-not-allowed', 'this method is not allowed here');
  });

  return router;
}
