import express, { type Response, type Router } from 'express';
import { keyStatus } from '../../core/api-keys';
import { AppError, notFound, validationError } from '../../core/errors';
import type { ApiKey } from '../../core/model';
import { DEFAULT_QUOTAS, type Quotas } from '../../core/quotas';
import { quotaOf } from '../../core/tenants';
import type { Scope } from '../../core/scopes';
import type { ConfigStore } from '../../platform/config-store/config-store';
import { issueApiKey, makeRoomForApiKey } from '../../platform/config-store/tenants';
import type { KeyUsage } from '../../platform/redis/key-usage';
import { authOf, requireResourceOf, requireScope } from '../auth';
import { pageOf } from '../paging';
import { validateBody } from '../validation';

/** Longest lifetime a key may be given: far enough for any plan, short of forever. */
export const MAX_KEY_LIFETIME_DAYS = 3653;
/** Most resource ids one key may be limited to. */
export const MAX_KEY_RESOURCES = 100;

/** A key as shown: never its secret, never its hash. */
export function apiKeyView(k: ApiKey, lastUsedAt: string | null, now = Date.now()) {
  return {
    id: k.id,
    name: k.name ?? null,
    scopes: k.scopes,
    resource_ids: k.resource_ids,
    created_at: k.created_at,
    expires_at: k.expires_at,
    revoked_at: k.revoked_at ?? null,
    last_used_at: lastUsedAt,
    status: keyStatus(k, now),
  };
}

interface KeyInput {
  name: string;
  scopes: Scope[];
  expiresAt: string | null;
  resourceIds: string[] | null;
}

/** A body the ApiKeyCreate schema accepted. */
interface KeyBody {
  name: string;
  scopes: Scope[];
  expires_at?: string | null;
  resource_ids?: string[] | null;
}

/** The body of a create, checked whole (400), then against what the calling key may grant (403). */
function readCreate(body: unknown, caller: ApiKey, now: number): KeyInput {
  const check = validateBody<KeyBody>('createApiKey', body);
  const b = check.body;
  let expiresAt: string | null = null;
  if (b.expires_at != null && check.usable('expires_at')) {
    const t = Date.parse(b.expires_at);
    if (t <= now) check.fail('expires_at', 'must be in the future');
    else if (t > now + MAX_KEY_LIFETIME_DAYS * 86_400_000) check.fail('expires_at', `must be at most ${MAX_KEY_LIFETIME_DAYS} days from now`);
    else expiresAt = new Date(t).toISOString();
  }
  check.done();
  let resourceIds = b.resource_ids ? [...new Set(b.resource_ids)] : null;

  // a key grants at most what it holds: its scopes, its resources, its lifetime
  const wanted = [...new Set(b.scopes)];
  const beyond = wanted.find((s) => !caller.scopes.includes(s));
  if (beyond) throw new AppError('insufficient-scope', `this key cannot grant the scope ${beyond}, which it does not hold`, { required_scope: beyond });
  if (caller.resource_ids) {
    if (resourceIds === null) resourceIds = [...caller.resource_ids];
    for (const id of resourceIds) requireResourceOf(caller, id);
  }
  if (caller.expires_at) {
    if (expiresAt === null) expiresAt = caller.expires_at;
    else if (Date.parse(expiresAt) > Date.parse(caller.expires_at)) {
      throw new AppError('validation-error', 'expires_at: must not be later than the expiry of the key making the request', { errors: [{ field: 'expires_at', message: 'must not be later than the expiry of the key making the request' }] });
    }
  }
  return { name: b.name.trim(), scopes: wanted, expiresAt, resourceIds };
}

/**
 * The tenant's API keys. The plain key is in the create answer only; revocation keeps the key
 * listed with `revoked_at`, and every process refuses it as soon as it reads the config topic.
 */
export function apiKeysRouter(store: ConfigStore, usage: KeyUsage | undefined, quotas: Quotas = DEFAULT_QUOTAS): Router {
  const router = express.Router({ mergeParams: true });
  const lastUsedOf = async (tenantId: string, ids: string[]) => (usage ? await usage.lastUsed(tenantId, ids) : new Map<string, string | null>());
  /** The key, if the caller may see it: its tenant's, within its resources, or itself. */
  const find = (res: Response, id: string): ApiKey => {
    const caller = authOf(res);
    const k = store.get('api_key', caller.tenant_id, id);
    if (!k) throw notFound(`API key ${id}`);
    if (k.id !== caller.id) requireResourceOf(caller, k.id);
    return k;
  };
  const viewOne = async (k: ApiKey) => apiKeyView(k, (await lastUsedOf(k.tenant_id, [k.id])).get(k.id) ?? null);

  router.get('/', requireScope('read:keys'), async (req, res) => {
    const caller = authOf(res);
    const all = store.list('api_key', caller.tenant_id).filter((k) => !caller.resource_ids || k.id === caller.id || caller.resource_ids.includes(k.id));
    const { page, next_cursor } = pageOf(all, req.query);
    const used = await lastUsedOf(caller.tenant_id, page.map((k) => k.id));
    const now = Date.now();
    res.json({ api_keys: page.map((k) => apiKeyView(k, used.get(k.id) ?? null, now)), next_cursor });
  });

  router.post('/', requireScope('write:keys'), async (req, res) => {
    const caller = authOf(res);
    const input = readCreate(req.body, caller, Date.now());
    await makeRoomForApiKey(store, caller.tenant_id, quotaOf(store.get('tenant', caller.tenant_id, caller.tenant_id), 'api_keys', quotas));
    const issued = await issueApiKey(store, caller.tenant_id, input.scopes, { name: input.name, expiresAt: input.expiresAt, resourceIds: input.resourceIds });
    const stored = store.get('api_key', caller.tenant_id, issued.key_id);
    if (!stored) throw new Error(`the key ${issued.key_id} was written but is not in the store`);
    res.status(201).location(`${req.baseUrl}/${issued.key_id}`).json({ ...apiKeyView(stored, null), api_key: issued.api_key });
  });

  router.get('/:keyId', requireScope('read:keys'), async (req, res) => {
    res.json(await viewOne(find(res, String(req.params.keyId))));
  });

  // revoking again changes nothing and answers the key as it is
  router.post('/:keyId/revoke', requireScope('write:keys'), async (req, res) => {
    // no body, or an empty object: a member here would be one the API does not know
    if (req.body !== undefined) {
      const members = typeof req.body === 'object' && req.body !== null && !Array.isArray(req.body) ? Object.keys(req.body as object) : null;
      if (members === null) throw validationError([{ field: 'body', message: 'must be a JSON object' }]);
      if (members.length > 0) throw validationError(members.map((field) => ({ field, message: 'is not a member of this body' })));
    }
    const k = find(res, String(req.params.keyId));
    if (k.revoked_at) return void res.json(await viewOne(k));
    const revoked: ApiKey = { ...k, revoked_at: new Date().toISOString() };
    if (!(await store.update(revoked))) throw notFound(`API key ${k.id}`);
    res.json(await viewOne(store.get('api_key', k.tenant_id, k.id) ?? revoked));
  });

  return router;
}
