import { newApiKey } from '../../core/api-keys';
import type { ApiKey, Tenant } from '../../core/model';
import type { Scope } from '../../core/scopes';
import type { ConfigStore } from './config-store';

/** Creates the tenant unless it exists; returns it either way. */
export async function ensureTenant(store: ConfigStore, tenantId: string, name = tenantId): Promise<Tenant> {
  await store.sync();
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
  options: { resourceIds?: string[] | null; expiresAt?: string | null } = {},
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
  };
  await store.put(key);
  return { tenant_id: tenantId, key_id: keyId, api_key: apiKey, scopes };
}
