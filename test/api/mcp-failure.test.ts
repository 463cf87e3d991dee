import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startLocalRedis, type LocalRedis } from '../../infra/redis/local-redis';
import { eventually, startTestService, type TestService } from '../support/service';

/**
 * A dependency breaks under the running service: its own Redis is stopped. The proofs that
 * stand on Redis and the control plane turn to fail, measured live, and recover once the same
 * Redis is back.
 */

type Json = Record<string, any>;

describe('proofs and planes follow a broken dependency', () => {
  let svc: TestService;
  let redis: LocalRedis | undefined;
  let dir: string;
  let port: number;
  let client: Client;

  const proofs = async (): Promise<Record<string, any>> => {
    const result = await client.callTool({ name: 'list_runtime_proofs', arguments: { ids: ['PROOF-006', 'PROOF-007', 'PROOF-008'] } });
    const trust = await client.callTool({ name: 'list_trust_proofs', arguments: { ids: ['TRUST-009'] } });
    const all = [...(result.structuredContent as Json).proofs, ...(trust.structuredContent as Json).proofs];
    return Object.fromEntries(all.map((p: Json) => [p.id, p]));
  };
  const planes = async (): Promise<Record<string, any>> => {
    const res = await svc.api('GET', '/v1/mcp/planes');
    expect(res.status).toBe(200);
    return Object.fromEntries((res.body.planes as Json[]).map((p) => [p.name, p]));
  };

  beforeAll(async () => {
    dir = mkdtempSync(path.join(process.env.HOOKLINE_TEST_DIR ?? tmpdir(), 'mcp-redis-'));
    redis = await startLocalRedis(path.join(dir, 'redis'));
    port = Number(new URL(redis.url).port);
    svc = await startTestService({ REDIS_URL: redis.url, RATE_LIMITS: 'default=100000/60s' });
    client = new Client({ name: 'hookline-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/v1/mcp`), { requestInit: { headers: { authorization: `Bearer ${svc.apiKey}` } } }));
  });

  afterAll(async () => {
    await client?.close();
    await svc?.stop();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('Redis stopped: PROOF-007, TRUST-009 and the control plane fail; restarted: they pass again', async () => {
    // with Redis up they pass; on a busy machine one Redis answer may miss the limiter's 250 ms
    // (it fails open for that request), so the healthy state is the one the proofs settle in
    const before = await eventually('the Redis proofs passing', async () => {
      const p = await proofs();
      return p['PROOF-007'].status === 'pass' && p['TRUST-009'].status === 'pass' ? p : undefined;
    }, 30_000, 500);
    expect(before['PROOF-007']).toMatchObject({ status: 'pass', observed: { answer: 'PONG' } });
    await eventually('the control plane passing', async () => ((await planes()).control.status === 'pass' ? true : undefined), 30_000, 500);

    await redis!.stop();
    redis = undefined;
    const down = await eventually('the Redis proofs failing', async () => {
      const p = await proofs();
      return p['PROOF-007'].status === 'fail' && p['TRUST-009'].status === 'fail' ? p : undefined;
    }, 30_000, 500);
    expect(typeof down['PROOF-007'].observed.error).toBe('string');
    // rate limits fail open without Redis: the probe answer carries no RateLimit headers
    expect(down['TRUST-009'].observed.headers_present).toEqual([]);
    // what does not stand on Redis keeps passing
    expect(down['PROOF-006'].status).toBe('pass');
    expect(down['PROOF-008'].status).toBe('pass');
    const brokenPlanes = await planes();
    expect(brokenPlanes.control.status).toBe('fail');
    expect(brokenPlanes.control.signals.filter((s: Json) => s.status === 'fail').map((s: Json) => s.name)).toEqual(expect.arrayContaining(['redis', 'rate limits']));
    expect(brokenPlanes.query.status).toBe('pass');
    const readiness = (await client.callTool({ name: 'get_readiness', arguments: {} })).structuredContent as Json;
    expect(readiness.ready).toBe(false);
    expect(readiness.domains.find((d: Json) => d.name === 'control').failing).toEqual(expect.arrayContaining(['redis']));

    redis = await startLocalRedis(path.join(dir, 'redis'), { port });
    const up = await eventually('the Redis proofs passing again', async () => {
      const p = await proofs();
      return p['PROOF-007'].status === 'pass' && p['TRUST-009'].status === 'pass' ? p : undefined;
    }, 30_000, 500);
    expect(up['PROOF-007'].observed.answer).toBe('PONG');
    expect((await planes()).control.status).toBe('pass');
  }, 120_000);
});
