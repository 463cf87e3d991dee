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
] as const;

export type Scope = (typeof SCOPES)[number];

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
