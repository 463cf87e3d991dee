import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../infra/process/ports';
import { envWithoutInfra, isAlive, runScript, spawnBuilt, type Spawned } from './support/process';
import { randomKek } from './support/keyring';

/**
 * `npm start` as a user runs it: the compiled service (`node dist/service/main.js --dev`), which
 * reads its schemas, migrations, dashboard and helper scripts from the sources' folders; no
 * infrastructure variables, an empty data dir. It must bring up its own Kafka and Redis, reach
 * health 200, print the demo key once, find its infrastructure from the CLI, keep state across a
 * restart, and leave no process behind.
 */
describe('npm start on an empty data dir', () => {
  const dataDir = mkdtempSync(path.join(process.env.HOOKLINE_TEST_DIR ?? tmpdir(), 'start-'));
  let service: Spawned | undefined;
  let failed = false;

  afterAll(async () => {
    if (service && service.child.exitCode === null) {
      service.child.kill('SIGKILL');
      await service.exited;
    }
    // kept after a failure, for the broker's own logs
    if (!failed) rmSync(dataDir, { recursive: true, force: true });
  });

  /** What a failed start leaves to read: the broker's config, liveness and log, and the service's output. */
  function diagnostics(): string {
    const read = (file: string, lines: number) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n') : `(no ${file})`);
    const pidFile = path.join(dataDir, 'kafka', 'kafka.pid');
    const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) : 0;
    return [
      `broker pid ${pid} alive: ${pid > 0 && isAlive(pid)}`,
      read(path.join(dataDir, 'kafka', 'server.properties'), 40).split('\n').filter((l) => l.includes('listeners')).join('\n'),
      `server.log:\n${read(path.join(dataDir, 'kafka', 'server.log'), 15)}`,
      `broker stdout:\n${read(path.join(dataDir, 'kafka', 'stdout.log'), 10)}`,
      `service stdout:\n${service?.stdout().slice(-1500)}`,
      `service stderr (without connection retries):\n${(service?.stderr() ?? '').split('\n').filter((l) => !/ECONNREFUSED|Failed to connect to seed broker/.test(l)).join('\n').slice(-3000)}`,
    ].join('\n');
  }

  async function waitForHealth(url: string, timeoutMs: number): Promise<{ ms: number; sawStarting: boolean }> {
    const started = Date.now();
    let sawStarting = false;
    for (;;) {
      try {
        const res = await fetch(`${url}/v1/mcp/health`);
        const body = (await res.json()) as { status: string; failing?: string[]; build?: { version: string } };
        if (res.status === 200) {
          expect(body.status).toBe('ok');
          expect(body.build?.version).toMatch(/^\d+\.\d+\.\d+/);
          return { ms: Date.now() - started, sawStarting };
        }
        expect(res.status).toBe(503);
        expect(body.failing?.length).toBeGreaterThan(0);
        sawStarting = true;
      } catch (err) {
        if (err instanceof Error && err.name === 'JestAssertionError') throw err;
      }
      if (Date.now() - started > timeoutMs || service?.child.exitCode !== null) {
        failed = true;
        throw new Error(`health not 200 within ${timeoutMs} ms (service exit code ${service?.child.exitCode})\n${diagnostics()}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async function stopAndCheckNothingLeft(s: Spawned): Promise<void> {
    const kafkaPid = Number(readFileSync(path.join(dataDir, 'kafka', 'kafka.pid'), 'utf8'));
    const run = JSON.parse(readFileSync(path.join(dataDir, 'run', 'infra.json'), 'utf8')) as { redis_url: string };
    expect(isAlive(kafkaPid)).toBe(true);
    s.child.kill('SIGINT');
    expect(await s.exited).toBe(0);
    expect(isAlive(kafkaPid)).toBe(false);
    // nothing answers on the Redis port any more
    const port = Number(new URL(run.redis_url).port);
    await expect(fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(2000) })).rejects.toThrow();
  }

  it('starts, serves, stops cleanly, and restarts with its state', async () => {
    const port = await freePort();
    const env = envWithoutInfra({ DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn', SECRETS_KEK: randomKek() });
    const url = `http://127.0.0.1:${port}`;

    service = spawnBuilt('service/main.ts', ['--dev'], env);
    const first = await waitForHealth(url, 170_000);
    const [, demoKey] = await service.waitForOutput(/^\s+(hlk_\S+)$/m);
    // the banner names where to go next, the dashboard among them
    expect(service.stdout()).toContain(`  API         ${url}/v1 `);
    expect(service.stdout()).toContain(`  Dashboard   ${url}/ui `);
    expect((await fetch(`${url}/ui`)).status).toBe(200);
    // development mode says what it relaxed, before anything else
    expect(service.stderr()).toMatch(/DEVELOPMENT MODE[\s\S]*DESTINATION_ALLOWED_NETWORKS=loopback/);
    process.stderr.write(`npm start, first run on an empty data dir: health 200 after ${first.ms} ms\n`);

    const listed = await fetch(`${url}/v1/tenants/demo/destinations`, { headers: { authorization: `Bearer ${demoKey}` } });
    expect(listed.status).toBe(200);

    // the CLI, beside the service with the same DATA_DIR and no other variable, finds its infrastructure
    const cli = await runScript('cli/main.ts', ['keys', 'create', '--tenant', 'acme', '--scopes', 'read:destinations'], env);
    expect(cli.code).toBe(0);
    const issued = JSON.parse(cli.stdout) as { tenant_id: string; key_id: string; api_key: string; scopes: string[] };
    expect(issued).toEqual({ tenant_id: 'acme', key_id: expect.stringMatching(/^key_/), api_key: expect.stringMatching(/^hlk_/), scopes: ['read:destinations'] });
    const acme = await fetch(`${url}/v1/tenants/acme/destinations`, { headers: { authorization: `Bearer ${issued.api_key}` } });
    expect(acme.status).toBe(200);

    await stopAndCheckNothingLeft(service);

    service = spawnBuilt('service/main.ts', ['--dev'], env);
    const second = await waitForHealth(url, 60_000);
    process.stderr.write(`npm start, second run: health 200 after ${second.ms} ms\n`);
    // tenants and keys survived; no second demo key was printed
    const again = await fetch(`${url}/v1/tenants/acme/destinations`, { headers: { authorization: `Bearer ${issued.api_key}` } });
    expect(again.status).toBe(200);
    const demoAgain = await fetch(`${url}/v1/tenants/demo/destinations`, { headers: { authorization: `Bearer ${demoKey}` } });
    expect(demoAgain.status).toBe(200);
    expect(service.stdout()).not.toMatch(/hlk_/);
    await stopAndCheckNothingLeft(service);
  }, 300_000);
});
