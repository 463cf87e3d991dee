import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { apiKeyMatches, keyIdOf } from '../core/api-keys';
import { AppError } from '../core/errors';
import type { ApiKey } from '../core/model';
import type { Scope } from '../core/scopes';

export interface KeyLookup {
  find(kind: 'api_key', id: string): ApiKey | undefined;
  sync(): Promise<void>;
}

export interface Authenticated {
  key: ApiKey;
}

declare module 'express-serve-static-core' {
  interface Locals {
    auth?: Authenticated;
    /** Write groups (write scopes) that configuration has switched off. */
    disabledWriteGroups?: ReadonlySet<string>;
  }
}

/** The key a request was authenticated with; routes behind `authenticate` always have one. */
export function authOf(res: Response): ApiKey {
  const auth = res.locals.auth;
  if (!auth) throw new AppError('unauthorized', 'the request is not authenticated');
  return auth.key;
}

/**
 * Bearer tenant API keys. A key this process has not seen yet (issued a moment ago by the
 * CLI or another instance) is looked for once more after catching up with the config topic.
 */
export function authenticate(keys: KeyLookup, onUse?: (key: ApiKey) => void): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction) => {
    const header = req.headers.authorization;
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

export function requireScope(scope: Scope): RequestHandler {
  return (_req: Request, res: Response, next: NextFunction) => {
    const key = authOf(res);
    if (res.locals.disabledWriteGroups?.has(scope)) {
      throw new AppError('write-tool-disabled', `the write group ${scope} is disabled on this deployment`, { tool_group: scope });
    }
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
