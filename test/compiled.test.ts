import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BUILD_DIR } from '../core/paths';
import { REPO_ROOT } from './support/process';

/**
 * The compiled tree (scripts/build.cjs) beyond what `npm start` shows (test/start.test.ts): the
 * entry point refuses an older Node before anything else loads, and what it spawns runs compiled
 * too. Each step runs in a node process of its own on the built files.
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
});
