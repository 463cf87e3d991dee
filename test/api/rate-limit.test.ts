import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Request } from 'express';
import { Redis } from 'ioredis';
import { problemHandler } from '../../api/problem';
import { DEFAULT_RATE_LIMIT, defaultRouteOf, parseRateLimits, rateLimit, type RateLimits } from '../../api/rate-limit';
import { AppError } from '../../core/errors';
import { Logger } from '../../core/log';
import type { ApiKey } from '../../core/model';
import { freePort } from '../../infra/process/ports';
import { uniqueSuffix } from '../support/ids';

const ERROR_BASE = 'http://errors.test';
const ID = 'dst_01hzzzzzzzzzzzzzzzzzzzzzzz';
const OTHER_ID = 'dst_01jaaaaaaaaaaaaaaaaaaaaaaa';

interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

interface Served {
  call(method: string, path: string, key?: string): Promise<Answer>;
  close(): Promise<void>;
}

/** Fake authentication from `x-key`, the limiter, two routes and the real problem handler. */
async function serve(redis: Redis, limits: RateLimits, options: { log?: Logger; prefix?: string; routes?: string[] } = {}): Promise<Served> {
  const log = options.log ?? new Logger('error');
  const app = express();
  app.use((req, res, next) => {
    const id = req.header('x-key');
    if (id) res.locals.auth = { key: { kind: 'api_key', id, tenant_id: 't1', secret_sha256: '', scopes: [], resource_ids: null, created_at: '', expires_at: null } satisfies ApiKey };
    next();
  });
  // tests that count must not fail open because a loaded machine answered late (250 ms by default)
  app.use(rateLimit({ redis, prefix: options.prefix ?? `rl${uniqueSuffix()}:`, limits, log, timeoutMs: 10_000, ...(options.routes ? { routes: options.routes } : {}) }));
  app.get(['/v1/tenants/:tenantId/things', '/v1/tenants/:tenantId/things/:id'], (_req, res) => {
    res.json({ ok: true });
  });
  app.post('/v1/tenants/:tenantId/things', (_req, res) => {
    res.status(201).json({ ok: true });
  });
  app.use((req, _res, next) => next(new AppError('not-found', `no route ${req.method} ${req.path}`)));
  app.use(problemHandler(ERROR_BASE, log));
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    async call(method, path, key = 'key_a') {
      const res = await fetch(`${url}${path}`, { method, headers: key ? { 'x-key': key } : {} });
      const text = await res.text();
      return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
    },
    close: () => new Promise((r) => server.close(() => r())),
  };
}

const limits = (spec: string): RateLimits => {
  const parsed = parseRateLimits(spec);
  expect(parsed.errors).toEqual([]);
  return parsed.limits;
};

const remaining = (a: Answer) => Number(a.headers.get('ratelimit-remaining'));

