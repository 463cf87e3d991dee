import express, { type Request, type Response, type Router } from 'express';

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

/** The health body: every dependency's status, and which are down or starting. */
async function healthBody(probe: HealthProbe, build: BuildInfo, stages: readonly string[]) {
  const dependencies = await probe.check();
  const failing = Object.entries(dependencies).filter(([, d]) => d.status === 'down' || d.status === 'starting').map(([name]) => name);
  return {
    status: failing.length === 0 ? ('ok' as const) : ('unavailable' as const),
    ...(failing.length > 0 ? { failing } : {}),
    build,
    stages: [...stages],
    uptime_seconds: Math.round(process.uptime()),
    dependencies,
  };
}

/**
 * Health on every process, with or without the API: `/readyz` (and `/v1/mcp/health`, its older
 * name) answers 200 once every dependency this process uses answers and its stages run, 503
 * naming those that do not; `/healthz` answers 200 while the process can answer at all, without
 * asking any dependency (a dependency's outage is not cured by restarting this process).
 */
export function healthRouter(probe: HealthProbe, build: BuildInfo, stages: readonly string[] = []): Router {
  const router = express.Router();
  const ready = async (_req: Request, res: Response) => {
    const body = await healthBody(probe, build, stages);
    res.status(body.status === 'ok' ? 200 : 503).setHeader('cache-control', 'no-store').json(body);
  };
  router.get('/v1/mcp/health', ready);
  router.get('/readyz', ready);
  router.get('/healthz', (_req, res) => {
    res.setHeader('cache-control', 'no-store').json({ status: 'alive', build, stages: [...stages], uptime_seconds: Math.round(process.uptime()) });
  });
  return router;
}
