import type { FieldError } from './errors';
import type { DestinationAuth } from './model';
import { maskValue } from './secrets/fields';

export const DESTINATION_AUTH_TYPES = ['basic', 'bearer', 'header'] as const;
/** Bounds of the credentials a destination may carry. */
export const AUTH_LIMITS = { username: 256, secretMin: 8, secret: 4096, headerName: 64 } as const;

/** Headers every delivery sets, or that belong to the connection: a destination cannot replace them. */
const RESERVED_HEADERS = new Set([
  'content-type', 'content-length', 'content-encoding', 'transfer-encoding', 'host', 'connection', 'keep-alive',
  'te', 'trailer', 'upgrade', 'expect', 'user-agent', 'webhook-id', 'webhook-timestamp', 'webhook-signature', 'x-correlation-id',
  'traceparent', 'tracestate',
]);
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Printable ASCII: a header value, once sent, must not split or fold. */
const VISIBLE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

type Members = Record<string, unknown>;

function text(a: Members, name: string, errors: FieldError[], bounds: { min: number; max: number; pattern: RegExp; what: string }): string {
  const v = a[name];
  const field = `auth.${name}`;
  if (typeof v !== 'string') {
    errors.push({ field, message: v === undefined ? 'is required' : 'must be a string' });
    return '';
  }
  if (v.length < bounds.min || v.length > bounds.max) errors.push({ field, message: `must be ${bounds.min} to ${bounds.max} characters` });
  else if (!bounds.pattern.test(v)) errors.push({ field, message: `must be ${bounds.what}` });
  return v;
}

/** Checks a destination's `auth` member; problems are reported by field, never echoing a value. */
export function parseDestinationAuth(value: unknown): { auth: DestinationAuth | null; errors: FieldError[] } {
  const errors: FieldError[] = [];
  if (value === undefined || value === null) return { auth: null, errors };
  if (typeof value !== 'object' || Array.isArray(value)) return { auth: null, errors: [{ field: 'auth', message: 'must be an object' }] };
  const a = value as Members;
  if (typeof a.type !== 'string' || !(DESTINATION_AUTH_TYPES as readonly string[]).includes(a.type)) {
    return { auth: null, errors: [{ field: 'auth.type', message: `must be one of ${DESTINATION_AUTH_TYPES.join(', ')}` }] };
  }
  const type = a.type as DestinationAuth['type'];
  const allowed = type === 'basic' ? ['username', 'password'] : type === 'bearer' ? ['token'] : ['name', 'value'];
  for (const k of Object.keys(a)) if (k !== 'type' && !allowed.includes(k)) errors.push({ field: `auth.${k}`, message: `is not a member of ${type} auth` });
  const secret = { min: AUTH_LIMITS.secretMin, max: AUTH_LIMITS.secret, pattern: VISIBLE, what: 'printable ASCII without leading or trailing spaces' };
  let auth: DestinationAuth;
  if (type === 'basic') {
    const username = text(a, 'username', errors, { min: 1, max: AUTH_LIMITS.username, pattern: /^[\x20-\x39\x3b-\x7e]+$/, what: 'printable ASCII without ":"' });
    auth = { type, username, password: text(a, 'password', errors, secret) };
  } else if (type === 'bearer') {
    auth = { type, token: text(a, 'token', errors, { ...secret, pattern: /^[\x21-\x7e]+$/, what: 'printable ASCII without spaces' }) };
  } else {
    const name = text(a, 'name', errors, { min: 1, max: AUTH_LIMITS.headerName, pattern: TOKEN, what: 'a header name (an HTTP token)' });
    if (TOKEN.test(name) && RESERVED_HEADERS.has(name.toLowerCase())) errors.push({ field: 'auth.name', message: `${name} is set by the service itself; use another header` });
    auth = { type, name: name.toLowerCase(), value: text(a, 'value', errors, secret) };
  }
  return { auth: errors.length > 0 ? null : auth, errors };
}

/** The header a delivery carries for the destination's credentials. */
export function authHeader(auth: DestinationAuth): [name: string, value: string] {
  switch (auth.type) {
    case 'basic':
      return ['authorization', `Basic ${Buffer.from(`${auth.username}:${auth.password}`, 'utf8').toString('base64')}`];
    case 'bearer':
      return ['authorization', `Bearer ${auth.token}`];
    case 'header':
      return [auth.name, auth.value];
  }
}

/** Credentials as the API shows them: the secret part masked as ingester secrets are. */
export function maskAuth(auth: DestinationAuth | null | undefined): Record<string, unknown> | null {
  if (!auth) return null;
  switch (auth.type) {
    case 'basic':
      return { type: auth.type, username: auth.username, password: maskValue(auth.password) };
    case 'bearer':
      return { type: auth.type, token: maskValue(auth.token) };
    case 'header':
      return { type: auth.type, name: auth.name, value: maskValue(auth.value) };
  }
}

/** The secret part of the credentials (what must never appear in clear outside memory). */
export function authSecret(auth: DestinationAuth | null | undefined): string | undefined {
  if (!auth) return undefined;
  return auth.type === 'basic' ? auth.password : auth.type === 'bearer' ? auth.token : auth.value;
}