describe('rate limits per key and route', () => {
  let redis: Redis;
  beforeAll(async () => {
    redis = new Redis(process.env.REDIS_URL!, { lazyConnect: true });
    await redis.connect();
  });
  afterAll(async () => {
    await redis?.quit();
  });

  it('sends RateLimit headers on every answer with the remaining count', async () => {
    const s = await serve(redis, limits('default=5/60s'));
    try {
      for (let i = 1; i <= 5; i++) {
        const res = await s.call('GET', '/v1/tenants/t1/things');
        expect(res.status).toBe(200);
        expect(res.headers.get('ratelimit-policy')).toBe('5;w=60');
        const reset = Number(res.headers.get('ratelimit-reset'));
        expect(reset).toBeGreaterThanOrEqual(1);
        expect(reset).toBeLessThanOrEqual(60);
        expect(res.headers.get('ratelimit')).toBe(`limit=5, remaining=${5 - i}, reset=${reset}`);
        expect(res.headers.get('ratelimit-limit')).toBe('5');
        expect(remaining(res)).toBe(5 - i);
      }
    } finally {
      await s.close();
    }
  });

  it('answers the (limit+1)th request with a 429 problem and Retry-After', async () => {
    const s = await serve(redis, limits('default=3/60s'));
    try {
      for (let i = 0; i < 3; i++) expect((await s.call('GET', '/v1/tenants/t1/things')).status).toBe(200);
      const res = await s.call('GET', '/v1/tenants/t1/things');
      expect(res.status).toBe(429);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.body).toMatchObject({ type: `${ERROR_BASE}/errors/rate-limit-exceeded`, status: 429, title: 'Rate limit exceeded' });
      const retry = res.body.retry_after_seconds;
      expect(Number.isInteger(retry)).toBe(true);
      expect(retry).toBeGreaterThanOrEqual(1);
      expect(retry).toBeLessThanOrEqual(60);
      expect(res.headers.get('retry-after')).toBe(String(retry));
      expect(res.headers.get('ratelimit')).toMatch(/^limit=3, remaining=0, reset=\d+$/);
    } finally {
      await s.close();
    }
  });

  it('keeps separate buckets per key and per route, and one bucket across ids of a route', async () => {
    const s = await serve(redis, limits('default=2/60s;POST /v1/tenants/:tenantId/things=1/60s'));
    try {
      expect((await s.call('GET', `/v1/tenants/t1/things/${ID}`)).status).toBe(200);
      expect((await s.call('GET', `/v1/tenants/t2/things/${OTHER_ID}`)).status).toBe(200);
      expect((await s.call('GET', `/v1/tenants/t1/things/${OTHER_ID}`)).status).toBe(429);
      // the list route is another bucket, and so is another key on the same route
      expect(remaining(await s.call('GET', '/v1/tenants/t1/things'))).toBe(1);
      expect(remaining(await s.call('GET', `/v1/tenants/t1/things/${ID}`, 'key_b'))).toBe(1);
      const post = await s.call('POST', '/v1/tenants/t1/things');
      expect(post.status).toBe(201);
      expect(post.headers.get('ratelimit-policy')).toBe('1;w=60');
      expect((await s.call('POST', '/v1/tenants/t9/things')).status).toBe(429);
      expect((await s.call('POST', '/v1/tenants/t1/things', 'key_b')).status).toBe(201);
    } finally {
      await s.close();
    }
  });

  it('shares one bucket between API processes (separate clients and apps)', async () => {
    const prefix = `rl${uniqueSuffix()}:`;
    const other = new Redis(process.env.REDIS_URL!);
    const a = await serve(redis, limits('default=4/60s'), { prefix });
    const b = await serve(other, limits('default=4/60s'), { prefix });
    try {
      const statuses = [];
      for (const s of [a, b, a, b, a]) {
        statuses.push((await s.call('GET', '/v1/tenants/t1/things')).status);
        // an emptied script cache (restart, failover) is refilled by the EVAL fallback
        if (statuses.length === 2) await redis.script('FLUSH');
      }
      expect(statuses).toEqual([200, 200, 200, 200, 429]);
    } finally {
      await Promise.all([a.close(), b.close()]);
      await other.quit();
    }
  });

  it('keys by route template: case, doubled and trailing slashes and odd segments share one bucket', async () => {
    const routes = ['GET /v1/tenants/:tenantId/things', 'GET /v1/tenants/:tenantId/things/:id', 'POST /v1/tenants/:tenantId/things'];
    const s = await serve(redis, limits('default=4/60s'), { routes });
    try {
      const spellings = [`/v1/tenants/t1/things/${ID}`, `/V1/Tenants/T1/THINGS/${ID}`, `//v1/tenants//t1/things//x${uniqueSuffix()}`, `/v1/tenants/t1/things/not-an-id/`];
      // each drains the one bucket, whether express routes it (200) or not (404)
      const left = [];
      for (const path of spellings) left.push(remaining(await s.call('GET', path)));
      expect(left).toEqual([3, 2, 1, 0]);
      expect((await s.call('GET', `/v1/tenants/t2/things/random${uniqueSuffix()}`)).status).toBe(429);
      // the list route is its own bucket, whatever its spelling
      expect(remaining(await s.call('GET', '/V1//tenants/t1/Things/'))).toBe(3);
      // paths that match no route drain one shared bucket per key
      for (let i = 0; i < 4; i++) expect(await s.call('GET', `/nowhere/${uniqueSuffix()}/${i}`)).toMatchObject({ status: 404 });
      expect((await s.call('GET', `/Else/${uniqueSuffix()}`)).status).toBe(429);
    } finally {
      await s.close();
    }
  });

  it('admits requests again once the window has passed', async () => {
    // a token comes back every window/limit: the third request is refused only if it comes less
    // than that after the first, 1 s here for two round trips on a loaded machine
    const s = await serve(redis, limits('default=2/2s'));
    try {
      expect((await s.call('GET', '/v1/tenants/t1/things')).status).toBe(200);
      expect((await s.call('GET', '/v1/tenants/t1/things')).status).toBe(200);
      const denied = await s.call('GET', '/v1/tenants/t1/things');
      expect(denied.status).toBe(429);
      expect(denied.body.retry_after_seconds).toBe(1);
      await new Promise((r) => setTimeout(r, 2_100));
      const again = await s.call('GET', '/v1/tenants/t1/things');
      expect(again.status).toBe(200);
      expect(remaining(again)).toBe(1);
    } finally {
      await s.close();
    }
  });

  it('admits exactly the limit out of concurrent requests', async () => {
    // a token comes back every 3 min: 50 requests on a loaded machine are done long before
    const s = await serve(redis, limits('default=20/1h'));
    try {
      const answers = await Promise.all(Array.from({ length: 50 }, () => s.call('GET', '/v1/tenants/t1/things')));
      const ok = answers.filter((a) => a.status === 200);
      expect(ok).toHaveLength(20);
      expect(answers.filter((a) => a.status === 429)).toHaveLength(30);
      // each admitted request saw its own count: the script is atomic
      expect(ok.map(remaining).sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    } finally {
      await s.close();
    }
  });

  it('does not limit requests without an authenticated key', async () => {
    const s = await serve(redis, limits('default=1/60s'));
    try {
      for (let i = 0; i < 3; i++) {
        const res = await s.call('GET', '/v1/tenants/t1/things', '');
        expect(res.status).toBe(200);
        expect(res.headers.get('ratelimit')).toBeNull();
      }
    } finally {
      await s.close();
    }
  });

  it('fails open without headers when Redis is unreachable, and logs once', async () => {
    const port = await freePort();
    const down = new Redis(`redis://127.0.0.1:${port}`, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
    down.on('error', () => undefined);
    const lines: string[] = [];
    const log = new Logger('warn', {}, (line) => lines.push(line));
    const s = await serve(down, limits('default=1/60s'), { log });
    try {
      for (let i = 0; i < 4; i++) {
        const res = await s.call('GET', '/v1/tenants/t1/things');
        expect(res.status).toBe(200);
        expect(res.headers.get('ratelimit')).toBeNull();
        expect(res.headers.get('ratelimit-policy')).toBeNull();
      }
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'warn', msg: 'rate limits not enforced: redis unavailable' });
    } finally {
      await s.close();
      down.disconnect();
    }
  });
});

