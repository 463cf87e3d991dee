import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runScript } from './support/process';
import { startTestService, type TestService } from './support/service';

/** `event-types` commands as a child process against the running API. */
describe('cli event-types', () => {
  let svc: TestService;
  let dir: string;
  beforeAll(async () => {
    svc = await startTestService({ LOG_LEVEL: 'warn' });
    dir = mkdtempSync(path.join(process.env.HOOKLINE_TEST_DIR ?? tmpdir(), 'cli-etp-'));
  });
  afterAll(async () => {
    await svc?.stop();
  });

  const env = (key = svc.apiKey) => ({ ...process.env, HOOKLINE_API_KEY: key, HOOKLINE_API_URL: svc.url, HOOKLINE_TENANT: svc.tenantId, TOPIC_PREFIX: svc.config.topicPrefix, DATA_DIR: svc.config.dataDir });
  const cli = (args: string[], key?: string) => runScript('cli/main.ts', ['event-types', ...args], env(key));
  const json = (r: { stdout: string }) => {
    expect(r.stdout.trim().split('\n')).toHaveLength(1);
    return JSON.parse(r.stdout) as Record<string, any>;
  };

  it('creates with a schema file, lists, gets and deletes', async () => {
    const schema = { type: 'object', properties: { amount: { type: 'integer' } } };
    const file = path.join(dir, 'invoice.json');
    writeFileSync(file, JSON.stringify(schema));
    const created = await cli(['create', '--name', 'invoice.paid', '--description', 'Paid.', '--schema', file]);
    expect({ code: created.code, stderr: created.stderr }).toEqual({ code: 0, stderr: '' });
    const type = json(created);
    expect(type).toMatchObject({ id: expect.stringMatching(/^etp_/), name: 'invoice.paid', description: 'Paid.', schema });
    expect(svc.service.store.get('event_type', svc.tenantId, type.id)).toMatchObject({ name: 'invoice.paid' });

    // each command is its own process: the independent ones run side by side
    const [listed, got] = await Promise.all([cli(['list']), cli(['get', type.id])]);
    expect(listed.code).toBe(0);
    expect(json(listed).event_types.map((t: { id: string }) => t.id)).toEqual([type.id]);
    expect(json(got)).toEqual(type);
    const deleted = await cli(['delete', type.id]);
    expect(json(deleted)).toEqual({ deleted: true, id: type.id });
    expect((await svc.api('GET', `/v1/tenants/${svc.tenantId}/event-types/${type.id}`)).status).toBe(404);
  });

  it('turns refusals and mistakes into one line on stderr and exit 1', async () => {
    const bad = path.join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ $ref: 'https://example.com/x.json' }));
    const notJson = path.join(dir, 'not.json');
    writeFileSync(notJson, '{ nope');
    expect((await cli(['create', '--name', 'dup.one'])).code).toBe(0);
    const cases: [string[], RegExp, string?][] = [
      [['create', '--name', 'dup.one'], /^409 conflict: /],
      [['create', '--name', 'refused', '--schema', bad], /^422 unprocessable-entity: .*schema\.\$ref/],
      [['create', '--name', 'x', '--schema', notJson], /not JSON/],
      [['create'], /needs --name/],
      [['get', 'etp_01j9zx5w3k8f6t2q4r7m1n0bcd'], /^404 not-found: /],
      [['list'], /^403 insufficient-scope: .*read:event-types/, await svc.newKey(['read:destinations'])],
    ];
    const results = await Promise.all(cases.map(([args, , key]) => cli(args, key)));
    cases.forEach(([args, message], i) => {
      const r = results[i]!;
      expect({ args, code: r.code, stdout: r.stdout, line: r.stderr.split('\n')[0] }).toEqual({ args, code: 1, stdout: '', line: expect.stringMatching(message) });
    });
  }, 60_000);
});
