import type { FieldError } from './errors';
import type { DestinationAuth } from './model';
import { maskValue } from './secrets/fields';

/** Bounds of the credentials a destination may carry (the API document states them as its schema). */
export const AUTH_LIMITS = { username: 256, secretMin: 8, secret: 4096, headerName: 64 } as const;

/** Headers every delivery sets, or that belong to the connection: a destination cannot replace them. */
const RESERVED_HEADERS = new Set([
  'content-type', 'content-length', 'content-encoding', 'transfer-encoding', 'host', 'connection', 'keep-alive',
  'te', 'trailer', 'upgrade', 'expect', 'user-agent', 'webhook-id', 'webhook-timestamp', 'webhook-signature', 'x-correlation-id',
  'traceparent', 'tracestate',
]);

/**
 * Credentials of the shape the API document allows, as the service keeps them: a header name
 * lower-case, and refused when the service sets that header itself. Problems name the field,
 * never echoing a value.
 */
export function acceptDestinationAuth(auth: DestinationAuth): { auth: DestinationAuth; errors: FieldError[] } {
  if (auth.type !== 'header') return { auth, errors: [] };
  const name = auth.name.toLowerCase();
  const errors = RESERVED_HEADERS.has(name) ? [{ field: 'auth.name', message: `${auth.name} is set by the service itself; use another header` }] : [];
  return { auth: { ...auth, name }, errors };
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
