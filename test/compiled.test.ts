import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BUILD_DIR } from '../core/paths';
import { uniqueSuffix } from './support/ids';
import { randomKek } from './support/keyring';
import { captureOutput, REPO_ROOT } from './support/process';

/** The OpenTelemetry SDK, its exporter and what they bring: none of it but the API loads without tracing. */
const TRACING_SDK = ['sdk-trace-base', 'sdk-trace', 'exporter-trace-otlp-http', 'otlp-exporter-base', 'otlp-transformer', 'resources', 'core', 'semantic-conventions'].map((p) => `@opentelemetry/${p}`);
/** Readable log lines' renderer. */
const PRETTY_LOGS = ['pino-pretty'];

/**
 * The compiled tree (scripts/build.cjs) beyond what `npm start` shows (test/start.test.ts): the
 * entry point refuses an older Node before anything else loads, what it spawns runs compiled
 * too, and the service loads the tracing SDK and the readable log renderer only when asked to.
 * Each step runs in a node process of its own on the built files.
 */
describe('the compiled tree', () => {
  const compiled = (script: string) => path.join(REPO_ROOT, BUILD_DIR, script);
  const node = (code: string) => execFileSync(process.execPath, ['-e', code], { cwd: REPO_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });

  beforeAll(() => {
    execFileSync(process.execPath, [path.join(REPO_ROOT, 'scripts', 'build.cjs')], { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  });

  it('refuses an older Node in one line, before the service loads', () => {
    let refusal: { status: number | null; stderr: string; stdout: string } | undefined;
    try {
      node(`Object.defineProperty(process, 'version', { value: 'v20.20.2' }); require(${JSON.stringify(compiled('service/main.js'))});`);
    } catch (err) {
      refusal = err as { status: number | null; stderr: string; stdout: string };
    }
    expect(refusal?.status).toBe(1);
    expect(refusal?.stdout).toBe('');
    expect(refusal?.stderr).toMatch(/^hookline needs Node 24 or newer \(engines\.node ">=24"\), this is Node v20\.20\.2: [^\n]+\n$/);
  });

  it('starts the local ClickHouse server from its compiled entry point', () => {
    const dir = mkdtempSync(path.join(process.env.HOOKLINE_TEST_DIR ?? tmpdir(), 'compiled-clickhouse-'));
    const out = node(`
      const { readdirSync, readFileSync } = require('node:fs');
      require(${JSON.stringify(compiled('infra/clickhouse/local-clickhouse.js'))}).startLocalClickHouse(${JSON.stringify(dir)}).then(async (ch) => {
        const ping = await (await fetch(ch.url + '/ping')).text();
        // the server's node process, in the group of the tether that runs it
        const inGroup = readdirSync('/proc').filter((p) => /^\\d+$/.test(p)).filter((p) => {
          try { const s = readFileSync('/proc/' + p + '/stat', 'utf8'); return Number(s.slice(s.lastIndexOf(')') + 2).split(' ')[2]) === ch.pid; } catch { return false; }
        });
        const commands = inGroup.map((p) => { try { return readFileSync('/proc/' + p + '/cmdline', 'utf8').split('\\0').join(' '); } catch { return ''; } });
        await ch.stop();
        process.stdout.write(JSON.stringify({ ping, server: commands.find((c) => c.startsWith(process.execPath)) }));
      });
    `);
    const { ping, server } = JSON.parse(out) as { ping: string; server: string | undefined };
    expect(ping).toBe('Ok.\n');
    expect(server).toMatch(new RegExp(`^${process.execPath} ${compiled('infra/clickhouse/server-main.js')} --data-dir `));
    expect(readFileSync(path.join(dir, 'server.log'), 'utf8')).toMatch(/ClickHouse HTTP interface on http:\/\/127\.0\.0\.1:\d+/);
  }, 90_000);

  /**
   * Starts the compiled service (every stage, on the test's Kafka and Redis) with `settings` and no
   * other OpenTelemetry variable, stops it once ready, and lists the packages it had loaded by
   * then: the module files in `require.cache` at its exit (test/support/loaded-modules.cjs).
   */
  async function packagesLoadedBy(settings: Record<string, string>): Promise<Set<string>> {
    const dir = mkdtempSync(path.join(process.env.HOOKLINE_TEST_DIR ?? tmpdir(), 'loaded-'));
    const listFile = path.join(dir, 'loaded.json');
    const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: path.join(dir, 'data'), TOPIC_PREFIX: `loaded${uniqueSuffix()}.`, PORT: '0', SECRETS_KEK: randomKek(), KAFKA_REPLICATION_FACTOR: '1', KAFKA_PARTITIONS: '2', BOOTSTRAP_DEMO_TENANT: 'false', LOADED_MODULES_FILE: listFile };
    for (const name of Object.keys(env)) if (name.startsWith('OTEL_') || name === 'LOG_FORMAT' || name === 'HOOKLINE_ENV') delete env[name];
    Object.assign(env, settings);
    const child = spawn(process.execPath, ['--require', path.join(REPO_ROOT, 'test', 'support', 'loaded-modules.cjs'), compiled('service/main.js')], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const output = captureOutput(child);
    try {
      await Promise.race([output.waitForOutput(/service ready/, 120_000), exited.then((code) => Promise.reject(new Error(`the service exited (${code}) before it was ready: ${output.stderr().slice(-2000)}`)))]);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    const files = JSON.parse(readFileSync(listFile, 'utf8')) as string[];
    return new Set(files.flatMap((f) => f.match(/\/node_modules\/((?:@[^/]+\/)?[^/]+)\//)?.[1] ?? []));
  }

  it('loads neither the tracing SDK nor pino-pretty without tracing and with JSON logs; loads them when asked to', async () => {
    const plain = await packagesLoadedBy({ LOG_FORMAT: 'json' });
    // the list is the real one: what the service always uses is in it
    expect([...plain]).toEqual(expect.arrayContaining(['kafkajs', 'pino', '@opentelemetry/api']));
    expect([...TRACING_SDK, ...PRETTY_LOGS].filter((p) => plain.has(p))).toEqual([]);

    // a collector that is not there: the spans of the start are lost at the stop, which is not the point
    const asked = await packagesLoadedBy({ LOG_FORMAT: 'pretty', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    expect([...TRACING_SDK, ...PRETTY_LOGS].filter((p) => !asked.has(p))).toEqual([]);
  }, 300_000);
});
