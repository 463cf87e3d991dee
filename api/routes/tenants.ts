import express, { type Request, type RequestHandler, type Router } from 'express';
import { AppError, notFound } from '../../core/errors';
import type { Tenant } from '../../core/model';
import { QUOTA_KINDS, type QuotaName } from '../../core/quotas';
import { EMPTY_PORTAL, isErasing, OPERATOR_TENANT, RETENTION_MEMBERS, type TenantLimits, type TenantPortal, type TenantState } from '../../core/tenants';
import type { ConfigStore } from '../../platform/config-store/config-store';
import { requireOperator } from '../auth';
import { pageOf } from '../paging';
import { validateBody, type BodyCheck } from '../validation';

/**
 * Tenants as a resource, for operators: create, list, read, change (name, metadata, suspension,
 * limits of their own, retention included, the portal's branding) and delete. Every route takes an operator key only.
 */

/** A tenant's limits as shown: every member, null where the deployment's setting applies. */
function limitsView(l: TenantLimits | null | undefined) {
  return {
    ingest_per_hook: l?.ingest_per_hook ?? null,
    ingest_per_tenant: l?.ingest_per_tenant ?? null,
    max_payload_bytes: l?.max_payload_bytes ?? null,
    quotas: Object.fromEntries(Object.keys(QUOTA_KINDS).map((q) => [q, l?.quotas?.[q as QuotaName] ?? null])),
    retention: Object.fromEntries(RETENTION_MEMBERS.map((m) => [m, l?.retention?.[m] ?? null])),
  };
}

export function tenantView(t: Tenant) {
  return {
    id: t.id,
    name: t.name,
    metadata: t.metadata ?? {},
    state: t.state ?? 'active',
    suspended_at: t.suspended_at ?? null,
    limits: limitsView(t.limits),
    portal: { ...EMPTY_PORTAL, ...(t.portal ?? {}) },
    created_at: t.created_at,
    updated_at: t.updated_at ?? t.created_at,
  };
}

interface TenantBody {
  id?: string;
  name?: string;
  metadata?: Record<string, string> | null;
  state?: TenantState;
  limits?: Partial<Record<keyof TenantLimits, unknown>> | null;
  portal?: Partial<TenantPortal> | null;
}

/** Drops nulls: a member set to null goes back to the deployment's setting. */
function compact<T extends object>(o: T): Partial<T> | null {
  const out = Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined)) as Partial<T>;
  return Object.keys(out).length > 0 ? out : null;
}

/** The limits after a change: each member given replaces the current one; null resets it. */
function mergedLimits(current: TenantLimits | null | undefined, given: TenantBody['limits']): TenantLimits | null {
  if (given === undefined) return current ?? null;
  if (given === null) return null;
  const next = { ...(current ?? {}), ...given } as TenantLimits;
  if (given.quotas !== undefined) next.quotas = given.quotas === null ? null : compact({ ...(current?.quotas ?? {}), ...(given.quotas as object) });
  if (given.retention !== undefined) next.retention = given.retention === null ? null : compact({ ...(current?.retention ?? {}), ...(given.retention as object) });
  return compact(next) as TenantLimits | null;
}

function mergedPortal(current: TenantPortal | null | undefined, given: TenantBody['portal']): TenantPortal | null {
  if (given === undefined) return current ?? null;
  if (given === null) return null;
  const base = current ?? EMPTY_PORTAL;
  return {
    logo_url: given.logo_url === undefined ? base.logo_url : given.logo_url,
    accent_color: given.accent_color === undefined ? base.accent_color : given.accent_color,
    frame_ancestors: given.frame_ancestors === undefined ? base.frame_ancestors : given.frame_ancestors ?? [],
  };
}

/** What the body schema cannot say: a tenant's body limit cannot pass what the topics are sized for. */
function checkLimits(check: BodyCheck<TenantBody>, maxBodyBytes: number): void {
  const size = (check.body.limits as TenantLimits | null | undefined)?.max_payload_bytes;
  if (typeof size === 'number' && check.usable('limits.max_payload_bytes') && size > maxBodyBytes) {
    check.fail('limits.max_payload_bytes', `must be at most ${maxBodyBytes}, the deployment's INGEST_MAX_BODY_BYTES (the topics are sized for it)`);
  }
}

