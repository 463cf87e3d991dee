import express, { type Router } from 'express';
import type { Tenant } from '../../core/model';
import { authOf } from '../auth';

/**
 * GET /v1/me: the key a request is made with, as the API sees it: its tenant, scopes, resource
 * limits and expiry. Any valid key may ask (no scope), so that a client holding only a key (the
 * dashboard, a script) learns which tenant's paths it may call. Never the secret or its hash.
 * In a portal session (its cookie) it also gives what the portal shows: the tenant's name and
 * branding.
 */
export function meRouter(tenantOf: (id: string) => Tenant | undefined = () => undefined): Router {
  const router = express.Router();
  router.get('/', (_req, res) => {
    const key = authOf(res);
    const portal = res.locals.auth?.portal;
    const tenant = portal ? tenantOf(key.tenant_id) : undefined;
    res.json({
      tenant_id: key.tenant_id,
      key_id: key.id,
      name: key.name ?? null,
      scopes: key.scopes,
      // a portal session shows the destinations it is limited to (the grant also lets it read the catalogue)
      resource_ids: portal ? portal.destination_ids : key.resource_ids,
      expires_at: key.expires_at,
      ...(portal ? { portal: { tenant_name: tenant?.name ?? key.tenant_id, logo_url: tenant?.portal?.logo_url ?? null, accent_color: tenant?.portal?.accent_color ?? null } } : {}),
    });
  });
  return router;
}
