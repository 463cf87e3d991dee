import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { createApp } from '../api/app';
import { Logger } from '../core/log';
import { freePort } from '../infra/process/ports';
import { buildInfo } from '../service/service';
import { healthProbe, type Connections } from '../service/health';
import { startTestService } from './support/service';

async function serve(connections: Connections): Promise<{ url: string; close(): Promise<void> }> {
  const app = createApp({ errorBase: () => 'http://x', log: new Logger('error'), probe: healthProbe(connections), build: buildInfo(), services: () => undefined });
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((r) => server.close(() => r())) };
}

describe('GET /v1/mcp/health', () => {
  it('answers 503 naming what is not up yet, and routes answer 503 service-unavailable', async () => {
    const s = await serve({});
    try {
      const res = await fetch(`${s.url}/v1/mcp/health`);
      expect(res.status).toBe(503);
      const body = (await res.json()) as { status: string; failing: string[]; dependencies: Record<string, { status: string }> };
      expect(body.status).toBe('unavailable');
      expect(body.failing.sort()).toEqual(['clickhouse', 'kafka', 'pipeline', 'redis', 'schema_registry']);
      expect(body.dependencies.kafka!.status).toBe('starting');
      const route = await fetch(`${s.url}/v1/tenants/t/destinations`);
      expect(route.status).toBe(503);
      expect(((await route.json()) as { type: string }).type).toBe('http://x/errors/service-unavailable');
    } finally {
      await s.close();
    }
  });

  it('names a dependency that stopped answering', async () => {
    const port = await freePort();
    const redis = new Redis(`redis://127.0.0.1:${port}`, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
    redis.on('error', () => undefined);
    const s = await serve({ redis, ready: true });
    try {
      const res = await fetch(`${s.url}/v1/mcp/health`);
      const body = (await res.json()) as { failing: string[]; dependencies: Record<string, { status: string; detail?: string }> };
      expect(res.status).toBe(503);
      expect(body.dependencies.redis).toMatchObject({ status: 'down' });
      expect(body.failing).toContain('redis');
      expect(body.failing).not.toContain('pipeline');
    } finally {
      redis.disconnect();
      await s.close();
    }
  });

  it('answers 200 with build metadata when everything is up', async () => {
    const svc = await startTestService();
    try {
      const res = await fetch(`${svc.url}/v1/mcp/health`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { status: string; build: Record<string, unknown>; dependencies: Record<string, { status: string }> };
      expect(body.status).toBe('ok');
      expect(body.build).toMatchObject({ name: 'hookline', version: expect.stringMatching(/^\d+\.\d+\.\d+/), node: process.version });
      expect(Object.values(body.dependencies).every((d) => d.status === 'up')).toBe(true);
    } finally {
      await svc.stop();
    }
  });
});
