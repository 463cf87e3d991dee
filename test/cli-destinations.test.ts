import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { runScript } from './support/process';
import { startReceiver, type Receiver } from './support/receiver';
import { startTestService, type TestService } from './support/service';

/** `destinations types|create|update|pause|resume|rotate-secret|changes|test-transformation|test-event` as a child process against the running API. */
describe('cli destinations', () => {
  let svc: TestService;
  let receiver: Receiver;
  let id: string;
  beforeAll(async () => {
    [svc, receiver] = await Promise.all([startTestService(), startReceiver()]);
    const created = await svc.api('POST', `/v1/tenants/${svc.tenantId}/destinations`, { name: 'cli dest', url: receiver.url });
    id = String(created.body.id);
  });
  afterAll(async () => {
    await Promise.all([svc?.stop(), receiver?.close()]);
  });

  const env = () => ({ ...process.env, TOPIC_PREFIX: svc.config.topicPrefix, DATA_DIR: svc.config.dataDir, HOOKLINE_API_KEY: svc.apiKey, HOOKLINE_API_URL: svc.url, HOOKLINE_TENANT: svc.tenantId });
  /** Runs a command that must succeed; its stdout is one line of JSON. */
  const run = async (args: string[]) => {
    const r = await runScript('cli/main.ts', ['destinations', ...args], env());
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(r.stdout.endsWith('\n')).toBe(true);
    expect(r.stdout.trim().split('\n')).toHaveLength(1);
    return JSON.parse(r.stdout) as Record<string, any>;
  };
  const fails = async (args: string[], message: RegExp) => {
    const r = await runScript('cli/main.ts', ['destinations', ...args], env());
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')[0]).toMatch(message);
  };

  it('updates, pauses, resumes and rotates, each answer one JSON line; changes lists them', async () => {
    const updated = await run(['update', id, '--name', 'cli renamed', '--rate-limit', '12', '--event-types', 'a.*,b', '--enabled', 'true', '--ordered', 'true', '--patch', '{"retry_schedule_ms":[0,100]}']);
    expect(updated).toMatchObject({ id, name: 'cli renamed', rate_limit_per_s: 12, event_types: ['a.*', 'b'], retry_schedule_ms: [0, 100], ordered: true });
    expect((await svc.api('GET', `/v1/tenants/${svc.tenantId}/destinations/${id}`)).body.ordered).toBe(true);
    expect(await run(['pause', id])).toMatchObject({ status: 'paused', enabled: false });
    expect(await run(['resume', id])).toMatchObject({ status: 'active', enabled: true });
    const etag = (await svc.api('GET', `/v1/tenants/${svc.tenantId}/destinations/${id}`)).headers.get('etag')!;
    const rotated = await run(['rotate-secret', id, '--overlap', '30', '--if-match', etag]);
    expect(rotated).toMatchObject({ id, signing_secret: expect.stringMatching(/^whsec_/), previous_secret_expires_at: expect.any(String) });
    const changes = await run(['changes', id, '--limit', '3']);
    expect(changes.changes.map((c: Record<string, unknown>) => c.action)).toEqual(['secret_rotated', 'resumed', 'paused']);
    expect(typeof changes.next_cursor).toBe('string');
  }, 120_000);

  it('lists the types, creates a broker destination, gives it a transformation from a file and test-runs it', async () => {
    const types = await run(['types']);
    expect(types.destination_types.map((t: Record<string, unknown>) => t.type)).toEqual(['webhook', 'kafka', 'amqp', 'nats', 'mqtt']);
    const created = await run(['create', '--name', 'cli nats', '--type', 'nats', '--url', 'nats://127.0.0.1:9', '--config', '{"subject":"orders"}', '--auth', '{"type":"bearer","token":"cli-nats-token"}']);
    expect(created).toMatchObject({ type: 'nats', config: { subject: 'orders' }, signing_secret: expect.stringMatching(/^whsec_/) });
    expect(JSON.stringify(created.auth)).not.toContain('cli-nats-token');
    const file = path.join(svc.config.dataDir, 'transform.js');
    writeFileSync(file, 'function transform(e) { return { body: { wrapped: e.body } }; }');
    const updated = await run(['update', String(created.id), '--transformation-file', file]);
    expect(updated.transformation).toContain('wrapped');
    const tried = await run(['test-transformation', String(created.id), '--body', '{"a":1}']);
    expect(tried).toMatchObject({ outcome: 'send', body: '{"wrapped":{"a":1}}' });
    expect((await run(['update', String(created.id), '--transformation-file', 'none'])).transformation).toBeNull();
    // a test event: queued for that destination alone
    const sent = await run(['test-event', String(created.id), '--body', '{"hello":"cli"}']);
    expect(sent).toMatchObject({ destination_id: created.id, status: 'queued', event_type: null, delivery_id: expect.stringMatching(/^dlv_/) });
  }, 120_000);

  it('refuses with one line on stderr and exit 1', async () => {
    await fails(['create', '--name', 'no url'], /needs --name <text> and --url <url>/);
    await fails(['create', '--name', 'bad', '--type', 'kafka', '--url', 'kafka://127.0.0.1:9'], /^400 validation-error: .*config: is required for a kafka destination/);
    await fails(['test-transformation', id], /needs one of --payload/);
    await fails(['test-event', id, '--body', '[1]'], /--body must be a JSON object/);
    await fails(['test-event', id, '--event-type', 'no.such.type'], /^400 validation-error: .*event_type: the tenant's catalogue has no event type no\.such\.type/);
    await fails(['update', id, '--transformation-file', '/nonexistent/t.js'], /--transformation-file: cannot read \/nonexistent\/t\.js \(ENOENT\)/);
    await fails(['update', id, '--if-match', '"1"', '--name', 'stale'], /^412 precondition-failed: /);
    await fails(['update', id, '--patch', '{"colour":"red"}'], /^422 unprocessable-entity: .*colour: is not a member of this body/);
    await fails(['rotate-secret', id, '--overlap', 'soon'], /--overlap must be a whole number/);
    await fails(['update', id, '--ordered', 'yes'], /--ordered must be true or false/);
  }, 120_000);
});
