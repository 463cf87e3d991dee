import type { RateLimit } from './rate-limits';
import type { QuotaName, Quotas } from './quotas';
import type { Tenant } from './model';
import type { RetentionPeriods } from './config';

/** `active` ingests and delivers; `suspended` refuses its Hook URLs (403) and holds its deliveries. */
export const TENANT_STATES = ['active', 'suspended'] as const;
/**
 * The states an operator sets, and `erasing`, which only DELETE sets: from then on the tenant's
 * Hook URLs answer 404 and its keys and portal sessions 401, until its erasure is done.
 */
export type TenantState = (typeof TENANT_STATES)[number] | 'erasing';

/**
 * A tenant's own limits, each replacing the deployment's setting for this tenant alone; a member
 * that is absent or null keeps the setting. Rate limits are `{ limit, window_seconds }`.
 */
export interface TenantLimits {
  ingest_per_hook?: { limit: number; window_seconds: number } | null;
  ingest_per_tenant?: { limit: number; window_seconds: number } | null;
  max_payload_bytes?: number | null;
  quotas?: Partial<Quotas> | null;
  /** How long ClickHouse keeps the tenant's bodies, attempts and logs, in seconds (RETENTION_*). */
  retention?: Partial<TenantRetention> | null;
}

/** A tenant's retention periods in seconds; null: the deployment's setting. */
export interface TenantRetention {
  bodies_seconds: number | null;
  attempts_seconds: number | null;
  logs_seconds: number | null;
}

export const RETENTION_MEMBERS = ['bodies_seconds', 'attempts_seconds', 'logs_seconds'] as const;

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

/** Whether the tenant is being erased: nothing of it is accepted or written any more. */
export function isErasing(tenant: Pick<Tenant, 'state'> | undefined): boolean {
  return tenant?.state === 'erasing';
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

/**
 * How long the tenant's rows are kept: its own periods where it has them, else the deployment's
 * (null: for ever). Applies to rows written from the moment the sink sees the change.
 */
export function retentionOf(tenant: Tenant | undefined, deployment: RetentionPeriods): RetentionPeriods {
  const r = tenant?.limits?.retention;
  if (!r) return deployment;
  return {
    bodiesSeconds: r.bodies_seconds ?? deployment.bodiesSeconds,
    attemptsSeconds: r.attempts_seconds ?? deployment.attemptsSeconds,
    logsSeconds: r.logs_seconds ?? deployment.logsSeconds,
  };
}
