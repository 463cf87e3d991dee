import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Redis } from 'ioredis';
import { AppError } from '../core/errors';
import { withTimeout } from '../core/timeout';
import { errorMessage, type Logger } from '../core/log';
import type { Authenticated } from './auth';
import { requestLog } from './request-log';
import { routeTemplateOf } from './route-templates';

import type { RateLimits } from '../core/rate-limits';
import { trimSlash } from '../core/rate-limits';
export { DEFAULT_RATE_LIMIT, parseRateLimits, type RateLimit, type RateLimits } from '../core/rate-limits';

const TYPED_ID = /^[a-z]{3}_[0-9a-z]{26}$/;

/**
 * The route pattern of a request. Mounted before routing (as app.ts would), `req.route` is not
 * known yet, so the path itself is turned into a pattern: the segment after /tenants/ becomes
 * :tenantId and typed ids (`dst_<ulid>`) become :id. `req.baseUrl` holds the matched path, not
 * its pattern, so it is normalised the same way. Routes whose own params are not typed ids
 * need a `routeOf` from the caller.
 */
export function defaultRouteOf(req: Request): string {
  const routePath: unknown = (req.route as { path?: unknown } | undefined)?.path;
  const base = normalisePath(req.baseUrl);
  const path = typeof routePath === 'string' ? base + routePath : base + normalisePath(req.path);
  return `${req.method} ${trimSlash(path) || '/'}`;
}

function normalisePath(path: string): string {
  const segments = path.split('/');
  return segments
    .map((s, i) => (segments[i - 1] === 'tenants' && s && !s.startsWith(':') ? ':tenantId' : TYPED_ID.test(s) ? ':id' : s))
    .join('/');
}

/*
 * GCRA (a token bucket kept as one "theoretical arrival time"): one small key per bucket and
 * constant work per call whatever the limit, where a sliding-window log keeps up to `limit`
 * members per key and trims them on every call, and a fixed window lets a burst of twice the
 * limit through around a window edge. A full bucket admits at most `limit` at once, then refills
 * steadily at limit/window (so a full window's span can see the burst plus the refill).
 * The clock is Redis TIME, so API processes with skewed clocks still share one bucket
 * (scripts replicate by effects since Redis 5, which makes TIME before a write allowed).
 * Times are integer microseconds; TAT is written with %.0f because Lua's default number
 * format keeps only 14 digits. Returns {allowed, remaining, reset µs, retry-after µs}.
 */
const GCRA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2]) * 1000000
local interval = window / limit
local tat = math.max(tonumber(redis.call('GET', KEYS[1]) or now), now)
local allow_at = tat + interval - window
if now < allow_at then
  return {0, 0, math.ceil(tat - now), math.ceil(allow_at - now)}
end
tat = tat + interval
redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', math.max(1, math.ceil((tat - now) / 1000)))
return {1, math.floor((window - (tat - now)) / interval + 1e-6), math.ceil(tat - now), 0}
`;

const COMMAND = 'hooklineRateLimitGcra';
type GcraCommand = (key: string, limit: number, windowSeconds: number) => Promise<[number, number, number, number]>;

/** Known to be down: answer at once instead of waiting for the timeout on every request. */
const DOWN = new Set(['reconnecting', 'close', 'end']);
const LOG_EVERY_MS = 60_000;

export interface RateLimitOptions {
  redis: Redis;
  /** Key prefix, e.g. the topic prefix, so deployments sharing a Redis keep apart. */
  prefix: string;
  limits: RateLimits;
  log: Logger;
  /** `METHOD /pattern` of a request; default {@link defaultRouteOf}, or the match among `routes`. */
  routeOf?: (req: Request) => string;
  /** Route templates (`GET /v1/tenants/:tenantId/destinations/:id`) to key buckets by; see {@link routeTemplateOf}. */
  routes?: readonly string[];
  /** Longest wait for Redis before the request goes through unlimited; default 250 ms. */
  timeoutMs?: number;
}

/**
 * Limits per API key and route, after `authenticate`; requests without a key pass untouched.
 * When Redis cannot answer, requests pass without RateLimit headers (fail open): limits protect
 * the API from overload, and refusing every client while Redis is down would be a worse outage
 * than briefly unlimited traffic. The outage is logged at most once a minute.
 */
export function rateLimit(options: RateLimitOptions): RequestHandler {
  const { redis, prefix, limits, log } = options;
  const routeOf = options.routeOf ?? (options.routes ? routeTemplateOf(options.routes) : defaultRouteOf);
  const timeoutMs = options.timeoutMs ?? 250;
  // ioredis runs it with EVALSHA and falls back to EVAL when the script cache lacks it.
  redis.defineCommand(COMMAND, { numberOfKeys: 1, lua: GCRA });
  const gcra = (redis as unknown as Record<string, GcraCommand>)[COMMAND]!.bind(redis);
  let lastLogged = 0;
  let skipped = 0;

  return async (req: Request, res: Response, next: NextFunction) => {
    const auth: Authenticated | undefined = res.locals.auth;
    const keyId = auth?.key.id;
    if (!keyId) return next();
    const route = routeOf(req);
    const policy = limits.routes[route] ?? limits.default;
    let reply: [number, number, number, number];
    try {
      if (DOWN.has(redis.status)) throw new Error(`redis connection is ${redis.status}`);
      reply = await withTimeout(gcra(`${prefix}ratelimit:${keyId}:${route}`, policy.limit, policy.windowSeconds), timeoutMs, 'redis did not answer');
    } catch (err) {
      skipped++;
      if (Date.now() - lastLogged >= LOG_EVERY_MS) {
        requestLog(res, log).warn('rate limits not enforced: redis unavailable', { error: errorMessage(err), requests_unlimited: skipped });
        lastLogged = Date.now();
        skipped = 0;
      }
      return next();
    }
    const [allowed, remaining, resetMicros, retryMicros] = reply;
    const reset = Math.max(0, Math.ceil(resetMicros / 1e6));
    res.setHeader('RateLimit-Policy', `${policy.limit};w=${policy.windowSeconds}`);
    res.setHeader('RateLimit', `limit=${policy.limit}, remaining=${remaining}, reset=${reset}`);
    res.setHeader('RateLimit-Limit', String(policy.limit));
    res.setHeader('RateLimit-Remaining', String(remaining));
    res.setHeader('RateLimit-Reset', String(reset));
    if (allowed === 1) return next();
    const retryAfter = Math.max(1, Math.ceil(retryMicros / 1e6));
    return next(
      new AppError('rate-limit-exceeded', `more than ${policy.limit} requests in ${policy.windowSeconds} s to ${route}; retry in ${retryAfter} s`, {
        retry_after_seconds: retryAfter,
      }),
    );
  };
}

