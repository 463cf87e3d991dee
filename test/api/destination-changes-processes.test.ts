import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import { freePort } from '../../infra/process/ports';
import { spawnService, stopService, waitForHealth, type ServiceProcess } from '../support/service-process';
import { startTestService, type TestService } from '../support/service';
import { randomEvidenceKey } from '../support/keyring';

/**
 * If-Match across API processes that share the config topic and Redis: two changes of one
 * destination with the same version, sent at once to two processes, give exactly one winner,
 * and each process answers the ETag the other wrote.
 */
describe('destination changes across API processes', () => {
  let a: TestService;
  let b: ServiceProcess | undefined;
  let bUrl = '';

  beforeAll(async () => {
    const evidenceKey = randomEvidenceKey();
    a = await startTestService({ RATE_LIMITS: 'default=100000/60s', EVIDENCE_SIGNING_KEY: evidenceKey });
    const port = await freePort();
    bUrl = `http://127.0.0.1:${port}`;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      STAGES: 'api',
      EVIDENCE_SIGNING_KEY: evidenceKey,
      DATA_DIR: mkdtempSync(path.join(a.config.dataDir, 'second-')),
      TOPIC_PREFIX: a.config.topicPrefix,
      CLICKHOUSE_DATABASE: a.config.clickhouseDatabase,
      KAFKA_REPLICATION_FACTOR: '1',
      KAFKA_PARTITIONS: '2',
      BOOTSTRAP_DEMO_TENANT: 'false',
      RATE_LIMITS: 'default=100000/60s',
      DESTINATION_ALLOWED_NETWORKS: 'loopback',
      LOG_LEVEL: 'warn',
      SECRETS_KEK: a.config.secrets.kek,
    };
    for (const name of ['CLICKHOUSE_URL', 'PUBLIC_BASE_URL', 'ERROR_BASE', 'SECRETS_KEK_FILE']) delete env[name];
    b = spawnService(env);
    await waitForHealth(bUrl, b, 120_000);
  }, 180_000);

  afterAll(async () => {
    if (b) await stopService(b);
    await a?.stop();
  });

  const patch = async (base: string, id: string, body: unknown, ifMatch: string) => {
    const res = await fetch(`${base}/v1/tenants/${a.tenantId}/destinations/${id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${a.apiKey}`, 'content-type': 'application/merge-patch+json', 'if-match': ifMatch },
      body: JSON.stringify(body),
    });
    return { status: res.status, etag: res.headers.get('etag'), body: (await res.json()) as Record<string, unknown> };
  };

  it('of two writers on two processes with the same If-Match, exactly one wins', async () => {
    const created = await a.api('POST', `/v1/tenants/${a.tenantId}/destinations`, { name: 'two-processes', url: 'http://127.0.0.1:9/hook' });
    expect(created.status).toBe(201);
    const id = String(created.body.id);
    let tag = created.headers.get('etag')!;
    for (let round = 0; round < 4; round++) {
      const [fromA, fromB] = await Promise.all([patch(a.url, id, { rate_limit_per_s: 100 + round }, tag), patch(bUrl, id, { rate_limit_per_s: 200 + round }, tag)]);
      expect([fromA.status, fromB.status].sort()).toEqual([200, 412]);
      const winner = fromA.status === 200 ? fromA : fromB;
      tag = winner.etag!;
      // the other process has read the winner's write: its version is the one to match now
      const next = await patch(fromA.status === 200 ? bUrl : a.url, id, { rate_limit_per_s: winner.body.rate_limit_per_s }, tag);
      expect({ status: next.status, etag: next.etag }).toEqual({ status: 200, etag: tag });
    }
  }, 60_000);
});
