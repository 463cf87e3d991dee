import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig, stagesFromArgs } from '../core/config';
import { startLocalRedis, type LocalRedis } from '../infra/redis/local-redis';
import { uniqueSuffix } from './support/ids';
import { randomEvidenceKey } from './support/keyring';
import { runScript } from './support/process';
import { spawnService, stopService, type ServiceProcess } from './support/service-process';

describe('--role and --stage', () => {
  it('map each role to the stages it runs', () => {
    expect(stagesFromArgs(['--role', 'stage:deliver'])).toBe('deliver');
    expect(stagesFromArgs(['--role=sequencer', '--role', 'sink'])).toBe('evidence,sink');
    expect(stagesFromArgs(['--role', 'ingest', '--stage', 'retry'])).toBe('ingest,retry');
    expect(stagesFromArgs(['--dev'])).toBeUndefined();
    expect(() => stagesFromArgs(['--role', 'stage:nothing'])).toThrow(ConfigError);
    expect(() => stagesFromArgs(['--role', 'stage:nothing'])).toThrow(/unknown role "stage:nothing"; roles: api, ingest, stage:validate/);
  });

  it('the API serves the Hook URLs; a consuming process takes a free port for its health', () => {
    const base = { SECRETS_KEK: process.env.SECRETS_KEK, EVIDENCE_SIGNING_KEY: randomEvidenceKey() };
    expect(loadConfig({ ...base, STAGES: 'api' }).stages).toEqual(['api', 'ingest']);
    expect(loadConfig({ ...base, STAGES: 'api' }).port).toBe(8080);
    expect(loadConfig({ ...base, STAGES: 'ingest' }).port).toBe(8080);
    expect(loadConfig({ ...base, STAGES: 'deliver' }).port).toBe(0);
    expect(loadConfig({ ...base, STAGES: 'deliver', PORT: '9123' }).port).toBe(9123);
  });

  it('an unknown role stops the process with a one-line message', async () => {
    const r = await runScript('service/main.ts', ['--role', 'stage:nothing'], { ...process.env }, 60_000);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/--role: unknown role "stage:nothing"/);
  });
});

/**
 * A process that runs no API answers /healthz and /readyz on its own port: ready once its
 * dependencies answer, 503 naming Redis while Redis is down, alive throughout; every other
 * path is a problem saying this process does not run the API.
 */
describe('health of a process without the API', () => {
  let svc: ServiceProcess | undefined;
  let redis: LocalRedis | undefined;
  afterAll(async () => {
    if (svc) await stopService(svc);
    await redis?.stop();
  });

  it('answers /healthz and /readyz, and names Redis while it is down', async () => {
    const suffix = uniqueSuffix();
    const dir = mkdtempSync(path.join(process.env.HOOKLINE_TEST_DIR ?? tmpdir(), 'roles-'));
    redis = await startLocalRedis(path.join(dir, 'redis'));
    const port = Number(new URL(redis.url).port);
    svc = spawnService({ ...process.env, REDIS_URL: redis.url, DATA_DIR: dir, TOPIC_PREFIX: `t${suffix}.`, KAFKA_REPLICATION_FACTOR: '1', KAFKA_PARTITIONS: '2', BOOTSTRAP_DEMO_TENANT: 'false', LOG_LEVEL: 'info', STAGES: 'deliver,retry', PORT: '' });
    const [line] = await svc.waitForOutput(/^\{[^\n]*"msg":"service ready"[^\n]*\}$/m, 120_000);
    const ready = JSON.parse(line) as { url: string; stages: string[] };
    expect(ready.stages).toEqual(['deliver', 'retry']);
    expect(Number(new URL(ready.url).port)).toBeGreaterThan(0);

    const get = async (p: string) => {
      const res = await fetch(`${ready.url}${p}`);
      return { status: res.status, body: (await res.json()) as Record<string, any> };
    };
    const up = await get('/readyz');
    expect(up.status).toBe(200);
    expect(up.body).toMatchObject({ status: 'ok', stages: ['deliver', 'retry'] });
    expect(up.body.dependencies.clickhouse.status).toBe('unused');
    expect((await get('/healthz')).body).toMatchObject({ status: 'alive', stages: ['deliver', 'retry'] });
    const api = await get('/v1/tenants/t/destinations');
    expect(api.status).toBe(404);
    expect(api.body.detail).toMatch(/this process runs deliver, retry, not the API/);
    const hook = await get('/v1/hooks/ing_x');
    expect(hook.status).toBe(404);

    await redis.stop();
    const down = await get('/readyz');
    expect(down.status).toBe(503);
    expect(down.body.failing).toEqual(['redis']);
    expect(down.body.dependencies.redis.status).toBe('down');
    expect((await get('/healthz')).status).toBe(200);

    redis = await startLocalRedis(path.join(dir, 'redis'), { port });
    const deadline = Date.now() + 30_000;
    let again = await get('/readyz');
    while (again.status !== 200 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      again = await get('/readyz');
    }
    expect(again.status).toBe(200);
  }, 180_000);
});
