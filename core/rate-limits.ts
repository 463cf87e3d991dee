/** Per-route rate limits as configured (RATE_LIMITS); the API enforces them in Redis. */
export interface RateLimit {
  limit: number;
  windowSeconds: number;
}

export interface RateLimits {
  default: RateLimit;
  /** Keyed by `METHOD /pattern`, e.g. `POST /v1/tenants/:tenantId/destinations`. */
  routes: Record<string, RateLimit>;
}

/** Used when a spec names no `default`, so that an empty setting still limits. */
export const DEFAULT_RATE_LIMIT: RateLimit = { limit: 100, windowSeconds: 60 };

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600 };

/**
 * `default=100/60s;POST /v1/tenants/:tenantId/destinations=20/60s;...` — entries split on `;`,
 * each `<default | METHOD /path>=<limit>/<window>` with the window in s (also bare), m or h.
 * Malformed entries are left out and named in `errors`, so the config module can list every
 * problem at once instead of stopping at the first.
 */
export function parseRateLimits(spec: string): { limits: RateLimits; errors: string[] } {
  const limits: RateLimits = { default: DEFAULT_RATE_LIMIT, routes: {} };
  const errors: string[] = [];
  const seen = new Set<string>();
  for (const raw of spec.split(';')) {
    const part = raw.trim();
    if (!part) continue;
    const eq = part.lastIndexOf('=');
    const name = eq > 0 ? part.slice(0, eq).trim() : '';
    const value = eq > 0 ? /^(\d{1,9})\/(\d{1,7})([smh]?)$/.exec(part.slice(eq + 1).trim()) : null;
    if (!name || !value) {
      errors.push(`rate limit "${part}": expected <default | METHOD /path>=<limit>/<window>, e.g. default=100/60s`);
      continue;
    }
    const limit = Number(value[1]);
    const windowSeconds = Number(value[2]) * UNIT_SECONDS[value[3] || 's']!;
    // A day at most: longer quotas are not what this is for, and it keeps µs times exact in Lua.
    if (limit < 1 || windowSeconds < 1 || windowSeconds > 86_400) {
      errors.push(`rate limit "${part}": the limit must be at least 1 and the window 1 s to 1 day`);
      continue;
    }
    const key = name === 'default' ? name : routeKey(name);
    if (!key) {
      errors.push(`rate limit "${part}": "${name}" is neither default nor "METHOD /path"`);
    } else if (seen.has(key)) {
      errors.push(`rate limit "${part}": ${key} is given more than once`);
    } else {
      seen.add(key);
      if (key === 'default') limits.default = { limit, windowSeconds };
      else limits.routes[key] = { limit, windowSeconds };
    }
  }
  return { limits, errors };
}

function routeKey(name: string): string | undefined {
  const m = /^([A-Za-z]+)\s+(\/\S*)$/.exec(name);
  if (!m || !METHODS.has(m[1]!.toUpperCase())) return undefined;
  return `${m[1]!.toUpperCase()} ${trimSlash(m[2]!)}`;
}

export function trimSlash(path: string): string {
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}


/**
 * One limit as `N/window` (window in s, also bare, m or h) or `off`: the ingest limits
 * (INGEST_RATE_LIMIT_PER_HOOK, INGEST_RATE_LIMIT_PER_TENANT). `off` is `null`.
 */
export function parseRateLimit(spec: string): { limit: RateLimit | null; error?: string } {
  const v = spec.trim();
  if (v.toLowerCase() === 'off') return { limit: null };
  const m = /^(\d{1,9})\/(\d{1,7})([smh]?)$/.exec(v);
  if (!m) return { limit: null, error: `expected N/window (window in s, m or h, e.g. 500/1s) or off, got "${v}"` };
  const limit = Number(m[1]);
  const windowSeconds = Number(m[2]) * UNIT_SECONDS[m[3] || 's']!;
  if (limit < 1 || windowSeconds < 1 || windowSeconds > 86_400) return { limit: null, error: `"${v}": the limit must be at least 1 and the window 1 s to 1 day` };
  return { limit: { limit, windowSeconds } };
}
