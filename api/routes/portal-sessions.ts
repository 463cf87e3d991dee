import express, { type Request, type Response, type Router } from 'express';
import { AppError, notFound } from '../../core/errors';
import type { ApiKey } from '../../core/model';
import { NOT_FOR_PORTALS, PORTAL_DEFAULT_SCOPES, type Scope } from '../../core/scopes';
import type { ConfigStore } from '../../platform/config-store/config-store';
import type { PortalSession, PortalSessions } from '../../platform/redis/portal-sessions';
import { authOf, cookieOf, isOperator, PORTAL_COOKIE, requireResourceOf, requireScope, type PortalLookup } from '../auth';
import { validateBody } from '../validation';

/** Most live portal sessions one tenant may hold: Redis keeps each until it expires. */
export const MAX_PORTAL_SESSIONS = 1_000;
/** How long a link opens the portal, and a session lasts, in seconds: bounds and defaults. */
export const PORTAL_LINK_SECONDS = { min: 10, default: 600, max: 3_600 };
export const PORTAL_SESSION_SECONDS = { min: 10, default: 3_600, max: 86_400 };
/** Most destinations one session may be limited to. */
export const MAX_PORTAL_DESTINATIONS = 100;

export function portalSessionView(s: PortalSession) {
  return {
    id: s.id,
    tenant_id: s.tenant_id,
    scopes: s.scopes,
    destination_ids: s.destination_ids,
    created_at: s.created_at,
    link_expires_at: s.link_expires_at,
    expires_at: s.expires_at,
    opened_at: s.opened_at,
  };
}

/**
 * The key-like grant a portal session stands for: its tenant and scopes, until it ends. A session
 * limited to some destinations is limited to those among the tenant's destinations only: the
 * catalogue and the saved payloads stay readable (its scopes permitting), as the portal shows them.
 */
export function grantOfSession(s: PortalSession, store?: Pick<ConfigStore, 'list'>): ApiKey {
  const resources = s.destination_ids && store ? [...s.destination_ids, ...store.list('event_type', s.tenant_id).map((t) => t.id), ...store.list('saved_payload', s.tenant_id).map((p) => p.id)] : s.destination_ids;
  return { kind: 'api_key', id: s.id, tenant_id: s.tenant_id, secret_sha256: '', scopes: s.scopes, resource_ids: resources, created_at: s.created_at, expires_at: s.expires_at, name: null, revoked_at: null };
}

export function portalLookup(sessions: PortalSessions, store: Pick<ConfigStore, 'list'>): PortalLookup {
  return {
    grantOf: async (token) => {
      const session = await sessions.sessionOf(token);
      return session ? { key: grantOfSession(session, store), session } : undefined;
    },
  };
}

interface SessionBody {
  scopes?: Scope[];
  destination_ids?: string[] | null;
  link_seconds?: number;
  session_seconds?: number;
}

export interface PortalRoutesOptions {
  /** Base of the links handed out (PUBLIC_BASE_URL or the listener). */
  publicBaseUrl: () => string;
}

/**
 * `/v1/tenants/{tenant_id}/portal-sessions`: an operator key, or a tenant key with
 * `write:portal-sessions`, makes a one-time link that opens the portal (/ui) signed in for the
 * tenant with the scopes (and destinations) given; the session lives in Redis and is revoked here.
 */
