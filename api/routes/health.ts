import express, { type Router } from 'express';

/** The dependencies, and `pipeline`: this process's own stages and API, up once start-up has finished. */
export type DependencyName = 'kafka' | 'schema_registry' | 'redis' | 'clickhouse' | 'pipeline';

export interface DependencyStatus {
  /** `unused`: this process runs no stage that needs the dependency. */
  status: 'up' | 'down' | 'starting' | 'unused';
  detail?: string;
  latency_ms?: number;
}

/** Live checks of every dependency, provided by the composition root. */
export interface HealthProbe {
  check(): Promise<Record<DependencyName, DependencyStatus>>;
}

export interface BuildInfo {
  name: string;
  version: string;
  commit: string | null;
  node: string;
  started_at: string;
}

/** GET /v1/mcp/health: 200 once every dependency answers, 503 naming those that do not. */
export function healthRouter(probe: HealthProbe, build: BuildInfo): Router {
  const router = express.Router();
  router.get('/v1/mcp/health', async (_req, res) => {
    const dependencies = await probe.check();
    const failing = Object.entries(dependencies).filter(([, d]) => d.status === 'down' || d.status === 'starting').map(([name]) => name);
    const body = {
      status: failing.length === 0 ? 'ok' : 'unavailable',
      ...(failing.length > 0 ? { failing } : {}),
      build,
      uptime_seconds: Math.round(process.uptime()),
      dependencies,
    };
    res.status(failing.length === 0 ? 200 : 503).setHeader('cache-control', 'no-store').json(body);
  });
  return router;
}
