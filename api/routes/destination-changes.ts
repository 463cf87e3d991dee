import express, { type Request, type Response, type Router } from 'express';
import { actionOf, changedMembers } from '../../core/destination-changes';
import { AppError, notFound, unprocessable, validationError, type FieldError } from '../../core/errors';
import { newId } from '../../core/ids';
import { errorMessage, type Logger } from '../../core/log';
import type { ApiKey, Destination, DestinationAuth, DestinationType } from '../../core/model';
import { newSigningSecret } from '../../core/signing/standard-webhooks';
import type { ClickHouseClient } from '@clickhouse/client';
import type { Redis } from 'ioredis';
import { DestinationChangeLog } from '../../platform/clickhouse/destination-changes';
import type { ConfigStore } from '../../platform/config-store/config-store';
import { EntityLocks } from '../../platform/redis/entity-locks';
import { authOf, requireResource, requireScope } from '../auth';
import { decodeCursor, encodeCursor } from '../cursor';
import { parseLimit } from '../paging';
import type { NameClaims } from '../ports';
import { validateBody, type BodyOperation } from '../validation';
import { checkTransformation, destinationView, etagOf, holdsName, READ_ONLY_MEMBERS, readAuth, readFilter, checkEventTypes, refusalOfTarget, setEtag, typeMemberProblems, unmaskAuth, withStoredSecret, type TypeMembers } from './destination-members';
import { acceptDestinationAuth } from '../../core/destination-auth';
import type { Transformer } from '../../pipeline/deliver/transform/transformer';

/** Notes one change of a destination in its history (before absent: created; after absent: deleted). */
export type ChangeRecorder = (key: ApiKey, before: Destination | undefined, after: Destination | undefined, rotated?: boolean) => Promise<void>;

/**
 * A recorder writing to the history table right after the configuration write. The write has
 * happened by then: a failed insert is logged, and the answer still tells the change.
 */
export function changeRecorder(log: DestinationChangeLog, logger?: Logger): ChangeRecorder {
  return async (key, before, after, rotated = false) => {
    const d = (after ?? before)!;
    const at = new Date().toISOString();
    const change = { id: newId('change'), tenant_id: d.tenant_id, destination_id: d.id, at, actor: key.id, action: actionOf(before, after, rotated), changes: changedMembers(before, after), cause: null };
    try {
      await log.record(change);
    } catch (err) {
      logger?.error('destination change not recorded in the history', { tenant_id: d.tenant_id, destination_id: d.id, change_id: change.id, action: change.action, error: errorMessage(err) });
    }
  };
}

/** Longest signing-secret overlap a rotation may ask for (7 days), and the default (1 day). */
export const MAX_OVERLAP_SECONDS = 604_800;
export const DEFAULT_OVERLAP_SECONDS = 86_400;
/** The members a patch or a replacement may set, beside the read-only ones a GET shows. */
const SETTABLE = ['name', 'type', 'url', 'config', 'transformation', 'retry_schedule_ms', 'auth', 'enabled', 'rate_limit_per_s', 'ordered', 'event_types', 'filter'] as const;
const KNOWN = new Set<string>([...SETTABLE, ...READ_ONLY_MEMBERS]);

interface ChangeBody {
  name?: string;
  type?: DestinationType;
  url?: string;
  config?: Record<string, unknown> | null;
  transformation?: string | null;
  retry_schedule_ms?: number[] | null;
  auth?: DestinationAuth | null;
  enabled?: boolean;
  rate_limit_per_s?: number | null;
  ordered?: boolean;
  event_types?: string[] | null;
  filter?: unknown[] | null;
  [readOnly: string]: unknown;
}

export interface DestinationChangeDeps {
  store: ConfigStore;
  claims: NameClaims;
  locks: EntityLocks;
  history: DestinationChangeLog;
  record: ChangeRecorder;
  httpsOnly?: boolean;
  refusalOf(url: string): Promise<string | null>;
  /** The sandbox's check of a transformation (see DestinationsOptions). */
  checkTransformation?: (code: string) => Promise<string | undefined>;
}

