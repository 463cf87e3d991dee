import { AppError } from './errors';
import type { EntityKind, Tenant } from './model';
import { quotaOf } from './tenants';

/** Objects a tenant may create, each bounded per tenant (`quota` in a quota-exceeded problem). */
export const QUOTA_KINDS = {
  ingesters: 'ingester',
  destinations: 'destination',
  delivery_flows: 'flow',
  saved_payloads: 'saved_payload',
  api_keys: 'api_key',
  event_types: 'event_type',
} as const satisfies Record<string, EntityKind>;

export type QuotaName = keyof typeof QUOTA_KINDS;
export type Quotas = Record<QuotaName, number>;

/** Generous for any real tenant, but finite: one tenant cannot grow the config log and every process's memory without end. */
export const DEFAULT_QUOTAS: Quotas = {
  ingesters: 1_000,
  destinations: 1_000,
  delivery_flows: 1_000,
  saved_payloads: 10_000,
  api_keys: 100,
  event_types: 1_000,
};

/** What a quota counts in: the configuration store's list of a tenant's entities. */
export interface EntityCounter {
  list(kind: EntityKind, tenantId: string): readonly unknown[];
  /** The tenant, whose own quotas replace the deployment's. */
  get?(kind: 'tenant', tenantId: string, id: string): Tenant | undefined;
}

/**
 * Refuses the creation of one more `quota` object once the tenant holds `quotas[quota]` of them:
 * 403 quota-exceeded with `quota` and `limit`. It counts what this process's store has applied,
 * so concurrent creates (in one or several processes) may overshoot by at most the number of
 * creates in flight at once; the next create after them is refused.
 */
export function checkQuota(store: EntityCounter, tenantId: string, quota: QuotaName, quotas: Quotas = DEFAULT_QUOTAS, adding = 1): void {
  const limit = quotaOf(store.get?.('tenant', tenantId, tenantId), quota, quotas);
  if (store.list(QUOTA_KINDS[quota], tenantId).length + adding > limit) {
    throw new AppError('quota-exceeded', `this tenant may hold at most ${limit} ${quota.replace('_', ' ')}; delete some before creating more`, { quota, limit });
  }
}
