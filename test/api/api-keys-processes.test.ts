import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import { freePort } from '../../infra/process/ports';
import { callApi, spawnService, stopService, waitForHealth, type ServiceProcess } from '../support/service-process';
import { startTestService, type TestService } from '../support/service';
import { randomEvidenceKey } from '../support/keyring';

/**
 * Revocation across API processes that share the config topic: a key revoked through one is
 * refused by the other, and the delay between the revoke answer and the first 401 elsewhere is
 * measured (printed; the goal is under a second, asserted loosely on this shared machine).
 */
describe('API key revocation across processes', () => {
  let a: TestService;
  let b: ServiceProcess | undefined;
  let bUrl = '';

  beforeAll(async () => {
    // an API process beside another publishes the deployment's one evidence key
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

  /** Polls `url` with the key until it answers 401; the milliseconds from `since`. */
  async function untilRefused(url: string, key: string, since: number): Promise<{ ms: number; detail: string }> {
    const deadline = since + 10_000;
    for (;;) {
      const r = await callApi(url, key, 'GET', `/v1/tenants/${a.tenantId}/api-keys`);
      if (r.status === 401) return { ms: Date.now() - since, detail: String(r.body.detail) };
      expect(r.status).toBe(200);
      if (Date.now() > deadline) throw new Error(`${url} still accepts the revoked key after 10 s`);
      await new Promise((res) => setTimeout(res, 5));
    }
  }

  it('a key revoked in one process is refused by the other within about a second', async () => {
    const delays: number[] = [];
    for (const [revokeAt, observeAt] of [
      [a.url, bUrl],
      [bUrl, a.url],
      [a.url, bUrl],
      [bUrl, a.url],
    ] as const) {
      const created = await callApi(revokeAt, a.apiKey, 'POST', `/v1/tenants/${a.tenantId}/api-keys`, { name: 'cross', scopes: ['read:keys'] });
      expect(created.status).toBe(201);
      const key = String(created.body.api_key);
      // both processes accept it first (the other one catches up on an unknown key)
      expect((await callApi(observeAt, key, 'GET', `/v1/tenants/${a.tenantId}/api-keys`)).status).toBe(200);
      const revoked = await callApi(revokeAt, a.apiKey, 'POST', `/v1/tenants/${a.tenantId}/api-keys/${created.body.id}/revoke`);
      expect(revoked.status).toBe(200);
      const answered = Date.now();
      expect((await callApi(revokeAt, key, 'GET', `/v1/tenants/${a.tenantId}/api-keys`)).status).toBe(401);
      const { ms, detail } = await untilRefused(observeAt, key, answered);
      expect(detail).toBe('the API key has been revoked');
      delays.push(ms);
      // the other process shows it revoked too
      const shown = await callApi(observeAt, a.apiKey, 'GET', `/v1/tenants/${a.tenantId}/api-keys/${created.body.id}`);
      expect(shown.body).toMatchObject({ status: 'revoked', revoked_at: revoked.body.revoked_at });
    }
    process.stderr.write(`\nrevocation seen by the other process after ${delays.join(', ')} ms (max ${Math.max(...delays)} ms)\n`);
    for (const ms of delays) expect(ms).toBeLessThan(3_000);
  }, 120_000);
});