/**
 * The type, url, config and credentials a change leaves the destination with: each given, or
 * (a patch) kept, or (a replacement) its default; credentials as they will be kept.
 */
function typeMembersAfter(cur: Destination, b: ChangeBody, has: (m: string) => boolean, mode: 'patch' | 'replace', auth: DestinationAuth | null | undefined): TypeMembers {
  const keep = mode === 'patch';
  return {
    type: has('type') ? (b.type ?? 'webhook') : keep ? (cur.type ?? 'webhook') : 'webhook',
    url: b.url ?? cur.url,
    config: has('config') ? (b.config ?? null) : keep ? (cur.config ?? null) : null,
    auth: has('auth') || !keep ? (auth ?? null) : (cur.auth ?? null),
  };
}

/** Whether an If-Match header admits the current ETag: `*`, or one of its strong tags. */
function ifMatchHolds(header: string | undefined, current: string | undefined): boolean {
  if (header === undefined) return true;
  const tags = header.split(',').map((t) => t.trim()).filter(Boolean);
  if (tags.includes('*')) return current !== undefined;
  return current !== undefined && tags.includes(current);
}

/**
 * Changes of a destination made by operators: merge-patch (RFC 7396) and whole replacement,
 * signing-secret rotation with an overlap, and the history of every change. A write reads,
 * checks and writes under a short per-destination lock in Redis, after catching up with the
 * configuration topic, so that If-Match holds across API processes.
 */
