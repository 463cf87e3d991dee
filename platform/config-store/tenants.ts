import { AppError } from '../../core/errors';
import { keyStatus, newApiKey } from '../../core/api-keys';
import type { ApiKey, Tenant } from '../../core/model';
import type { Scope } from '../../core/scopes';
import type { ConfigStore } from './config-store';

/** Creates the tenant unless it exists; returns it either way. An erased tenant's id is not given out again. */
export async function ensureTenant(store: ConfigStore, tenantId: string, name = tenantId): Promise<Tenant> {
  await store.sync();
  if (store.isErased(tenantId)) throw new AppError('conflict', `tenant ${tenantId} was erased (or is being erased); its id is not given out again`);
  const existing = store.get('tenant', tenantId, tenantId);
  if (existing) return existing;
  const tenant: Tenant = { kind: 'tenant', id: tenantId, name, created_at: new Date().toISOString() };
  await store.put(tenant);
  return tenant;
}

export interface IssuedKey {
  tenant_id: string;
  key_id: string;
  api_key: string;
  scopes: Scope[];
}

/** Issues a new API key; the plain key is returned here once and never stored. */
export async function issueApiKey(
  store: ConfigStore,
  tenantId: string,
  scopes: Scope[],
  options: { resourceIds?: string[] | null; expiresAt?: string | null; name?: string | null } = {},
): Promise<IssuedKey> {
  const { keyId, apiKey, sha256 } = newApiKey();
  const key: ApiKey = {
    kind: 'api_key',
    id: keyId,
    tenant_id: tenantId,
    secret_sha256: sha256,
    scopes,
    resource_ids: options.resourceIds ?? null,
    created_at: new Date().toISOString(),
    expires_at: options.expiresAt ?? null,
    name: options.name ?? null,
    revoked_at: null,
  };
  await store.put(key);
  return { tenant_id: tenantId, key_id: keyId, api_key: apiKey, scopes };
}

/**
 * Makes room for one more key of the tenant, or refuses it. Usable keys count against the
 * `api_keys` quota (403 quota-exceeded); retired keys (revoked or expired) stay listed for
 * audit, but at most `limit` of them: the ones retired longest ago are deleted first, so that
 * revoking and creating in a loop cannot grow the config log without end nor exhaust the quota.
 */
export async function makeRoomForApiKey(store: ConfigStore, tenantId: string, limit: number, now = Date.now()): Promise<void> {
  const keys = store.list('api_key', tenantId);
  const retired = keys.filter((k) => keyStatus(k, now) !== 'active');
  if (keys.length - retired.length + 1 > limit) {
    throw new AppError('quota-exceeded', `this tenant may hold at most ${limit} usable API keys; revoke some before creating more`, { quota: 'api_keys', limit });
  }
  const retiredAt = (k: ApiKey) => k.revoked_at ?? k.expires_at ?? '';
  const oldest = [...retired].sort((a, b) => retiredAt(a).localeCompare(retiredAt(b)));
  for (const k of oldest.slice(0, Math.max(0, retired.length - (limit - 1)))) await store.remove('api_key', tenantId, k.id);
}
