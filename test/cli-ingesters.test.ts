import { runScript } from './support/process';
import { startTestService, type TestService } from './support/service';

/** `ingesters get|update` as a child process against the running API. */
describe('cli ingesters', () => {
  let svc: TestService;
  let id: string;
  beforeAll(async () => {
    svc = await startTestService();
    const created = await svc.api('POST', `/v1/tenants/${svc.tenantId}/ingesters`, { name: 'cli ingester', provider: 'none', config: {}, filters: [{ type: 'event_type', op: 'in', values: ['a'] }] });
    id = String(created.body.id);
  });
  afterAll(async () => {
    await svc?.stop();
  });

  const env = () => ({ ...process.env, TOPIC_PREFIX: svc.config.topicPrefix, DATA_DIR: svc.config.dataDir, HOOKLINE_API_KEY: svc.apiKey, HOOKLINE_API_URL: svc.url, HOOKLINE_TENANT: svc.tenantId });
  const cli = (args: string[]) => runScript('cli/main.ts', ['ingesters', ...args], env());
  /** Runs a command that must succeed; its stdout is one line of JSON. */
  const run = async (args: string[]) => {
    const r = await cli(args);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(r.stdout.trim().split('\n')).toHaveLength(1);
    return JSON.parse(r.stdout) as Record<string, any>;
  };

  it('sets ordered and renames, keeping what it is not told to change; get shows it', async () => {
    expect(await run(['get', id])).toMatchObject({ id, name: 'cli ingester', ordered: false });
    const ordered = await run(['update', id, '--ordered', 'true']);
    expect(ordered).toMatchObject({ id, name: 'cli ingester', ordered: true, provider: 'none', filters: [{ type: 'event_type', op: 'in', values: ['a'] }] });
    expect(await run(['update', id, '--name', 'cli renamed'])).toMatchObject({ name: 'cli renamed', ordered: true });
    expect((await svc.api('GET', `/v1/tenants/${svc.tenantId}/ingesters/${id}`)).body).toMatchObject({ name: 'cli renamed', ordered: true });
    expect(await run(['update', id, '--ordered', 'false'])).toMatchObject({ ordered: false });
  }, 120_000);

  it('refuses with one line on stderr and exit 1', async () => {
    for (const [args, message] of [
      [['update', id, '--ordered', 'yes'], /^--ordered must be true or false$/],
      [['update', id], /^ingesters update needs something to change/],
      [['get', 'ing_nope'], /^404 not-found: /],
    ] as const) {
      const r = await cli([...args]);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr.trim().split('\n')[0]).toMatch(message);
    }
  }, 120_000);
});
