import type { RateLimit } from './rate-limits';
import type { QuotaName, Quotas } from './quotas';
import type { Tenant } from './model';

/** `active` ingests and delivers; `suspended` refuses its Hook URLs (403) and holds its deliveries. */
export const TENANT_STATES = ['active', 'suspended'] as const;
export type TenantState = (typeof TENANT_STATES)[number];

/**
 * A tenant's own limits, each replacing the deployment's setting for this tenant alone; a member
 * that is absent or null keeps the setting. Rate limits are `{ limit, window_seconds }`.
 */
export interface TenantLimits {
  ingest_per_hook?: { limit: number; window_seconds: number } | null;
  ingest_per_tenant?: { limit: number; window_seconds: number } | null;
  max_payload_bytes?: number | null;
  quotas?: Partial<Quotas> | null;
}

/** What a tenant's portal looks like, and which pages may embed it. */
export interface TenantPortal {
  logo_url: string | null;
  /** `#rrggbb`. */
  accent_color: string | null;
  /** Origins allowed to frame the portal (CSP frame-ancestors); empty: none may. */
  frame_ancestors: string[];
}

export const EMPTY_PORTAL: TenantPortal = { logo_url: null, accent_color: null, frame_ancestors: [] };

/** Most origins one tenant's portal may be framed by. */
export const MAX_FRAME_ANCESTORS = 20;
/** Most metadata entries a tenant carries, and their sizes: the config topic holds every tenant. */
export const MAX_TENANT_METADATA = 50;

/**
 * The tenant id that marks an operator key: no tenant can have it (tenant ids start with a
 * letter or digit), so an operator key can never pass as a tenant's key.
 */
export const OPERATOR_TENANT = '*operator';

export function isSuspended(tenant: Pick<Tenant, 'state'> | undefined): boolean {
  return tenant?.state === 'suspended';
}

const rate = (r: { limit: number; window_seconds: number }): RateLimit => ({ limit: r.limit, windowSeconds: r.window_seconds });

/** The ingest rate limits of a tenant: its overrides where it has them, else the deployment's. */
export function ingestLimitsOf(tenant: Tenant | undefined, defaults: { perHook: RateLimit | null; perTenant: RateLimit | null }): { perHook: RateLimit | null; perTenant: RateLimit | null } {
  const l = tenant?.limits;
  if (!l) return defaults;
  return {
    perHook: l.ingest_per_hook ? rate(l.ingest_per_hook) : defaults.perHook,
    perTenant: l.ingest_per_tenant ? rate(l.ingest_per_tenant) : defaults.perTenant,
  };
}

/** Largest body a tenant's Hook URLs accept. */
export function maxBodyBytesOf(tenant: Tenant | undefined, deployment: number): number {
  return tenant?.limits?.max_payload_bytes ?? deployment;
}

/** A tenant's quota of one kind of object. */
export function quotaOf(tenant: Tenant | undefined, quota: QuotaName, quotas: Quotas): number {
  return tenant?.limits?.quotas?.[quota] ?? quotas[quota];
}
