import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runScript } from './support/process';
import { startReceiver, type Receiver } from './support/receiver';
import { eventually, startTestService, type TestService } from './support/service';
import { destinationWithIngester, sendEvent } from './support/flow';

/** `export deliveries|events|logs` as a child process against the running service: pages followed to the end into one file (Parquet: one per page). */
describe('CLI: export', () => {
  let svc: TestService;
  let receiver: Receiver;
  let dir = '';
  let env: NodeJS.ProcessEnv = {};
  const rest = async (query: string) => {
    const res = await fetch(`${svc.url}/v1/tenants/${svc.tenantId}/exports/deliveries?${query}`, { headers: { authorization: `Bearer ${svc.apiKey}` } });
    return res.text();
  };
  const cli = (args: string[]) => runScript('cli/main.ts', ['export', ...args], env);

  beforeAll(async () => {
    [svc, receiver] = await Promise.all([startTestService({ RATE_LIMITS: 'default=10000/60s' }), startReceiver()]);
    dir = mkdtempSync(path.join(tmpdir(), 'cli-export-'));
    env = { ...process.env, HOOKLINE_API_KEY: svc.apiKey, HOOKLINE_API_URL: svc.url, HOOKLINE_TENANT: svc.tenantId };
    const dest = await destinationWithIngester(svc, 'cli export', receiver.url);
    for (let n = 1; n <= 5; n++) await sendEvent(dest.hookUrl, { n, note: `with, a comma\nand a line ${n}` });
    await eventually('five attempts', async () => ((await rest('format=ndjson')).trim().split('\n').length === 5 ? true : undefined));
  }, 60_000);
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await Promise.all([svc?.stop(), receiver?.close()]);
  });

  it('follows the cursor to the end into one NDJSON or CSV file equal to one big export', async () => {
    const out = path.join(dir, 'all.ndjson');
    const r = await cli(['deliveries', '--format', 'ndjson', '--out', out, '--limit', '2']);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toMatchObject({ kind: 'deliveries', format: 'ndjson', pages: 3, files: [out], complete: true });
    expect(readFileSync(out, 'utf8')).toBe(await rest('format=ndjson'));
    expect(existsSync(`${out}.part`)).toBe(false);

    const csv = path.join(dir, 'all.csv');
    const c = await cli(['deliveries', '--format', 'csv', '--out', csv, '--limit', '2']);
    expect(JSON.parse(c.stdout)).toMatchObject({ pages: 3, files: [csv] });
    // one header line, the rows of every page
    expect(readFileSync(csv, 'utf8')).toBe(await rest('format=csv'));
  });

  it('stops at --max-rows, and writes Parquet one file per page', async () => {
    const out = path.join(dir, 'some.ndjson');
    const r = await cli(['deliveries', '--format', 'ndjson', '--out', out, '--max-rows', '3', '--limit', '2']);
    expect(JSON.parse(r.stdout)).toMatchObject({ pages: 2, complete: false });
    expect(readFileSync(out, 'utf8')).toBe(await rest('format=ndjson&limit=3'));

    const parquet = path.join(dir, 'pages.parquet');
    const p = await cli(['events', '--format', 'parquet', '--out', parquet, '--limit', '2', '--from', '2000-01-01T00:00:00Z']);
    expect(p.stderr).toBe('');
    const files = ['0001', '0002', '0003'].map((n) => path.join(dir, `pages-${n}.parquet`));
    expect(JSON.parse(p.stdout)).toMatchObject({ kind: 'events', pages: 3, files, complete: true });
    for (const f of files) expect(readFileSync(f).subarray(0, 4).toString()).toBe('PAR1');
  });

  it('refuses a bad command line and says what the API refused', async () => {
    const usage = await cli(['deliveries', '--format', 'xml', '--out', path.join(dir, 'x')]);
    expect(usage.code).toBe(1);
    expect(usage.stderr).toMatch(/^usage:/);
    const refused = await cli(['logs', '--format', 'csv', '--out', path.join(dir, 'x.csv'), '--status', 'failed']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^400 validation-error: .*status: is not a filter of logs exports/);
    expect(existsSync(path.join(dir, 'x.csv'))).toBe(false);
  });
});
