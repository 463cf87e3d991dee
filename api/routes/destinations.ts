import express, { type Router } from 'express';
import { AppError, notFound, unprocessable, type FieldError } from '../../core/errors';
import { newId } from '../../core/ids';
import { checkQuota, DEFAULT_QUOTAS, type Quotas } from '../../core/quotas';
import type { Destination, DestinationAuth, DestinationType } from '../../core/model';
import { newSigningSecret } from '../../core/signing/standard-webhooks';
import type { ConfigStore } from '../../platform/config-store/config-store';
import type { NameClaims } from '../ports';
import { authOf, requireResource, requireScope } from '../auth';
import { validateBody } from '../validation';
import { configListHandler } from '../paging';
import { checkTransformation, checkTypeMembers, destinationView, holdsName, readAuth, readFilter, checkEventTypes, refusalOfTarget, setEtag } from './destination-members';
import type { ChangeRecorder } from './destination-changes';

export { destinationView } from './destination-members';

/** A body the DestinationCreate schema accepted; what a GET shows beside it is accepted and left as the service sets it. */
interface DestinationBody {
  name: string;
  type?: DestinationType;
  url: string;
  config?: Record<string, unknown> | null;
  transformation?: string | null;
  retry_schedule_ms?: number[] | null;
  auth?: DestinationAuth | null;
  enabled?: boolean;
  rate_limit_per_s?: number | null;
  ordered?: boolean;
  event_types?: string[] | null;
  filter?: unknown[] | null;
}

export interface DestinationsOptions {
  httpsOnly?: boolean;
  refusalOf: (url: string) => Promise<string | null>;
  quotas?: Quotas;
  changes?: ChangeRecorder;
  /** Why a transformation cannot run (does not compile, defines no transform), or undefined: the sandbox's own check. */
  checkTransformation?: (code: string) => Promise<string | undefined>;
}

export function destinationsRouter(store: ConfigStore, claims: NameClaims, options: DestinationsOptions): Router {
  const router = express.Router({ mergeParams: true });

  router.get('/', requireScope('read:destinations'), configListHandler(store, 'destination', 'destinations', destinationView));

  router.post('/', requireScope('write:destinations'), async (req, res) => {
    const key = authOf(res);
    const check = validateBody<DestinationBody>('createDestination', req.body);
    const { name, url, retry_schedule_ms: schedule } = check.body;
    const type = check.body.type ?? 'webhook';
    const config = check.body.config ?? null;
    const auth = check.body.auth ? readAuth(check, check.body.auth, null) : null;
    checkTypeMembers(check, { type, url, config, auth }, options.httpsOnly);
    await checkTransformation(check, check.body.transformation, options.checkTransformation);
    let refused: FieldError[] = [];
    let filter: unknown[] | null = null;
    if (check.body.filter) ({ filter, refused } = readFilter(check, check.body.filter));
    checkEventTypes(check, check.body.event_types);
    check.done();
    if (refused.length > 0) throw unprocessable(refused);
    checkQuota(store, key.tenant_id, 'destinations', options.quotas ?? DEFAULT_QUOTAS);
    const refusal = await refusalOfTarget(options.refusalOf, type, url);
    if (refusal !== null) throw unprocessable([{ field: 'url', message: refusal }]);
    const id = newId('destination');
    const claimed = await claims.claim(key.tenant_id, 'destination-name', name.trim(), id, holdsName(store, key.tenant_id, name.trim()));
    if (!claimed) throw new AppError('conflict', `a destination named "${name.trim()}" already exists`);
    const now = new Date().toISOString();
    const destination: Destination = {
      kind: 'destination',
      id,
      tenant_id: key.tenant_id,
      name: name.trim(),
      type,
      url,
      config,
      transformation: check.body.transformation ?? null,
      status: check.body.enabled === false ? 'paused' : 'active',
      signing_secret: newSigningSecret(),
      auth,
      disabled_reason: null,
      retry_schedule_ms: schedule ?? null,
      rate_limit_per_s: check.body.rate_limit_per_s ?? null,
      ordered: check.body.ordered ?? false,
      event_types: check.body.event_types ?? null,
      filter,
      previous_signing_secret: null,
      previous_secret_expires_at: null,
      created_at: now,
      updated_at: now,
    };
    await store.put(destination);
    await options.changes?.(key, undefined, destination);
    setEtag(res, store, destination);
    // the signing secret is shown here once; later reads never include it
    res.status(201).location(`${req.baseUrl}/${id}`).json({ ...destinationView(destination), signing_secret: destination.signing_secret });
  });

  router.get('/:destinationId', requireScope('read:destinations'), (req, res) => {
    const key = authOf(res);
    const d = store.get('destination', key.tenant_id, String(req.params.destinationId));
    if (!d) throw notFound(`destination ${String(req.params.destinationId)}`);
    requireResource(res, d.id);
    setEtag(res, store, d);
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
    await options.changes?.(key, d, undefined);
    res.status(204).end();
  });

  return router;
}