export interface TenantsRouterOptions {
  /** INGEST_MAX_BODY_BYTES: no tenant may take larger bodies. */
  maxBodyBytes: number;
  /** Erases a tenant that exists (platform/erasure): what DELETE runs. */
  erase(tenantId: string): Promise<unknown>;
  /** Middleware every route runs first: authentication, rate limit, body parsing, idempotency. */
  before: RequestHandler[];
}

export function tenantsRouter(store: ConfigStore, options: TenantsRouterOptions): Router {
  const router = express.Router();
  const guard = [...options.before, requireOperator];
  const find = (req: Request): Tenant => {
    const t = store.tenant(String(req.params.tenantId));
    if (!t) throw notFound(`tenant ${String(req.params.tenantId)}`);
    return t;
  };

  router.get('/', ...guard, (req, res) => {
    const { page, next_cursor } = pageOf(store.all('tenant'), req.query);
    res.json({ tenants: page.map(tenantView), next_cursor });
  });

  router.post('/', ...guard, async (req, res) => {
    const check = validateBody<TenantBody>('createTenant', req.body);
    checkLimits(check, options.maxBodyBytes);
    check.done();
    const b = check.body;
    await store.sync();
    if (store.tenant(b.id!)) throw new AppError('conflict', `a tenant ${b.id!} exists already`);
    const erased = store.get('erased_tenant', b.id!, b.id!);
    if (erased) throw new AppError('conflict', `the tenant ${b.id!} was erased at ${erased.erased_at}; an erased tenant's id is not given again`);
    const now = new Date().toISOString();
    const tenant: Tenant = {
      kind: 'tenant',
      id: b.id!,
      name: b.name!.trim(),
      created_at: now,
      updated_at: now,
      metadata: b.metadata ?? null,
      state: b.state ?? 'active',
      suspended_at: b.state === 'suspended' ? now : null,
      limits: mergedLimits(null, b.limits),
      portal: mergedPortal(null, b.portal),
    };
    await store.put(tenant);
    res.status(201).location(`${req.baseUrl}/${tenant.id}`).json(tenantView(tenant));
  });

  router.get('/:tenantId', ...guard, (req, res) => {
    res.json(tenantView(find(req)));
  });

  router.patch('/:tenantId', ...guard, async (req, res) => {
    const current = find(req);
    if (isErasing(current)) throw new AppError('conflict', `the tenant ${current.id} is being erased; DELETE it again to finish the erasure`);
    const check = validateBody<TenantBody>('updateTenant', req.body);
    if (check.body.id !== undefined && check.usable('id') && check.body.id !== current.id) check.fail('id', `is ${current.id} and cannot change`);
    checkLimits(check, options.maxBodyBytes);
    check.done();
    const b = check.body;
    const now = new Date().toISOString();
    const state = b.state ?? current.state ?? 'active';
    const next: Tenant = {
      ...current,
      name: b.name === undefined ? current.name : b.name.trim(),
      metadata: b.metadata === undefined ? (current.metadata ?? null) : b.metadata,
      state,
      // the time it was suspended stays while it is; resuming clears it
      suspended_at: state === 'suspended' ? (current.state === 'suspended' ? (current.suspended_at ?? now) : now) : null,
      limits: mergedLimits(current.limits, b.limits),
      portal: mergedPortal(current.portal, b.portal),
      updated_at: now,
    };
    if (!(await store.update(next))) throw notFound(`tenant ${current.id}`);
    res.json(tenantView(store.tenant(current.id) ?? next));
  });

  // synchronous: the answer comes once every store is erased (seconds; docs/tenants.md)
  router.delete('/:tenantId', ...guard, async (req, res) => {
    if (String(req.params.tenantId) === OPERATOR_TENANT) throw new AppError('conflict', 'the operator keys belong to no tenant and are not erased; revoke them instead');
    await store.sync();
    const t = find(req);
    await options.erase(t.id);
    res.status(204).end();
  });

  return router;
}
