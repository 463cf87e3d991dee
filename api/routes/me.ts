import express, { type Router } from 'express';
import { authOf } from '../auth';

/**
 * GET /v1/me: the key a request is made with, as the API sees it: its tenant, scopes, resource
 * limits and expiry. Any valid key may ask (no scope), so that a client holding only a key (the
 * dashboard, a script) learns which tenant's paths it may call. Never the secret or its hash.
 */
export function meRouter(): Router {
  const router = express.Router();
  router.get('/', (_req, res) => {
    const key = authOf(res);
    res.json({
      tenant_id: key.tenant_id,
      key_id: key.id,
      name: key.name ?? null,
      scopes: key.scopes,
      resource_ids: key.resource_ids,
      expires_at: key.expires_at,
    });
  });
  return router;
}
