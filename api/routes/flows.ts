import { checkFanout } from '../../core/fanout';
import express, { type Response, type Router } from 'express';
import { notFound } from '../../core/errors';
import { checkQuota, DEFAULT_QUOTAS, type Quotas } from '../../core/quotas';
import { newId } from '../../core/ids';
import type { DeliveryFlow } from '../../core/model';
import type { ConfigStore } from '../../platform/config-store/config-store';
import { authOf, requireResource, requireScope } from '../auth';
import { configListHandler } from '../paging';
import { validateBody } from '../validation';

export function flowView(f: DeliveryFlow) {
  return { id: f.id, name: f.name, ingester_id: f.ingester_id, destination_ids: f.destination_ids, created_at: f.created_at, updated_at: f.updated_at };
}

/** A body the DeliveryFlowCreate or DeliveryFlowUpdate schema accepted (an update may leave out the destinations). */
interface FlowBody {
  name: string;
  ingester_id: string;
  destination_ids?: string[];
}

/** Delivery flows: an ingester's events fan out to each destination of each of its flows. */
export function flowsRouter(store: ConfigStore, maxFanout: number, quotas: Quotas = DEFAULT_QUOTAS): Router {
  const router = express.Router({ mergeParams: true });
  const find = (res: Response, id: string): DeliveryFlow => {
    const f = store.get('flow', authOf(res).tenant_id, id);
    if (!f) throw notFound(`delivery flow ${id}`);
    requireResource(res, f.id);
    return f;
  };
  const read = (body: unknown, res: Response, previous?: DeliveryFlow) => {
    const tenantId = authOf(res).tenant_id;
    const check = validateBody<FlowBody>(previous ? 'updateDeliveryFlow' : 'createDeliveryFlow', body);
    const b = check.body;
    const ingesterId = previous ? previous.ingester_id : b.ingester_id;
    // what a GET shows is accepted back, but a flow belongs to its ingester
    if (previous && check.usable('ingester_id') && b.ingester_id !== undefined && b.ingester_id !== previous.ingester_id) check.fail('ingester_id', 'cannot change: a delivery flow belongs to its ingester');
    if (!previous && check.usable('ingester_id') && !store.get('ingester', tenantId, ingesterId)) check.fail('ingester_id', `ingester ${ingesterId} does not exist`);
    const destinationIds = check.usable('destination_ids') ? (b.destination_ids ?? previous!.destination_ids) : [];
    for (const [i, id] of destinationIds.entries()) {
      if (!store.get('destination', tenantId, id)) check.fail(`destination_ids[${i}]`, `destination ${id} does not exist`);
    }
    check.done();
    for (const id of [ingesterId, ...destinationIds]) requireResource(res, id);
    checkFanout(store.list('flow', tenantId), ingesterId, previous?.id, destinationIds, maxFanout);
    return { name: b.name.trim(), ingesterId, destinationIds: [...new Set(destinationIds)] };
  };

  router.get('/', requireScope('read:flows'), configListHandler(store, 'flow', 'delivery_flows', flowView));

  router.post('/', requireScope('write:flows'), async (req, res) => {
    const input = read(req.body, res);
    checkQuota(store, authOf(res).tenant_id, 'delivery_flows', quotas);
    const now = new Date().toISOString();
    const flow: DeliveryFlow = { kind: 'flow', id: newId('flow'), tenant_id: authOf(res).tenant_id, name: input.name, ingester_id: input.ingesterId, destination_ids: input.destinationIds, created_at: now, updated_at: now };
    await store.put(flow);
    res.status(201).location(`${req.baseUrl}/${flow.id}`).json(flowView(flow));
  });

  router.get('/:flowId', requireScope('read:flows'), (req, res) => {
    res.json(flowView(find(res, String(req.params.flowId))));
  });

  router.put('/:flowId', requireScope('write:flows'), async (req, res) => {
    const previous = find(res, String(req.params.flowId));
    const input = read(req.body, res, previous);
    const next: DeliveryFlow = { ...previous, name: input.name, destination_ids: input.destinationIds, updated_at: new Date().toISOString() };
    await store.put(next);
    res.json(flowView(next));
  });

  router.delete('/:flowId', requireScope('write:flows'), async (req, res) => {
    const f = find(res, String(req.params.flowId));
    await store.remove('flow', f.tenant_id, f.id);
    res.status(204).end();
  });

  return router;
}
