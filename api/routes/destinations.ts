import express, { type Router } from 'express';
import { AppError, notFound, unprocessable } from '../../core/errors';
import { newId } from '../../core/ids';
import { checkQuota, DEFAULT_QUOTAS, type Quotas } from '../../core/quotas';
import type { Destination, DestinationAuth } from '../../core/model';
import { newSigningSecret } from '../../core/signing/standard-webhooks';
import type { ConfigStore } from '../../platform/config-store/config-store';
import type { NameClaims } from '../ports';
import { authOf, requireResource, requireScope } from '../auth';
import { validateBody } from '../validation';
import { acceptDestinationAuth, maskAuth } from '../../core/destination-auth';
import { configListHandler } from '../paging';

export function destinationView(d: Destination) {
  return { id: d.id, name: d.name, url: d.url, status: d.status, created_at: d.created_at, updated_at: d.updated_at, disabled_reason: d.disabled_reason, retry_schedule_ms: d.retry_schedule_ms ?? null, auth: maskAuth(d.auth) };
}

/** A body the DestinationCreate schema accepted; what a GET shows beside it is accepted and left as the service sets it. */
interface DestinationBody {
  name: string;
  url: string;
  retry_schedule_ms?: number[] | null;
  auth?: DestinationAuth | null;
}

/** What the schema cannot say of a URL: that it parses as the delivery will parse it, without credentials. */
function urlProblem(url: string): string | undefined {
  try {
    const u = new URL(url);
    return u.username || u.password ? 'must not carry credentials' : undefined;
  } catch {
    return 'must be an absolute URL';
  }
}

export function destinationsRouter(store: ConfigStore, claims: NameClaims, options: { httpsOnly?: boolean; refusalOf: (url: string) => Promise<string | null>; quotas?: Quotas }): Router {
  const router = express.Router({ mergeParams: true });

  router.get('/', requireScope('read:destinations'), configListHandler(store, 'destination', 'destinations', destinationView));

  router.post('/', requireScope('write:destinations'), async (req, res) => {
    const key = authOf(res);
    const check = validateBody<DestinationBody>('createDestination', req.body);
    const { name, url, retry_schedule_ms: schedule } = check.body;
    if (check.usable('url')) {
      const problem = urlProblem(url);
      if (problem) check.fail('url', problem);
      else if (options.httpsOnly && /^http:/i.test(url.trim())) check.fail('url', 'must be an https: URL on this deployment');
    }
    let auth: DestinationAuth | null = null;
    if (check.body.auth && check.usable('auth')) {
      const accepted = acceptDestinationAuth(check.body.auth);
      for (const e of accepted.errors) check.fail(e.field, e.message);
      auth = accepted.auth;
    }
    check.done();
    checkQuota(store, key.tenant_id, 'destinations', options.quotas ?? DEFAULT_QUOTAS);
    const refusal = await options.refusalOf(url);
    if (refusal !== null) throw unprocessable([{ field: 'url', message: refusal }]);
    const id = newId('destination');
    const claimed = await claims.claim(key.tenant_id, 'destination-name', name.trim(), id, (owner) => store.get('destination', key.tenant_id, owner) !== undefined);
    if (!claimed) throw new AppError('conflict', `a destination named "${name.trim()}" already exists`);
    const now = new Date().toISOString();
    const destination: Destination = {
      kind: 'destination',
      id,
      tenant_id: key.tenant_id,
      name: name.trim(),
      url,
      status: 'active',
      signing_secret: newSigningSecret(),
      auth,
      disabled_reason: null,
      retry_schedule_ms: schedule ?? null,
      created_at: now,
      updated_at: now,
    };
    await store.put(destination);
    // the signing secret is shown here once; later reads never include it
    res.status(201).location(`${req.baseUrl}/${id}`).json({ ...destinationView(destination), signing_secret: destination.signing_secret });
  });

  router.get('/:destinationId', requireScope('read:destinations'), (req, res) => {
    const key = authOf(res);
    const d = store.get('destination', key.tenant_id, String(req.params.destinationId));
    if (!d) throw notFound(`destination ${String(req.params.destinationId)}`);
    requireResource(res, d.id);
    res.json(destinationView(d));
  });

  /** Deletes the destination and takes it out of every delivery flow; its pending deliveries fail. */
  router.delete('/:destinationId', requireScope('write:destinations'), async (req, res) => {
    const key = authOf(res);
    const d = store.get('destination', key.tenant_id, String(req.params.destinationId));
    if (!d) throw notFound(`destination ${String(req.params.destinationId)}`);
    requireResource(res, d.id);
    const now = new Date().toISOString();
    for (const flow of store.list('flow', key.tenant_id).filter((f) => f.destination_ids.includes(d.id))) {
      await store.put({ ...flow, destination_ids: flow.destination_ids.filter((id) => id !== d.id), updated_at: now });
    }
    await store.remove('destination', key.tenant_id, d.id);
    await claims.release(key.tenant_id, 'destination-name', d.name, d.id);
    res.status(204).end();
  });

  return router;
}
