/** Every scope a tenant API key can hold. `read:x` lets a key read x, `write:x` change it. */
export const SCOPES = [
  'read:destinations',
  'write:destinations',
  'read:ingesters',
  'write:ingesters',
  'read:flows',
  'write:flows',
  'read:deliveries',
  'read:events',
  'write:events',
  'read:evidence',
  'read:logs',
  'read:payloads',
  'write:payloads',
  'read:operations',
  'read:keys',
  'write:keys',
  'read:event-types',
  'write:event-types',
  'read:replays',
  'write:replays',
  'read:stats',
  'read:portal-sessions',
  'write:portal-sessions',
] as const;

export type Scope = (typeof SCOPES)[number];

/**
 * What a portal session may do when its maker names no scopes: manage destinations and their
 * subscriptions, read the catalogue, send test events and retry, read deliveries and evidence.
 */
export const PORTAL_DEFAULT_SCOPES: readonly Scope[] = ['read:destinations', 'write:destinations', 'read:event-types', 'read:deliveries', 'read:events', 'write:events', 'read:evidence', 'read:payloads', 'read:stats'];

/** Scopes a portal session may never hold: the portal must not make keys, sessions, or Hook URLs. */
export const NOT_FOR_PORTALS: readonly Scope[] = ['read:keys', 'write:keys', 'read:portal-sessions', 'write:portal-sessions', 'write:ingesters', 'read:ingesters', 'write:flows'];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/** Parses "all" or a comma list; returns the unknown names separately so callers can report them. */
export function parseScopes(list: string): { scopes: Scope[]; unknown: string[] } {
  const names = list.split(',').map((s) => s.trim()).filter(Boolean);
  if (names.length === 1 && names[0] === 'all') return { scopes: [...SCOPES], unknown: [] };
  const scopes = [...new Set(names.filter(isScope))];
  return { scopes, unknown: names.filter((n) => !isScope(n)) };
}
