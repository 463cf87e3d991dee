import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError } from '../../core/config';
import { generateSignerKey } from '../../core/signed-note';
import { startCluster, type RunningCluster } from '../../infra/cluster/cluster';
import { planOf } from '../../infra/cluster/main';
import { randomKek } from '../support/keyring';
import { startReceiver, type Receiver } from '../support/receiver';
import { callApi } from '../support/service-process';

describe('npm run cluster: its arguments', () => {
  it('plans one process per role by default, N whole processes, or the roles asked for', () => {
    expect(planOf([]).plan.map((p) => p.name)).toEqual(['api-1', 'ingest-1', 'stage-validate-1', 'stage-deliver-1', 'stage-deliver-2', 'stage-retry-1', 'sequencer-1', 'sequencer-2', 'sink-1']);
    expect(planOf(['--processes', '3']).plan).toEqual([1, 2, 3].map((i) => ({ name: `hookline-${i}`, args: [] })));
    expect(planOf(['--role', 'api', '--role=stage:deliver=3', '--brokers', '1'])).toMatchObject({ brokers: 1, plan: [{ name: 'api-1', args: ['--role', 'api'] }, { name: 'stage-deliver-1' }, { name: 'stage-deliver-2' }, { name: 'stage-deliver-3' }] });
    expect(() => planOf(['--role', 'stage:nothing'])).toThrow(/unknown role "stage:nothing"/);
    expect(() => planOf(['--processes', '0'])).toThrow(ConfigError);
    expect(() => planOf(['--processes', '2', '--role', 'api'])).toThrow(/one or the other/);
    expect(() => planOf(['--frobnicate'])).toThrow(/unknown argument "--frobnicate"/);
  });
});

/**
 * The service split by role on a three-broker cluster: two deliver processes share the partitions
 * of deliveries.requested. One of them is killed with SIGKILL while webhooks flow, then started
 * again: the other takes its partitions, the restarted one takes some back, and every accepted
 * webhook reaches the receiver.
 */
describe('the service by role on a three-broker cluster', () => {
  let cluster: RunningCluster | undefined;
  let receiver: Receiver | undefined;
  const dataDir = mkdtempSync(path.join(process.env.HOOKLINE_TEST_DIR ?? tmpdir(), 'cluster-'));
  let failed = true;

  afterAll(async () => {
    await cluster?.stop();
    await receiver?.close();
    if (!failed) rmSync(dataDir, { recursive: true, force: true });
  });

  it('loses nothing when a deliver process is killed and started again', async () => {
    receiver = await startReceiver();
    const env: NodeJS.ProcessEnv = { ...process.env, HOOKLINE_ENV: 'production', SECRETS_KEK: randomKek('cluster'), EVIDENCE_SIGNING_KEY: generateSignerKey('hookline.test/cluster'), DESTINATION_ALLOWED_NETWORKS: 'loopback', LOG_LEVEL: 'warn', KAFKA_PARTITIONS: '4', BOOTSTRAP_DEMO_TENANT: 'true', INGEST_RATE_LIMIT_PER_HOOK: 'off', INGEST_RATE_LIMIT_PER_TENANT: 'off' };
    // the run's own infrastructure is not this cluster's
    for (const name of ['KAFKA_BROKERS', 'REDIS_URL', 'SCHEMA_REGISTRY_URL', 'CLICKHOUSE_URL', 'STAGES', 'PORT', 'TOPIC_PREFIX']) delete env[name];
    cluster = await startCluster({
      dataDir,
      brokers: 3,
      plan: ['api', 'stage:validate', 'stage:deliver', 'stage:deliver', 'stage:retry', 'sequencer', 'sink'].map((role, i) => ({ name: `${role.replace(':', '-')}-${i}`, args: ['--role', role] })),
      env,
      firstHttpPort: 0,
    });
    const [api, , deliverA] = cluster.processes;
    for (const p of cluster.processes) {
      const ready = await fetch(`${p.url}/readyz`);
      expect(ready.status).toBe(200);
      const body = (await ready.json()) as { dependencies: Record<string, { status: string }> };
      expect(body.dependencies.kafka!.status).toBe('up');
    }
    const key = cluster.demoKey()!;
    expect(key).toMatch(/^hlk_/);
    const dest = await callApi(api!.url, key, 'POST', '/v1/tenants/demo/destinations', { name: 'cluster receiver', url: receiver.url });
    expect(dest.status).toBe(201);
    const ing = await callApi(api!.url, key, 'POST', '/v1/tenants/demo/ingesters', { name: 'cluster in', provider: 'none', config: {}, destination_ids: [dest.body.id] });
    expect(ing.status).toBe(201);
    const hook = `${api!.url}/v1/hooks/${ing.body.id as string}`;

    const accepted: number[] = [];
    const send = async (from: number, to: number) => {
      for (let i = from; i < to; i += 20) {
        const answers = await Promise.all(
          Array.from({ length: Math.min(20, to - i) }, (_, j) => fetch(hook, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: i + j }) }).then((r) => ({ n: i + j, status: r.status }))),
        );
        for (const a of answers) if (a.status === 202) accepted.push(a.n);
      }
    };
    await send(0, 200);
    deliverA!.signal('SIGKILL');
    await deliverA!.exited();
    await send(200, 400);
    await deliverA!.start();
    await send(400, 600);
    expect(accepted.length).toBe(600);

    const deadline = Date.now() + 120_000;
    const delivered = () => new Set(receiver!.requests.map((r) => (JSON.parse(r.body.toString()) as { n: number }).n));
    while (delivered().size < accepted.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 500));
    const missing = accepted.filter((n) => !delivered().has(n));
    expect(missing).toEqual([]);
    failed = false;
  }, 420_000);
});