export function portalSessionsRouter(store: ConfigStore, sessions: PortalSessions, options: PortalRoutesOptions): Router {
  const router = express.Router({ mergeParams: true });
  const tenantOf = (req: Request) => String(req.params.tenantId);

  router.get('/', requireScope('read:portal-sessions'), async (req, res) => {
    const live = await sessions.list(tenantOf(req));
    res.json({ portal_sessions: live.map(portalSessionView), next_cursor: null });
  });

  router.post('/', requireScope('write:portal-sessions'), async (req, res) => {
    const caller = authOf(res);
    const tenantId = tenantOf(req);
    const check = validateBody<SessionBody>('createPortalSession', req.body ?? {});
    const b = check.body;
    // read only what the schema found well-formed: the check reports the rest
    const scopes = [...new Set(check.usable('scopes') && Array.isArray(b.scopes) ? b.scopes : PORTAL_DEFAULT_SCOPES)];
    if (check.usable('scopes')) {
      const barred = scopes.filter((s) => NOT_FOR_PORTALS.includes(s));
      if (barred.length > 0) check.fail('scopes', `a portal session may not hold ${barred.join(', ')}: it must not make keys, sessions or Hook URLs`);
    }
    const destinationIds = check.usable('destination_ids') && Array.isArray(b.destination_ids) ? [...new Set(b.destination_ids)] : null;
    if (destinationIds && check.usable('destination_ids')) {
      destinationIds.forEach((id, i) => {
        if (!store.get('destination', tenantId, id)) check.fail(`destination_ids[${i}]`, `the tenant has no destination ${id}`);
      });
    }
    check.done();
    // a tenant key grants at most what it holds, for no longer than it lives
    let sessionMs = (b.session_seconds ?? PORTAL_SESSION_SECONDS.default) * 1_000;
    if (!isOperator(caller)) {
      const beyond = scopes.find((s) => !caller.scopes.includes(s));
      if (beyond) throw new AppError('insufficient-scope', `this key cannot grant the scope ${beyond}, which it does not hold`, { required_scope: beyond });
      if (caller.resource_ids) {
        if (!destinationIds) throw new AppError('permission-denied', 'a key limited to resource ids may only make sessions limited to some of them (`destination_ids`)', { resource_id: tenantId });
        for (const id of destinationIds) requireResourceOf(caller, id);
      }
      if (caller.expires_at) sessionMs = Math.min(sessionMs, Date.parse(caller.expires_at) - Date.now());
    }
    const linkMs = Math.min((b.link_seconds ?? PORTAL_LINK_SECONDS.default) * 1_000, sessionMs);
    const made = await sessions.create({ tenantId, scopes, destinationIds, linkMs, sessionMs, max: MAX_PORTAL_SESSIONS });
    if (!made) throw new AppError('quota-exceeded', `this tenant holds ${MAX_PORTAL_SESSIONS} live portal sessions; revoke some or let them expire`, { quota: 'portal_sessions', limit: MAX_PORTAL_SESSIONS });
    const url = `${options.publicBaseUrl()}/ui/?tenant=${encodeURIComponent(tenantId)}#portal=${made.code}`;
    res.status(201).location(`${req.baseUrl}/${made.session.id}`).json({ ...portalSessionView(made.session), url });
  });

  router.get('/:sessionId', requireScope('read:portal-sessions'), async (req, res) => {
    const s = await sessions.get(tenantOf(req), String(req.params.sessionId));
    if (!s) throw notFound(`portal session ${String(req.params.sessionId)}`);
    res.json(portalSessionView(s));
  });

  // revoking ends the session at once: its link and its cookie are refused from the next request
  router.delete('/:sessionId', requireScope('write:portal-sessions'), async (req, res) => {
    if (!(await sessions.revoke(tenantOf(req), String(req.params.sessionId)))) throw notFound(`portal session ${String(req.params.sessionId)}`);
    res.status(204).end();
  });

  return router;
}

/** The Set-Cookie of a portal session: HttpOnly, for the whole origin, until the session ends. */
function sessionCookie(token: string, maxAgeSeconds: number, crossSite: boolean): string {
  // framed by another site, the cookie must be sent in that context: None, and so Secure and partitioned
  const site = crossSite ? 'SameSite=None; Secure; Partitioned' : 'SameSite=Lax';
  return `${PORTAL_COOKIE}=${token}; Path=/; HttpOnly; ${site}; Max-Age=${maxAgeSeconds}`;
}

/**
 * `/v1/portal/session`: the page opened from a portal link trades the link's code for the
 * session cookie (POST), and signs out (DELETE). No API key is involved, and none reaches the browser.
 */
export function portalExchangeRouter(store: ConfigStore, sessions: PortalSessions, options: { secure: () => boolean }): Router {
  const router = express.Router();

  router.post('/', async (req: Request, res: Response) => {
    const check = validateBody<{ code: string }>('openPortalSession', req.body ?? {});
    check.done();
    const opened = await sessions.open(check.body.code);
    if (!opened) throw new AppError('unauthorized', 'this portal link has expired, was used already, or its session was revoked; ask for a new link');
    const { session, token } = opened;
    const tenant = store.tenant(session.tenant_id);
    const framed = (tenant?.portal?.frame_ancestors.length ?? 0) > 0 && options.secure();
    const maxAge = Math.max(1, Math.floor((Date.parse(session.expires_at) - Date.now()) / 1000));
    res.setHeader('set-cookie', sessionCookie(token, maxAge, framed));
    res.setHeader('cache-control', 'no-store');
    res.json({ tenant_id: session.tenant_id, scopes: session.scopes, destination_ids: session.destination_ids, expires_at: session.expires_at });
  });

  router.delete('/', async (req: Request, res: Response) => {
    const token = cookieOf(req, PORTAL_COOKIE);
    if (token) await sessions.close(token);
    res.setHeader('set-cookie', `${PORTAL_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0`);
    res.status(204).end();
  });

  return router;
}
