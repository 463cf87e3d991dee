import type { Response } from 'express';
import { acceptDestinationAuth, authSecret } from '../../core/destination-auth';
import type { FieldError } from '../../core/errors';
import { parseFilters, type FilterRule } from '../../core/filters';
import { eventTypesProblems } from '../../core/subscriptions';
import { shownMembers } from '../../core/destination-changes';
import type { Destination, DestinationAuth } from '../../core/model';
import { maskValue } from '../../core/secrets/fields';
import type { ConfigStore } from '../../platform/config-store/config-store';
import type { BodyCheck } from '../validation';

/**
 * What a destination body may carry beside name and url, read the same way by create, patch and
 * replace: the checks the schema cannot make, and the values as the service keeps them.
 */

/** The destination as the API shows it: credentials masked, the signing secrets never. */
export function destinationView(d: Destination) {
  return { id: d.id, ...shownMembers(d), created_at: d.created_at, updated_at: d.updated_at };
}

/** The members of a destination body the service sets: a body may carry them only as they are. */
export const READ_ONLY_MEMBERS = ['id', 'status', 'created_at', 'updated_at', 'disabled_reason', 'previous_secret_expires_at'] as const;

/** What the schema cannot say of a URL: that it parses as the delivery will parse it, without credentials. */
export function urlProblem(url: string): string | undefined {
  try {
    const u = new URL(url);
    return u.username || u.password ? 'must not carry credentials' : undefined;
  } catch {
    return 'must be an absolute URL';
  }
}

/** Collects the URL's problems on the check (the schema has already found it a string). */
export function checkUrl<T>(check: BodyCheck<T>, url: string, httpsOnly: boolean | undefined): void {
  if (!check.usable('url')) return;
  const problem = urlProblem(url);
  if (problem) check.fail('url', problem);
  else if (httpsOnly && /^http:/i.test(url.trim())) check.fail('url', 'must be an https: URL on this deployment');
}

/**
 * Credentials as the service keeps them. A secret sent back as a GET shows it (masked) stands
 * for the stored one, so an object read and sent back never replaces a secret with stars.
 */
export function readAuth<T>(check: BodyCheck<T>, auth: DestinationAuth, current: DestinationAuth | null | undefined): DestinationAuth | null {
  if (!check.usable('auth')) return null;
  const accepted = acceptDestinationAuth(unmaskAuth(auth, current));
  for (const e of accepted.errors) check.fail(e.field, e.message);
  return accepted.auth;
}

/**
 * The body as it is checked: a secret sent back masked stands for the stored secret and is
 * checked in its place, since a mask may be shorter than a secret can be.
 */
export function withStoredSecret(body: unknown, current: DestinationAuth | null | undefined): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  const auth = (body as { auth?: unknown }).auth;
  if (typeof auth !== 'object' || auth === null) return body;
  return { ...body, auth: unmaskAuth(auth as DestinationAuth, current) };
}

export function unmaskAuth(auth: DestinationAuth, current: DestinationAuth | null | undefined): DestinationAuth {
  const stored = authSecret(current);
  if (stored === undefined || current?.type !== auth.type || authSecret(auth) !== maskValue(stored)) return auth;
  switch (auth.type) {
    case 'basic':
      return { ...auth, password: stored };
    case 'bearer':
      return { ...auth, token: stored };
    case 'header':
      return { ...auth, value: stored };
  }
}

/**
 * Subscription filter rules in the exact form of ingester filters, checked by the same parser;
 * its problems are renamed to the `filter` member. `refused` are well-formed rules the regex
 * engine cannot run (422 once nothing is malformed).
 */
export function readFilter<T>(check: BodyCheck<T>, filter: unknown[]): { filter: FilterRule[]; refused: FieldError[] } {
  if (!check.usable('filter')) return { filter: [], refused: [] };
  const parsed = parseFilters(filter);
  const rename = (e: FieldError) => ({ field: e.field.replace(/^filters/, 'filter'), message: e.message });
  for (const e of parsed.errors) check.fail(rename(e).field, e.message);
  return { filter: parsed.filters, refused: parsed.refused.map(rename) };
}

/** The ETag of the destination's current version (the offset of the config record that wrote it). */
export function etagOf(store: ConfigStore, d: Destination): string | undefined {
  const v = store.versionOf('destination', d.tenant_id, d.id);
  return v === undefined ? undefined : `"${v}"`;
}

export function setEtag(res: Response, store: ConfigStore, d: Destination): void {
  const tag = etagOf(store, d);
  if (tag) res.setHeader('etag', tag);
}

/**
 * Whether a name claim's owner still holds the name: it exists and is still called so. A
 * destination renamed away whose old claim was never released does not keep the name.
 */
export function holdsName(store: ConfigStore, tenantId: string, name: string) {
  return (owner: string): boolean => store.get('destination', tenantId, owner)?.name.toLowerCase() === name.toLowerCase();
}

/** What the schema's pattern cannot say of subscribed event types: a `*` only at the end, no entry twice. */
export function checkEventTypes<T>(check: BodyCheck<T>, types: unknown): void {
  if (!check.usable('event_types')) return;
  for (const e of eventTypesProblems(types)) check.fail(e.field, e.message);
}