describe('parseRateLimits', () => {
  it('reads the default and per-route overrides', () => {
    const { limits, errors } = parseRateLimits(
      'default=100/60s;POST /v1/tenants/:tenantId/destinations=20/60s;GET /v1/tenants/:tenantId/deliveries=300/60s',
    );
    expect(errors).toEqual([]);
    expect(limits).toEqual({
      default: { limit: 100, windowSeconds: 60 },
      routes: {
        'POST /v1/tenants/:tenantId/destinations': { limit: 20, windowSeconds: 60 },
        'GET /v1/tenants/:tenantId/deliveries': { limit: 300, windowSeconds: 60 },
      },
    });
  });

  it('accepts bare seconds, minutes, hours, spaces, a lower-case method and a trailing slash', () => {
    const { limits, errors } = parseRateLimits(' default = 10/30 ; get  /v1/x/ = 5/2m ;post /v1/y=1/1h; ');
    expect(errors).toEqual([]);
    expect(limits.default).toEqual({ limit: 10, windowSeconds: 30 });
    expect(limits.routes).toEqual({ 'GET /v1/x': { limit: 5, windowSeconds: 120 }, 'POST /v1/y': { limit: 1, windowSeconds: 3600 } });
  });

  it('falls back to the built-in default for an empty spec', () => {
    expect(parseRateLimits('')).toEqual({ limits: { default: DEFAULT_RATE_LIMIT, routes: {} }, errors: [] });
  });

  it('reports every malformed entry and keeps the good ones', () => {
    const { limits, errors } = parseRateLimits(
      'default=abc;GET /a=0/60s;GET /b=5/0s;GET /c=5/60x;FETCH /d=1/1s;GET e=1/1s;nothing;=5/60s;GET /f=1/2d;GET /g=7/60s;GET /g=8/60s;GET /h=1/90000s',
    );
    expect(errors).toHaveLength(11);
    for (const part of ['default=abc', 'GET /a=0/60s', 'GET /b=5/0s', 'GET /c=5/60x', 'FETCH /d', 'GET e=1/1s', 'nothing', '=5/60s', 'GET /f=1/2d', 'GET /g=8/60s', 'GET /h=1/90000s']) {
      expect(errors.some((e) => e.includes(`"${part}`))).toBe(true);
    }
    expect(limits).toEqual({ default: DEFAULT_RATE_LIMIT, routes: { 'GET /g': { limit: 7, windowSeconds: 60 } } });
  });
});

describe('defaultRouteOf', () => {
  const req = (fields: { method?: string; baseUrl?: string; path: string; route?: { path: string } }) =>
    ({ method: 'GET', baseUrl: '', ...fields }) as unknown as Request;

  it('uses the route pattern once routing has matched, with the mount path normalised', () => {
    expect(defaultRouteOf(req({ baseUrl: '/v1/tenants/demo', path: `/destinations/${ID}`, route: { path: '/destinations/:id' } }))).toBe(
      'GET /v1/tenants/:tenantId/destinations/:id',
    );
  });

  it('before routing, turns the tenant segment and typed ids into parameters', () => {
    expect(defaultRouteOf(req({ method: 'POST', baseUrl: '/v1/tenants/acme', path: `/events/evt_01hzzzzzzzzzzzzzzzzzzzzzzz/retry` }))).toBe(
      'POST /v1/tenants/:tenantId/events/:id/retry',
    );
    expect(defaultRouteOf(req({ path: '/v1/tenants/acme/deliveries/' }))).toBe('GET /v1/tenants/:tenantId/deliveries');
    expect(defaultRouteOf(req({ path: '/' }))).toBe('GET /');
  });
});
