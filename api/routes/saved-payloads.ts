import express, { type Router } from 'express';
import { AppError, notFound } from '../../core/errors';
import { newId } from '../../core/ids';
import { checkQuota, DEFAULT_QUOTAS, type Quotas } from '../../core/quotas';
import type { SavedPayload } from '../../core/model';
import type { ConfigStore } from '../../platform/config-store/config-store';
import { authOf, requireResource, requireScope } from '../auth';
import { configListHandler } from '../paging';
import { validateBody } from '../validation';

/** Largest saved payload, as JSON text. */
export const MAX_PAYLOAD_BYTES = 256 * 1024;

export function payloadView(p: SavedPayload) {
  return { id: p.id, name: p.name, payload: p.payload, created_at: p.created_at };
}

export function savedPayloadsRouter(store: ConfigStore, quotas: Quotas = DEFAULT_QUOTAS): Router {
  const router = express.Router({ mergeParams: true });

  router.get('/', requireScope('read:payloads'), configListHandler(store, 'saved_payload', 'saved_payloads', payloadView));

  router.post('/', requireScope('write:payloads'), async (req, res) => {
    const key = authOf(res);
    const check = validateBody<{ name: string; payload: Record<string, unknown> }>('createSavedPayload', req.body);
    check.done();
    const { name, payload } = check.body;
    if (Buffer.byteLength(JSON.stringify(payload)) > MAX_PAYLOAD_BYTES) {
      throw new AppError('payload-too-large', `a saved payload may be at most ${MAX_PAYLOAD_BYTES} bytes of JSON`);
    }
    checkQuota(store, key.tenant_id, 'saved_payloads', quotas);
    const saved: SavedPayload = { kind: 'saved_payload', id: newId('savedPayload'), tenant_id: key.tenant_id, name: name.trim(), payload, created_at: new Date().toISOString() };
    await store.put(saved);
    res.status(201).location(`${req.baseUrl}/${saved.id}`).json(payloadView(saved));
  });

  router.get('/:payloadId', requireScope('read:payloads'), (req, res) => {
    const p = store.get('saved_payload', authOf(res).tenant_id, String(req.params.payloadId));
    if (!p) throw notFound(`saved payload ${String(req.params.payloadId)}`);
    requireResource(res, p.id);
    res.json(payloadView(p));
  });

  return router;
}