export function destinationChangesRouter(deps: DestinationChangeDeps): Router {
  const { store } = deps;
  const router = express.Router({ mergeParams: true });

  const find = (res: Response, id: string): Destination => {
    const d = store.get('destination', authOf(res).tenant_id, id);
    if (!d) throw notFound(`destination ${id}`);
    requireResource(res, d.id);
    return d;
  };

  /** Runs `write` on the current version under the destination's lock, once If-Match admits it. */
  async function underLock<T>(req: Request, res: Response, id: string, write: (current: Destination) => Promise<T>): Promise<T> {
    const key = authOf(res);
    return deps.locks.withLock(`destination:${key.tenant_id}:${id}`, async () => {
      // a write another API process made before this lock was taken is applied here first
      await store.sync();
      const current = find(res, id);
      const ifMatch = req.headers['if-match'];
      if (!ifMatchHolds(ifMatch, etagOf(store, current))) {
        throw new AppError('precondition-failed', `the destination has changed since ${ifMatch}: it is now at ${etagOf(store, current)}; read it again and retry`);
      }
      return write(current);
    });
  }

  /** Reads a patch (only the members given change) or a replacement (absent members take their defaults). */
  async function change(req: Request, res: Response, mode: 'patch' | 'replace'): Promise<void> {
    const key = authOf(res);
    const id = String(req.params.destinationId);
    find(res, id);
    const raw: unknown = req.body ?? {};
    const object = typeof raw === 'object' && raw !== null && !Array.isArray(raw);
    const unknown = object ? Object.keys(raw).filter((k) => !KNOWN.has(k)) : [];
    const known = object ? Object.fromEntries(Object.entries(raw as Record<string, unknown>).filter(([k]) => KNOWN.has(k))) : raw;
    const operation: BodyOperation = mode === 'patch' ? 'patchDestination' : 'replaceDestination';
    const current = store.get('destination', key.tenant_id, id);
    // as sent: a masked secret is resolved again against the version the lock holds
    const sentAuth = object ? (known as ChangeBody).auth : undefined;
    const check = validateBody<ChangeBody>(operation, withStoredSecret(known, current?.auth));
    const b = check.body;
    const has = (m: string) => Object.prototype.hasOwnProperty.call(b, m);
    if (current && ['type', 'url', 'config', 'auth'].every((f) => check.usable(f))) {
      const held = b.auth ? acceptDestinationAuth(b.auth).auth : null;
      for (const e of typeMemberProblems(typeMembersAfter(current, b, has, mode, held), deps.httpsOnly)) check.fail(e.field, e.message);
    }
    if (has('transformation')) await checkTransformation(check, b.transformation, deps.checkTransformation);
    let refused: FieldError[] = [];
    let filter: unknown[] | null | undefined;
    if (has('filter')) filter = b.filter === null ? null : ({ filter, refused } = readFilter(check, b.filter!)).filter;
    if (has('event_types')) checkEventTypes(check, b.event_types);
    // the credentials are read against the latest version again under the lock; this finds the malformed
    if (b.auth) readAuth(check, b.auth, current?.auth);
    check.done();
    if (unknown.length > 0) throw unprocessable(unknown.map((field) => ({ field, message: 'is not a member of this body' })));
    if (refused.length > 0) throw unprocessable(refused);
    if (current && (b.url !== undefined || has('type'))) {
      const after = typeMembersAfter(current, b, has, mode, null);
      const refusal = await refusalOfTarget(deps.refusalOf, after.type, after.url);
      if (refusal !== null) throw unprocessable([{ field: 'url', message: refusal }]);
    }

    const { destination, etag } = await underLock(req, res, id, async (cur) => {
      const shown = destinationView(cur) as Record<string, unknown>;
      const readOnly = READ_ONLY_MEMBERS.filter((m) => has(m) && JSON.stringify(b[m]) !== JSON.stringify(shown[m]));
      if (readOnly.length > 0) throw unprocessable(readOnly.map((field) => ({ field, message: 'is read-only: accepted only as the destination shows it now' })));
      const take = <V>(member: string, value: V | undefined, fallback: V): V => (has(member) ? (value as V) : mode === 'replace' ? fallback : (undefined as V));
      const next: Destination = { ...cur };
      const name = has('name') ? b.name!.trim() : undefined;
      if (name !== undefined) next.name = name;
      if (b.url !== undefined) next.url = b.url;
      if (has('type') || mode === 'replace') next.type = b.type ?? 'webhook';
      if (has('config') || mode === 'replace') next.config = b.config ?? null;
      if (has('transformation') || mode === 'replace') next.transformation = b.transformation ?? null;
      const schedule = take('retry_schedule_ms', b.retry_schedule_ms, null);
      if (schedule !== undefined) next.retry_schedule_ms = schedule;
      // a masked secret stands for the secret of this version, the one the lock holds; when
      // that one is another, for the secret it was checked as
      const held = sentAuth ? unmaskAuth(sentAuth, cur.auth) : undefined;
      if (has('auth') || mode === 'replace') next.auth = b.auth ? acceptDestinationAuth(held && held !== sentAuth ? held : b.auth).auth : null;
      const rate = take('rate_limit_per_s', b.rate_limit_per_s, null);
      if (rate !== undefined) next.rate_limit_per_s = rate;
      const ordered = take('ordered', b.ordered, false);
      if (ordered !== undefined) next.ordered = ordered;
      const types = take('event_types', b.event_types, null);
      if (types !== undefined) next.event_types = types;
      if (has('filter') || mode === 'replace') next.filter = filter ?? null;
      // another write may have changed what this one's members depend on since they were checked
      const stale = typeMemberProblems({ type: next.type ?? 'webhook', url: next.url, config: next.config ?? null, auth: next.auth ?? null }, deps.httpsOnly);
      if (stale.length > 0) throw validationError(stale);
      const enabled = has('enabled') ? b.enabled! : mode === 'replace' ? true : undefined;
      // sending back what a GET shows changes nothing: only a different `enabled` moves the status
      if (enabled !== undefined && enabled !== (cur.status === 'active')) {
        next.status = enabled ? 'active' : 'paused';
        if (enabled) next.disabled_reason = null;
      }
      if (Object.keys(changedMembers(cur, next)).length === 0) return { destination: cur, etag: etagOf(store, cur) };

      const renamed = name !== undefined && name.toLowerCase() !== cur.name.toLowerCase();
      if (renamed && !(await deps.claims.claim(key.tenant_id, 'destination-name', name, cur.id, holdsName(store, key.tenant_id, name)))) {
        throw new AppError('conflict', `a destination named "${name}" already exists`);
      }
      next.updated_at = new Date().toISOString();
      let applied = false;
      try {
        applied = await store.update(next);
      } finally {
        if (renamed && !applied) await deps.claims.release(key.tenant_id, 'destination-name', name, cur.id);
      }
      if (!applied) throw notFound(`destination ${id}`);
      if (renamed) await deps.claims.release(key.tenant_id, 'destination-name', cur.name, cur.id);
      await deps.record(key, cur, next);
      return { destination: next, etag: etagOf(store, next) };
    });
    if (etag) res.setHeader('etag', etag);
    res.json(destinationView(destination));
  }

  router.patch('/:destinationId', requireScope('write:destinations'), (req, res) => change(req, res, 'patch'));
  router.put('/:destinationId', requireScope('write:destinations'), (req, res) => change(req, res, 'replace'));

  /**
   * A new signing secret. The old one keeps signing beside it for `overlap_seconds` (every
   * delivery carries both signatures meanwhile), so receivers can switch without a gap.
   */
  router.post('/:destinationId/rotate-secret', requireScope('write:destinations'), async (req, res) => {
    const key = authOf(res);
    const id = String(req.params.destinationId);
    find(res, id);
    const check = validateBody<{ overlap_seconds?: number }>('rotateDestinationSecret', req.body ?? {});
    check.done();
    const overlap = check.body.overlap_seconds ?? DEFAULT_OVERLAP_SECONDS;
    const rotated = await underLock(req, res, id, async (cur) => {
      const expires = overlap > 0 ? new Date(Date.now() + overlap * 1000).toISOString() : null;
      const next: Destination = {
        ...cur,
        signing_secret: newSigningSecret(),
        previous_signing_secret: expires ? cur.signing_secret : null,
        previous_secret_expires_at: expires,
        updated_at: new Date().toISOString(),
      };
      if (!(await store.update(next))) throw notFound(`destination ${id}`);
      await deps.record(key, cur, next, true);
      return next;
    });
    setEtag(res, store, rotated);
    // the new secret is shown here once, as on creation
    res.json({ id: rotated.id, signing_secret: rotated.signing_secret, previous_secret_expires_at: rotated.previous_secret_expires_at ?? null });
  });

  /** The destination's history, newest first; also of a deleted destination while it has one. */
  router.get('/:destinationId/changes', requireScope('read:destinations'), async (req, res) => {
    const key = authOf(res);
    const id = String(req.params.destinationId);
    requireResource(res, id);
    const limit = parseLimit(req.query.limit);
    const filters = { destination: id };
    let before: string | undefined;
    if (typeof req.query.cursor === 'string' && req.query.cursor !== '') {
      const [last] = decodeCursor(req.query.cursor, filters);
      if (typeof last !== 'string') throw new AppError('validation-error', 'the cursor is not one this API issued', { errors: [{ field: 'cursor', message: 'is not a valid cursor' }] });
      before = last;
    }
    const rows = await deps.history.page(key.tenant_id, id, limit + 1, before);
    if (rows.length === 0 && before === undefined && !store.get('destination', key.tenant_id, id)) throw notFound(`destination ${id}`);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    res.json({ changes: page.map(({ destination_id: _d, ...c }) => c), next_cursor: rows.length > limit && last ? encodeCursor([last.id], filters) : null });
  });

  return router;
}

/** The dependencies of the routes above from what the API has once the service is up. */
export function destinationChangeDepsOf(s: { store: ConfigStore; claims: NameClaims; redis: Redis; redisPrefix: string; clickhouse: ClickHouseClient; clickhouseDatabase: string; destinationHttpsOnly: boolean; refusalOfDestination(url: string): Promise<string | null>; transformer?: Transformer }, log?: Logger): DestinationChangeDeps {
  const history = new DestinationChangeLog(s.clickhouse, s.clickhouseDatabase);
  const transformer = s.transformer;
  return { store: s.store, claims: s.claims, locks: new EntityLocks(s.redis, s.redisPrefix), history, record: changeRecorder(history, log), httpsOnly: s.destinationHttpsOnly, refusalOf: (url) => s.refusalOfDestination(url), ...(transformer ? { checkTransformation: (code: string) => transformer.check(code) } : {}) };
}
