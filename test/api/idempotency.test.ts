import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { Redis } from 'ioredis';
import { idempotency, idempotencyRedisKey, requestFingerprint, type IdempotencyOptions, type IdempotencyRecord } from '../../api/idempotency';
import { problemHandler } from '../../api/problem';
import { Logger } from '../../core/log';
import { uniqueSuffix } from '../support/ids';
import { randomKeyring } from '../support/keyring';

const ERROR_BASE = 'http://errors.test';

/** A counting resource behind the middleware, as the API mounts it: auth, JSON body, idempotency. */
interface TestApp {
  url: string;
  prefix: string;
  /** Resources created (successful handler runs). */
  created: number;
  /** Handler runs, including failed ones. */
  runs: number;
  /** Runs left that answer 500 instead of creating. */
  failuresLeft: number;
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<{ status: number; headers: Headers; body: any }>;
}

describe('Idempotency-Key', () => {
  let redis: Redis;
  const keyring = randomKeyring();
  const servers: Server[] = [];

  beforeAll(() => {
    redis = new Redis(process.env.REDIS_URL!, { maxRetriesPerRequest: 2 });
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    redis.disconnect();
  });

  async function startApp(options: Partial<IdempotencyOptions> = {}): Promise<TestApp> {
    const prefix = `t${uniqueSuffix()}.`;
    const app = express();
    const state = { created: 0, runs: 0, failuresLeft: 0 };
    // as api/app.ts: an empty body is not parsed at all, so req.body stays undefined as for no body
    const json = express.json({ strict: false });
    app.use((req, res, next) => (Number(req.headers['content-length'] ?? 0) > 0 ? json(req, res, next) : next()));
    // x-test-key: "<tenant>/<key id>" stands in for a Bearer API key
    app.use((req, res, next) => {
      const [tenant = 'tenant-a', id = 'key_a'] = String(req.headers['x-test-key'] ?? '').split('/').filter(Boolean);
      res.locals.auth = { key: { kind: 'api_key', id, tenant_id: tenant, secret_sha256: '', scopes: [], resource_ids: null, created_at: '', expires_at: null } };
      next();
    });
    app.use(idempotency({ redis, prefix, ttlSeconds: 86_400, keyring, ...options }));
    app.post(['/things', '/other'], async (req, res) => {
      state.runs++;
      const delay = Number(req.headers['x-delay-ms'] ?? 0);
      if (delay) await new Promise((r) => setTimeout(r, delay));
      if (state.failuresLeft > 0) {
        state.failuresLeft--;
        throw new Error('boom');
      }
      if (req.body?.invalid) {
        res.status(422).json({ error: 'invalid', run: state.runs });
        return;
      }
      const id = `thing_${++state.created}_${uniqueSuffix()}`;
      res.status(201).location(`/things/${id}`).json({ id, input: req.body ?? null });
    });
    app.use(problemHandler(ERROR_BASE, new Logger('error', {}, () => undefined)));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    servers.push(server);
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return Object.assign(state, {
      url,
      prefix,
      async post(path: string, body: unknown, headers: Record<string, string> = {}) {
        const init: RequestInit = { method: 'POST', headers: { ...headers } };
        if (body !== undefined) {
          init.body = typeof body === 'string' ? body : JSON.stringify(body);
          (init.headers as Record<string, string>)['content-type'] = 'application/json';
        }
        const res = await fetch(`${url}${path}`, init);
        const text = await res.text();
        return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
      },
    });
  }

  const key = (k: string, extra: Record<string, string> = {}) => ({ 'idempotency-key': k, ...extra });

  /**
   * Sends `second` once the handler of `first` runs, so that `first` holds the key: a fixed delay
   * before it (50 ms) let `second` claim first on a loaded machine.
   */
  async function whileRunning<T>(app: TestApp, first: () => Promise<T>, second: () => Promise<T>): Promise<[T, T]> {
    const runs = app.runs;
    const one = first();
    while (app.runs === runs) await new Promise((r) => setTimeout(r, 5));
    const two = second();
    return [await one, await two];
  }

  it('replays the original status, body and Location without creating again', async () => {
    const app = await startApp();
    const first = await app.post('/things', { name: 'a' }, key('k1'));
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await app.post('/things', { name: 'a' }, key('k1'));
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(app.created).toBe(1);
  });

  it('keeps the stored answer sealed: Redis holds neither its bytes nor their base64', async () => {
    const app = await startApp();
    const marker = `secret-${uniqueSuffix()}`;
    const first = await app.post('/things', { name: marker }, key('k-sealed'));
    expect(first.body.input.name).toBe(marker);
    const raw = await redis.get(idempotencyRedisKey(app.prefix, 'tenant-a', 'key_a', 'k-sealed'));
    const record = JSON.parse(raw!) as IdempotencyRecord;
    expect(record).toMatchObject({ state: 'done', status: 201, body: expect.stringMatching(/^enc:v1:/) });
    expect(raw).not.toContain(marker);
    expect(raw).not.toContain(Buffer.from(JSON.stringify(first.body)).toString('base64').slice(0, 24));
    // the record is bound to its own key: copied under another Idempotency-Key it does not open
    const other = idempotencyRedisKey(app.prefix, 'tenant-a', 'key_a', 'k-copied');
    await redis.set(other, raw!);
    expect((await app.post('/things', { name: marker }, key('k-copied'))).status).toBe(500);
    // and under the key it was sealed for it replays
    expect((await app.post('/things', { name: marker }, key('k-sealed'))).body).toEqual(first.body);
  });

  it('stores and replays a 4xx answer too', async () => {
    const app = await startApp();
    const first = await app.post('/things', { invalid: true }, key('k4'));
    const again = await app.post('/things', { invalid: true }, key('k4'));
    expect(first.status).toBe(422);
    expect(again).toMatchObject({ status: 422, body: first.body });
    expect(app.runs).toBe(1);
  });

  it('409 idempotency-conflict for the same key with another body or another route', async () => {
    const app = await startApp();
    expect((await app.post('/things', { name: 'a' }, key('k2'))).status).toBe(201);
    for (const [path, body] of [['/things', { name: 'b' }], ['/other', { name: 'a' }], ['/things', undefined]] as const) {
      const res = await app.post(path, body, key('k2'));
      expect(res.status).toBe(409);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.body).toMatchObject({ type: `${ERROR_BASE}/errors/idempotency-conflict`, status: 409, idempotency_key: 'k2' });
    }
    expect(app.created).toBe(1);
  });

  it('another API key or another tenant does not see the record', async () => {
    const app = await startApp();
    const a = await app.post('/things', { name: 'a' }, key('shared', { 'x-test-key': 'tenant-a/key_a' }));
    const b = await app.post('/things', { name: 'a' }, key('shared', { 'x-test-key': 'tenant-a/key_b' }));
    const c = await app.post('/things', { name: 'a' }, key('shared', { 'x-test-key': 'tenant-b/key_a' }));
    expect([a.status, b.status, c.status]).toEqual([201, 201, 201]);
    expect(new Set([a.body.id, b.body.id, c.body.id]).size).toBe(3);
    expect(c.headers.get('idempotent-replayed')).toBeNull();
    expect(app.created).toBe(3);
  });

  it('20 concurrent requests with one key create once and all get the same answer', async () => {
    const app = await startApp();
    const answers = await Promise.all(Array.from({ length: 20 }, () => app.post('/things', { name: 'c' }, key('k3', { 'x-delay-ms': '300' }))));
    expect(app.created).toBe(1);
    expect(answers.map((r) => r.status)).toEqual(Array(20).fill(201));
    for (const r of answers) expect(r.body).toEqual(answers[0]!.body);
    expect(answers.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(19);
  });

  it('a 5xx is not stored: a retry runs again, and a waiting request takes over', async () => {
    const app = await startApp();
    app.failuresLeft = 1;
    const failed = await app.post('/things', { name: 'd' }, key('k5'));
    expect(failed.status).toBe(500);
    expect(await redis.exists(idempotencyRedisKey(app.prefix, 'tenant-a', 'key_a', 'k5'))).toBe(0);
    const retry = await app.post('/things', { name: 'd' }, key('k5'));
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect([app.runs, app.created]).toEqual([2, 1]);

    app.failuresLeft = 1;
    const [first, waiter] = await whileRunning(
      app,
      () => app.post('/things', { name: 'e' }, key('k6', { 'x-delay-ms': '200' })),
      () => app.post('/things', { name: 'e' }, key('k6')),
    );
    expect(first.status).toBe(500);
    expect(waiter.status).toBe(201);
    expect(app.created).toBe(2);
  });

  it('409 while the first request is still running past the wait bound', async () => {
    const app = await startApp({ waitMs: 200 });
    const [first, second] = await whileRunning(
      app,
      () => app.post('/things', { name: 'f' }, key('k7', { 'x-delay-ms': '1000' })),
      () => app.post('/things', { name: 'f' }, key('k7')),
    );
    expect(first.status).toBe(201);
    expect(second).toMatchObject({ status: 409, body: { idempotency_key: 'k7', detail: expect.stringContaining('in progress') } });
    expect(app.created).toBe(1);
  });

  it('a claim whose process died is taken over once its lease runs out', async () => {
    const app = await startApp();
    const dead: IdempotencyRecord = { state: 'pending', fingerprint: requestFingerprint('POST', '/things', { name: 'g' }), owner: 'dead' };
    await redis.set(idempotencyRedisKey(app.prefix, 'tenant-a', 'key_a', 'k8'), JSON.stringify(dead), 'PX', 400);
    const res = await app.post('/things', { name: 'g' }, key('k8'));
    expect(res.status).toBe(201);
    expect(app.created).toBe(1);
  });

  it('400 validation-error for a key that is empty, too long or not printable ASCII', async () => {
    const app = await startApp();
    for (const bad of ['', 'x'.repeat(256), 'caf\u00e9']) {
      const res = await app.post('/things', { name: 'h' }, key(bad));
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ type: `${ERROR_BASE}/errors/validation-error`, errors: [{ field: 'Idempotency-Key', message: expect.any(String) }] });
    }
    expect(app.runs).toBe(0);
    expect((await app.post('/things', { name: 'h' }, key('x'.repeat(255)))).status).toBe(201);
    expect((await app.post('/things', { name: 'h' }, key('a b:c/~!'))).status).toBe(201);
  });

  it('key order and whitespace of the body do not matter; no body differs from {}', async () => {
    const app = await startApp();
    const first = await app.post('/things', '{"a":1,"b":{"c":2,"d":[1,{"y":1,"x":2}]}}', key('k9'));
    const again = await app.post('/things', ' {\n "b" : { "d" : [1, {"x":2,"y":1}], "c":2 },  "a" : 1 }\n', key('k9'));
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(app.created).toBe(1);

    expect((await app.post('/things', undefined, key('k10'))).status).toBe(201);
    expect((await app.post('/things', '', key('k10'))).headers.get('idempotent-replayed')).toBe('true');
    expect((await app.post('/things', {}, key('k10'))).status).toBe(409);
  });

  it('keeps the record for the configured TTL only', async () => {
    const app = await startApp({ ttlSeconds: 1 });
    const first = await app.post('/things', { name: 'i' }, key('k11'));
    const redisKey = idempotencyRedisKey(app.prefix, 'tenant-a', 'key_a', 'k11');
    const ttl = await redis.pttl(redisKey);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(1000);
    await new Promise((r) => setTimeout(r, 1200));
    expect(await redis.exists(redisKey)).toBe(0);
    const later = await app.post('/things', { name: 'i' }, key('k11'));
    expect(later.status).toBe(201);
    expect(later.body.id).not.toBe(first.body.id);
    expect(app.created).toBe(2);
  });

  it('does nothing without the header or for reads', async () => {
    const app = await startApp();
    await app.post('/things', { name: 'j' });
    await app.post('/things', { name: 'j' });
    expect(app.created).toBe(2);
    expect((await fetch(`${app.url}/things`, { headers: key('k12') })).status).toBe(404);
    expect(await redis.keys(`${app.prefix}*`)).toEqual([]);
  });
});
