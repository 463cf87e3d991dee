import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { apiKeyMatches, keyIdOf } from '../core/api-keys';
import { AppError } from '../core/errors';
import type { ApiKey } from '../core/model';
import type { Scope } from '../core/scopes';
import { OPERATOR_TENANT } from '../core/tenants';
import type { PortalSession } from '../platform/redis/portal-sessions';

export interface KeyLookup {
  find(kind: 'api_key', id: string): ApiKey | undefined;
  sync(): Promise<void>;
  /** Whether the tenant is erased or being erased: its keys and portal sessions are refused. */
  isErased?(tenantId: string): boolean;
}

export interface Authenticated {
  key: ApiKey;
  /** Set when the request is made in a portal session (its cookie), not with an API key. */
  portal?: PortalSession;
}

declare module 'express-serve-static-core' {
  interface Locals {
    auth?: Authenticated;
    /** Write groups (write scopes) that configuration has switched off. */
    disabledWriteGroups?: ReadonlySet<string>;
    /** An operator key acting on a tenant's behalf, on a route that lets operators in. */
    onBehalf?: boolean;
  }
}

/** The key a request was authenticated with; routes behind `authenticate` always have one. */
export function authOf(res: Response): ApiKey {
  const auth = res.locals.auth;
  if (!auth) throw new AppError('unauthorized', 'the request is not authenticated');
  return auth.key;
}

/** The cookie a portal session's browser holds (HttpOnly), and the header its requests carry. */
export const PORTAL_COOKIE = 'hookline_portal';
export const PORTAL_HEADER = 'x-hookline-portal';

/** Resolves a portal session token to the key-like grant it stands for. */
export interface PortalLookup {
  grantOf(token: string): Promise<{ key: ApiKey; session: PortalSession } | undefined>;
}

/** One cookie of the request's Cookie header, or undefined. */
export function cookieOf(req: Request, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * Bearer tenant API keys. A key this process has not seen yet (issued a moment ago by the
 * CLI or another instance) is looked for once more after catching up with the config topic.
 *
 * With `portal`, a request without an Authorization header may instead carry a portal session's
 * cookie; it counts only with the `X-Hookline-Portal: 1` header, which a page of another origin
 * cannot send without this API's consent (no CORS is granted), so a forged cross-site request
 * never acts with the cookie.
 */
export function authenticate(keys: KeyLookup, onUse?: (key: ApiKey) => void, portal?: PortalLookup): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction) => {
    const header = req.headers.authorization;
    if (!header && portal) {
      const token = cookieOf(req, PORTAL_COOKIE);
      if (token && req.headers[PORTAL_HEADER] === '1') {
        const grant = await portal.grantOf(token);
        if (!grant || keys.isErased?.(grant.key.tenant_id)) throw new AppError('unauthorized', 'the portal session has ended (expired, revoked or signed out); open a new portal link');
        res.locals.auth = { key: grant.key, portal: grant.session };
        return next();
      }
      if (token) throw new AppError('unauthorized', `a request made with the portal session's cookie carries the header X-Hookline-Portal: 1`);
    }
    const m = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!m?.[1]) {
      res.setHeader('www-authenticate', 'Bearer');
      throw new AppError('unauthorized', header ? 'the Authorization header is not "Bearer <API key>"' : 'the Authorization header is missing');
    }
    const apiKey = m[1];
    const keyId = keyIdOf(apiKey);
    let key = keyId ? keys.find('api_key', keyId) : undefined;
    if (keyId && !key) {
      await keys.sync();
      key = keys.find('api_key', keyId);
    }
    if (!key || !apiKeyMatches(apiKey, key.secret_sha256)) {
      res.setHeader('www-authenticate', 'Bearer error="invalid_token"');
      throw new AppError('unauthorized', 'the API key is not valid');
    }
    // a revocation written by any process reaches this one with the config topic (~100 ms)
    if (key.revoked_at) {
      res.setHeader('www-authenticate', 'Bearer error="invalid_token"');
      throw new AppError('unauthorized', 'the API key has been revoked');
    }
    if (key.expires_at && Date.parse(key.expires_at) <= Date.now()) {
      res.setHeader('www-authenticate', 'Bearer error="invalid_token"');
      throw new AppError('unauthorized', 'the API key has expired');
    }
    // erasure marks the tenant before its keys go: from that moment none of them is taken
    if (keys.isErased?.(key.tenant_id)) {
      res.setHeader('www-authenticate', 'Bearer error="invalid_token"');
      throw new AppError('unauthorized', 'the API key is not valid');
    }
    res.locals.auth = { key };
    onUse?.(key);
    next();
  };
}

/** A key sees only its own tenant; another tenant's path looks like one that does not exist. */
export function requireTenant(req: Request, res: Response, next: NextFunction): void {
  const key = authOf(res);
  if (req.params.tenantId !== key.tenant_id) throw new AppError('not-found', `tenant ${String(req.params.tenantId)} does not exist`);
  next();
}

export function isOperator(key: ApiKey): boolean {
  return key.tenant_id === OPERATOR_TENANT;
}

/** Operator keys only: the routes that manage tenants. */
export function requireOperator(_req: Request, res: Response, next: NextFunction): void {
  if (!isOperator(authOf(res))) throw new AppError('permission-denied', 'only an operator key may manage tenants (made with `keys create --operator` on the service\'s host)', { resource_id: 'tenants' });
  next();
}

/**
 * The tenant's own keys, as {@link requireTenant}, or an operator key for a tenant that exists:
 * the routes an operator uses on a tenant's behalf (portal sessions).
 */
export function requireTenantOrOperator(exists: (tenantId: string) => boolean): RequestHandler {
  return (req, res, next) => {
    const key = authOf(res);
    if (isOperator(key)) {
      if (!exists(String(req.params.tenantId))) throw new AppError('not-found', `tenant ${String(req.params.tenantId)} does not exist`);
      res.locals.onBehalf = true;
      return next();
    }
    requireTenant(req, res, next);
  };
}

export function requireScope(scope: Scope): RequestHandler {
  return (_req: Request, res: Response, next: NextFunction) => {
    const key = authOf(res);
    if (res.locals.disabledWriteGroups?.has(scope)) {
      throw new AppError('write-tool-disabled', `the write group ${scope} is disabled on this deployment`, { tool_group: scope });
    }
    // an operator acting on a tenant's behalf holds every scope of the routes it is let into
    if (res.locals.onBehalf === true && isOperator(key)) return next();
    if (!key.scopes.includes(scope)) {
      throw new AppError('insufficient-scope', `this call needs the scope ${scope}`, { required_scope: scope });
    }
    next();
  };
}

/** Keys limited to some resource ids may act only on those. */
export function requireResource(res: Response, resourceId: string): void {
  requireResourceOf(authOf(res), resourceId);
}

export function requireResourceOf(key: ApiKey, resourceId: string): void {
  if (key.resource_ids && !key.resource_ids.includes(resourceId)) {
    throw new AppError('permission-denied', `this key may not act on ${resourceId}`, { resource_id: resourceId });
  }
}
