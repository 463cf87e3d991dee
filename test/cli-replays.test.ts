import { runScript } from './support/process';
import { receiverPool } from './support/receiver';
import { eventually, startTestService, type TestService } from './support/service';
import { attemptsOf, destinationWithIngester, sendEvent } from './support/flow';

type Json = Record<string, any>;

/** `replays start|status|list|cancel` and `evidence verify` of a replayed delivery, as child processes against the running service. */
describe('CLI: replays', () => {
  let svc: TestService;
  const receivers = receiverPool();

  beforeAll(async () => {
    svc = await startTestService({ EVIDENCE_BATCH_AGE_MS: '50' });
  }, 60_000);
  afterAll(async () => {
    await receivers.closeAll();
    await svc?.stop();
  });

  it('starts a job and waits for it, shows, lists and refuses to cancel it finished; the replayed leaf verifies', async () => {
    const receiver = await receivers.next();
    const dest = await destinationWithIngester(svc, 'cli replay', receiver.url);
    const from = new Date().toISOString();
    const events = [await sendEvent(dest.hookUrl, { n: 1 }), await sendEvent(dest.hookUrl, { n: 2 })];
    await eventually('originals delivered', async () => {
      const rows = (await Promise.all(events.map((e) => attemptsOf(svc, e)))).flat();
      return rows.filter((r) => r.status === 'delivered').length === 2 ? rows : undefined;
    });
    const to = new Date(Date.now() + 1).toISOString();

    const env = { ...process.env, HOOKLINE_API_KEY: svc.apiKey, HOOKLINE_API_URL: svc.url, HOOKLINE_TENANT: svc.tenantId };
    const started = await runScript('cli/main.ts', ['replays', 'start', '--from', from, '--to', to, '--destination', dest.destinationId, '--status', 'delivered', '--wait'], env);
    expect(started.stderr).toBe('');
    const [first, last] = started.stdout.trim().split('\n').map((l) => JSON.parse(l) as Json);
    expect(first).toMatchObject({ status: 'running', matched: 2 });
    expect(last).toMatchObject({ id: first!.id, status: 'completed', replayed: 2, delivered: 2 });
    expect(receiver.requests.map((r) => JSON.parse(r.body.toString()).n).sort()).toEqual([1, 1, 2, 2]);

    const replayed = (await svc.api('GET', `/v1/tenants/${svc.tenantId}/deliveries?status=delivered`)).body.deliveries.map((d: Json) => d.id).filter((id: string) => !receiver.requests.slice(0, 2).some((r) => r.headers['webhook-id'] === id));
    expect(replayed).toHaveLength(2);
    await eventually('replayed leaf sealed', async () => {
      const r = await svc.api('GET', `/v1/tenants/${svc.tenantId}/evidence/${replayed[0]}`);
      return r.body.status === 'confirmed' ? r.body : undefined;
    });

    // one process each, at once: a CLI start costs seconds on a busy machine
    const [status, list, cancel, missing, verified] = await Promise.all([
      runScript('cli/main.ts', ['replays', 'status', first!.id], env),
      runScript('cli/main.ts', ['replays', 'list'], env),
      runScript('cli/main.ts', ['replays', 'cancel', first!.id], env),
      runScript('cli/main.ts', ['replays', 'start', '--from', from], env),
      runScript('cli/main.ts', ['evidence', 'verify', replayed[0], '--tenant', svc.tenantId, '--state', `${process.env.HOOKLINE_TEST_DIR ?? '/tmp'}/replay-evidence-${svc.tenantId}.json`], env),
    ]);
    expect(JSON.parse(status.stdout)).toMatchObject({ id: first!.id, status: 'completed' });
    expect((JSON.parse(list.stdout) as Json).replays.map((j: Json) => j.id)).toEqual([first!.id]);
    expect(cancel.code).toBe(1);
    expect(cancel.stderr.trim()).toMatch(/^409 conflict: replay job rpl_\w+ is completed/);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/needs --from <time> and --to <time>/);
    // the verifier rebuilds the v 2 leaf, replay_of included, and finds it sealed
    expect(verified.stderr).toBe('');
    expect(JSON.parse(verified.stdout)).toMatchObject({ verified: true, delivery_id: replayed[0] });
  }, 150_000);
});
