import type { Response } from 'express';
import { acceptDestinationAuth, authSecret } from '../../core/destination-auth';
import type { FieldError } from '../../core/errors';
import { parseFilters, type FilterRule } from '../../core/filters';
import { eventTypesProblems } from '../../core/subscriptions';
import { shownMembers } from '../../core/destination-changes';
import type { Destination, DestinationAuth, DestinationType } from '../../core/model';
import { DESTINATION_TYPE_SPECS, endpointsOf, MAX_TRANSFORMATION_BYTES, templateProblem } from '../../core/destination-types';
import { maskValue } from '../../core/secrets/fields';
import type { ConfigStore } from '../../platform/config-store/config-store';
import { memberProblems, type BodyCheck } from '../validation';

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

/** What decides where a destination's deliveries go, taken together: each depends on the type. */
export interface TypeMembers {
  type: DestinationType;
  url: string;
  config: Record<string, unknown> | null;
  auth: DestinationAuth | null;
}

/** Whether a broker destination's connection is encrypted: its scheme, or its config's `tls`. */
function encrypted(type: DestinationType, scheme: string, config: Record<string, unknown> | null): boolean {
  if (scheme === 'amqps' || scheme === 'mqtts') return true;
  return (type === 'kafka' || type === 'nats') && config?.tls === true;
}

/**
 * The problems of a destination's url, config and credentials against its type (the schemas of
 * core/destination-types.ts, as GET /v1/destination-types serves them), named by field.
 */
export function typeMemberProblems(m: TypeMembers, httpsOnly: boolean | undefined): FieldError[] {
  const spec = DESTINATION_TYPE_SPECS[m.type];
  const problems: FieldError[] = [];
  if (m.type === 'webhook') {
    const problem = /^https?:\/\//i.test(m.url.trim()) ? urlProblem(m.url) : 'must be an http or https URL';
    if (problem) problems.push({ field: 'url', message: problem });
    else if (httpsOnly && /^http:/i.test(m.url.trim())) problems.push({ field: 'url', message: 'must be an https: URL on this deployment' });
    if (m.config !== null) problems.push({ field: 'config', message: 'must be null for a webhook destination (its settings are its url and members)' });
  } else {
    const parsed = endpointsOf(m.type, m.url);
    if ('problem' in parsed) problems.push({ field: 'url', message: parsed.problem });
    else if (httpsOnly && !encrypted(m.type, parsed.scheme, m.config)) problems.push({ field: 'url', message: `must use TLS on this deployment (${m.type === 'kafka' || m.type === 'nats' ? 'config.tls true' : `the ${spec.schemes[1]}: scheme`})` });
    if (m.config === null) problems.push({ field: 'config', message: `is required for a ${m.type} destination (GET /v1/destination-types gives its schema)` });
    else {
      problems.push(...memberProblems(spec.config_schema!, m.config, 'config'));
      const key = m.type === 'kafka' ? m.config.key : undefined;
      const keyProblem = typeof key === 'string' ? templateProblem(key) : undefined;
      if (keyProblem) problems.push({ field: 'config.key', message: keyProblem });
      if (m.type === 'kafka' && typeof m.config.sasl_mechanism === 'string' && m.auth?.type !== 'basic') problems.push({ field: 'auth', message: 'must be basic (username and password) when config.sasl_mechanism is set' });
    }
  }
  if (m.auth && !spec.auth_types.includes(m.auth.type)) problems.push({ field: 'auth.type', message: `must be ${spec.auth_types.join(' or ')} for a ${m.type} destination` });
  return problems;
}

/** Collects the problems of the type members on the check, once the schema found each of them well-formed. */
export function checkTypeMembers<T>(check: BodyCheck<T>, m: TypeMembers, httpsOnly: boolean | undefined): void {
  if (!['type', 'url', 'config', 'auth'].every((f) => check.usable(f))) return;
  for (const e of typeMemberProblems(m, httpsOnly)) check.fail(e.field, e.message);
}

/**
 * Why the destination's address is refused (SSRF policy, a loop to this service, the service's
 * own infrastructure), or null: a webhook's URL, or each server a broker URL names.
 */
export async function refusalOfTarget(refusalOf: (url: string) => Promise<string | null>, type: DestinationType, url: string): Promise<string | null> {
  if (type === 'webhook') return refusalOf(url);
  const parsed = endpointsOf(type, url);
  if ('problem' in parsed) return parsed.problem;
  for (const { host, port } of parsed.endpoints) {
    const refusal = await refusalOf(`http://${host.includes(':') ? `[${host}]` : host}:${port}/`);
    if (refusal !== null) return refusal;
  }
  return null;
}

/**
 * A transformation's problems: its size in bytes (the schema counts characters), then whether
 * it compiles and defines transform, as the sandbox that runs it says.
 */
export async function checkTransformation<T>(check: BodyCheck<T>, code: string | null | undefined, compile: ((code: string) => Promise<string | undefined>) | undefined): Promise<void> {
  if (typeof code !== 'string' || !check.usable('transformation')) return;
  if (Buffer.byteLength(code, 'utf8') > MAX_TRANSFORMATION_BYTES) return check.fail('transformation', `must be at most ${MAX_TRANSFORMATION_BYTES} bytes`);
  const problem = compile ? await compile(code) : 'cannot be checked: this process runs no transformation sandbox';
  if (problem) check.fail('transformation', problem);
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
