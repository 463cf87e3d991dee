import { createHash, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { newId } from '../../core/ids';
import type { Scope } from '../../core/scopes';

/**
 * Portal sessions, kept in Redis only: a session is short-lived coordination, not configuration.
 *
 * A session is made with a one-time link code; opening the link trades the code (once: GETDEL)
 * for a session token, which the browser holds in an HttpOnly cookie. Redis holds only the
 * SHA-256 of the code and of the token, each under a TTL: the code's for the link's lifetime,
 * the token's and the session's for the session's. Revoking deletes the session record, and a
 * token whose session record is gone is refused at its next request.
 */
export interface PortalSession {
  id: string;
  tenant_id: string;
  scopes: Scope[];
  /** The destinations the session may see and act on; null: all of the tenant's. */
  destination_ids: string[] | null;
  created_at: string;
  link_expires_at: string;
  expires_at: string;
  /** When the link was traded for a session token; null while the link is unused. */
  opened_at: string | null;
}

export interface NewPortalSession {
  session: PortalSession;
  /** The one-time code of the link: shown once, stored only as its hash. */
  code: string;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
/** 256 random bits, URL-safe. */
const secret = (prefix: string) => `${prefix}${randomBytes(32).toString('base64url')}`;
/** A day: no session lasts longer. */
const INDEX_TTL_MS = 86_400_000;
const CODE_PATTERN = /^hlc_[A-Za-z0-9_-]{43}$/;
const TOKEN_PATTERN = /^hls_[A-Za-z0-9_-]{43}$/;

export class PortalSessions {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  private key(kind: 'session' | 'link' | 'token' | 'tenant', id: string): string {
    return `${this.prefix}portal:${kind}:${id}`;
  }

  /** Makes a session and its link; refused (undefined) when the tenant already holds `max` live sessions. */
  async create(input: { tenantId: string; scopes: Scope[]; destinationIds: string[] | null; linkMs: number; sessionMs: number; max: number }, now = Date.now()): Promise<NewPortalSession | undefined> {
    if ((await this.list(input.tenantId, now)).length >= input.max) return undefined;
    const session: PortalSession = {
      id: newId('portalSession', now),
      tenant_id: input.tenantId,
      scopes: input.scopes,
      destination_ids: input.destinationIds,
      created_at: new Date(now).toISOString(),
      link_expires_at: new Date(now + input.linkMs).toISOString(),
      expires_at: new Date(now + input.sessionMs).toISOString(),
      opened_at: null,
    };
    const code = secret('hlc_');
    await this.redis
      .multi()
      .set(this.key('session', session.id), JSON.stringify(session), 'PX', input.sessionMs)
      .set(this.key('link', sha256(code)), session.id, 'PX', input.linkMs)
      .zadd(this.key('tenant', input.tenantId), now + input.sessionMs, session.id)
      // the index outlives its longest session; expired entries are dropped by score when listed
      .pexpire(this.key('tenant', input.tenantId), INDEX_TTL_MS)
      .exec();
    return { session, code };
  }

  /** The live sessions of a tenant, oldest first (expired ones are dropped from its index here). */
  async list(tenantId: string, now = Date.now()): Promise<PortalSession[]> {
    const index = this.key('tenant', tenantId);
    await this.redis.zremrangebyscore(index, '-inf', now);
    const ids = await this.redis.zrange(index, 0, -1);
    if (ids.length === 0) return [];
    const values = await this.redis.mget(ids.map((id) => this.key('session', id)));
    return values.filter((v): v is string => v !== null).map((v) => JSON.parse(v) as PortalSession);
  }

  async get(tenantId: string, id: string): Promise<PortalSession | undefined> {
    const v = await this.redis.get(this.key('session', id));
    const session = v === null ? undefined : (JSON.parse(v) as PortalSession);
    return session?.tenant_id === tenantId ? session : undefined;
  }

  /** Ends the session at once: its link and its token are refused from now on. */
  async revoke(tenantId: string, id: string): Promise<boolean> {
    if (!(await this.get(tenantId, id))) return false;
    await this.redis.multi().del(this.key('session', id)).zrem(this.key('tenant', tenantId), id).exec();
    return true;
  }

  /**
   * Trades a link's code for a session token, once: a code used before, expired, or of a revoked
   * session gives undefined. The token lives as long as the session.
   */
  async open(code: string, now = Date.now()): Promise<{ session: PortalSession; token: string } | undefined> {
    if (!CODE_PATTERN.test(code)) return undefined;
    const id = await this.redis.getdel(this.key('link', sha256(code)));
    if (id === null) return undefined;
    const raw = await this.redis.get(this.key('session', id));
    if (raw === null) return undefined;
    const session = JSON.parse(raw) as PortalSession;
    const ttl = Date.parse(session.expires_at) - now;
    if (ttl <= 0) return undefined;
    const opened: PortalSession = { ...session, opened_at: new Date(now).toISOString() };
    const token = secret('hls_');
    const written = await this.redis
      .multi()
      .set(this.key('session', id), JSON.stringify(opened), 'PX', ttl, 'XX')
      .set(this.key('token', sha256(token)), id, 'PX', ttl)
      .exec();
    // revoked between the two reads: the token must not outlive it
    if (written?.[0]?.[1] !== 'OK') {
      await this.redis.del(this.key('token', sha256(token)));
      return undefined;
    }
    return { session: opened, token };
  }

  /** The live session a token belongs to, or undefined (unknown, expired, revoked). */
  async sessionOf(token: string, now = Date.now()): Promise<PortalSession | undefined> {
    if (!TOKEN_PATTERN.test(token)) return undefined;
    const id = await this.redis.get(this.key('token', sha256(token)));
    if (id === null) return undefined;
    const raw = await this.redis.get(this.key('session', id));
    if (raw === null) return undefined;
    const session = JSON.parse(raw) as PortalSession;
    return Date.parse(session.expires_at) > now ? session : undefined;
  }

  /** Signs the browser out: the token and its session end. */
  async close(token: string): Promise<void> {
    const session = await this.sessionOf(token);
    await this.redis.del(this.key('token', sha256(token)));
    if (session) await this.revoke(session.tenant_id, session.id);
  }
}
