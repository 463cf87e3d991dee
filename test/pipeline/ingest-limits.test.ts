import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { startLocalRedis, type LocalRedis } from '../../infra/redis/local-redis';
import { freePort } from '../../infra/process/ports';
import { leaseOf } from '../../pipeline/ingest/limits';
import { randomEvidenceKey, randomKek } from '../support/keyring';
import { expectProblem } from '../support/problem';
import { spawnService, stopService, waitForHealth, type ServiceProcess } from '../support/service-process';
import { startTestService, type TestService } from '../support/service';
import { uniqueSuffix } from '../support/ids';

/**
 * Ingest rate limits on the running service: per Hook URL and per tenant, in Redis, on the fast
 * path and the router, shared by two service processes, and failing open without Redis.
 * Windows are an hour long so that no token refills while a test counts.
 */

interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

/** One webhook; `gzip` sends it compressed, which the fast path leaves to the router. */
async function post(hookUrl: string, options: { gzip?: boolean } = {}): Promise<Answer> {
  const json = JSON.stringify({ hello: 'limits' });
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (options.gzip) headers['content-encoding'] = 'gzip';
  const res = await fetch(hookUrl, { method: 'POST', headers, body: options.gzip ? gzipSync(json) : json, signal: AbortSignal.timeout(15_000) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

/** `count` webhooks, `concurrency` at a time, spread over the Hook URLs given; the answers in order. */
async function postMany(hookUrls: string[], count: number, concurrency = 8, options: { gzip?: boolean } = {}): Promise<Answer[]> {
  const answers: Answer[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        answers[i] = await post(hookUrls[i % hookUrls.length]!, options);
      }
    }),
  );
  return answers;
}

const accepted = (answers: Answer[]) => answers.filter((a) => a.status === 202).length;

const PER_HOOK = 100;
const PER_TENANT = 150;
// a busy test machine can stall an event loop past the production timeout, which would let
// webhooks through unlimited (fail open) and spoil the counts
const LIMITS = { INGEST_RATE_LIMIT_PER_HOOK: `${PER_HOOK}/1h`, INGEST_RATE_LIMIT_PER_TENANT: `${PER_TENANT}/1h`, INGEST_RATE_LIMIT_TIMEOUT_MS: '5000' };

async function ingester(svc: TestService, tenantId: string, key: string, name: string): Promise<string> {
  const res = await svc.api('POST', `/v1/tenants/${tenantId}/ingesters`, { name, provider: 'none', config: {} }, { key });
  if (res.status !== 201) throw new Error(`ingester: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.id as string;
}

describe('ingest rate limits', () => {
  let svc: TestService;
  let second: ServiceProcess | undefined;
  let secondUrl: string;
  let secondDir: string;
  const kek = process.env.SECRETS_KEK ?? randomKek();
  // API processes split from the rest of the deployment share its evidence key
  const evidenceKey = randomEvidenceKey();

  /** Records on the received topic: what the Hook URLs stored in Kafka. */
  const storedEvents = async (): Promise<number> => {
    const admin = svc.service.kafka.admin();
    await admin.connect();
    try {
      const offsets = await admin.fetchTopicOffsets(svc.service.topics.received);
      return offsets.reduce((sum, o) => sum + Number(o.high) - Number(o.low), 0);
    } finally {
      await admin.disconnect();
    }
  };

  beforeAll(async () => {
    svc = await startTestService({ ...LIMITS, STAGES: 'api', SECRETS_KEK: kek, EVIDENCE_SIGNING_KEY: evidenceKey });
  }, 120_000);

  afterAll(async () => {
    if (second) await stopService(second);
    if (secondDir) rmSync(secondDir, { recursive: true, force: true });
    await svc?.stop();
  }, 60_000);

  it('refuses webhooks over the Hook URL limit with 429, Retry-After and RateLimit headers, on the fast path and the router, storing none', async () => {
    const hook = `${svc.url}/v1/hooks/${await ingester(svc, svc.tenantId, svc.apiKey, 'limited')}`;
    const before = await storedEvents();
    const fast = await postMany([hook], PER_HOOK + 10);
    expect(accepted(fast)).toBe(PER_HOOK);
    const refused = fast.filter((a) => a.status !== 202);
    expect(refused).toHaveLength(10);
    for (const answer of refused) {
      expectProblem(answer, 429, 'rate-limit-exceeded', svc.config.errorBase);
      expect(answer.body.retry_after_seconds).toBeGreaterThanOrEqual(1);
      expect(answer.headers.get('retry-after')).toBe(String(answer.body.retry_after_seconds));
      expect(answer.headers.get('ratelimit-policy')).toBe(`${PER_HOOK};w=3600`);
      expect(answer.headers.get('ratelimit-limit')).toBe(String(PER_HOOK));
      expect(answer.headers.get('ratelimit-remaining')).toBe('0');
      expect(answer.headers.get('ratelimit')).toMatch(new RegExp(`^limit=${PER_HOOK}, remaining=0, reset=\\d+$`));
      expect(Number(answer.headers.get('ratelimit-reset'))).toBeGreaterThan(0);
      expect(answer.body.detail).toMatch(/this Hook URL/);
    }
    // a compressed body goes through the router: refused the same way
    const routed = await postMany([hook], 3, 3, { gzip: true });
    for (const answer of routed) {
      expectProblem(answer, 429, 'rate-limit-exceeded', svc.config.errorBase);
      expect(answer.headers.get('ratelimit-policy')).toBe(`${PER_HOOK};w=3600`);
      expect(answer.headers.get('retry-after')).toBe(String(answer.body.retry_after_seconds));
    }
    // only the accepted ones reached Kafka
    expect((await storedEvents()) - before).toBe(PER_HOOK);
  });

  it('counts all Hook URLs of a tenant against its limit, and leaves another tenant alone', async () => {
    const tenant = `tenant-rl-${uniqueSuffix()}`;
    const key = await svc.newKey(['read:ingesters', 'write:ingesters'], { tenantId: tenant });
    const hooks = [await ingester(svc, tenant, key, 'one'), await ingester(svc, tenant, key, 'two')].map((id) => `${svc.url}/v1/hooks/${id}`);
    const other = `tenant-rl-${uniqueSuffix()}`;
    const otherKey = await svc.newKey(['read:ingesters', 'write:ingesters'], { tenantId: other });
    const otherHook = `${svc.url}/v1/hooks/${await ingester(svc, other, otherKey, 'other')}`;

    // 90 to each Hook URL: under its own limit, over the tenant's together
    const answers = await postMany(hooks, 180);
    expect(accepted(answers)).toBe(PER_TENANT);
    const refusal = answers.find((a) => a.status === 429)!;
    expectProblem(refusal, 429, 'rate-limit-exceeded', svc.config.errorBase);
    expect(refusal.body.detail).toMatch(/this tenant's Hook URLs/);
    expect(refusal.headers.get('ratelimit-policy')).toBe(`${PER_TENANT};w=3600`);
    // the router refuses by the tenant limit too
    const routed = await post(hooks[0]!, { gzip: true });
    expectProblem(routed, 429, 'rate-limit-exceeded', svc.config.errorBase);

    const others = await postMany([otherHook], 20);
    expect(others.map((a) => a.status)).toEqual(new Array(20).fill(202));
  });

  it('two service processes sharing Redis accept at most the limit plus one lease per process', async () => {
    secondDir = mkdtempSync(path.join(process.env.HOOKLINE_TEST_DIR ?? tmpdir(), 'svc-rl-'));
    const port = await freePort();
    secondUrl = `http://127.0.0.1:${port}`;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...LIMITS,
      HOST: '127.0.0.1',
      PORT: String(port),
      DATA_DIR: secondDir,
      // the same deployment: same topics (so the same ingesters) and the same Redis keys
      TOPIC_PREFIX: svc.config.topicPrefix,
      CLICKHOUSE_DATABASE: svc.config.clickhouseDatabase,
      STAGES: 'api',
      KAFKA_REPLICATION_FACTOR: '1',
      KAFKA_PARTITIONS: '2',
      BOOTSTRAP_DEMO_TENANT: 'false',
      DESTINATION_ALLOWED_NETWORKS: 'loopback',
      LOG_LEVEL: 'warn',
      SECRETS_KEK: kek,
      EVIDENCE_SIGNING_KEY: evidenceKey,
    };
    for (const name of ['CLICKHOUSE_URL', 'PUBLIC_BASE_URL', 'ERROR_BASE']) delete env[name];
    second = spawnService(env);
    await waitForHealth(secondUrl, second, 120_000);

    const tenant = `tenant-rl-${uniqueSuffix()}`;
    const key = await svc.newKey(['read:ingesters', 'write:ingesters'], { tenantId: tenant });
    const id = await ingester(svc, tenant, key, 'shared');
    // the first webhook at the second process finds the ingester once its store catches up
    const urls = [`${svc.url}/v1/hooks/${id}`, `${secondUrl}/v1/hooks/${id}`];
    const answers = await postMany(urls, PER_HOOK * 2, 16);
    const ok = accepted(answers);
    expect(answers.filter((a) => a.status !== 202).every((a) => a.status === 429)).toBe(true);
    expect(accepted(answers.filter((_, i) => i % 2 === 1))).toBeGreaterThan(0);
    const slack = 2 * leaseOf({ limit: PER_HOOK, windowSeconds: 3600 });
    expect(ok).toBeLessThanOrEqual(PER_HOOK + slack);
    expect(ok).toBeGreaterThanOrEqual(PER_HOOK - slack);
  }, 180_000);
});

describe('ingest rate limits without Redis', () => {
  let svc: TestService;
  let redis: LocalRedis | undefined;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(process.env.HOOKLINE_TEST_DIR ?? tmpdir(), 'rl-redis-'));
    redis = await startLocalRedis(path.join(dir, 'redis'));
    svc = await startTestService({ REDIS_URL: redis.url, STAGES: 'api', EVIDENCE_SIGNING_KEY: randomEvidenceKey(), INGEST_RATE_LIMIT_PER_HOOK: '2/1h', INGEST_RATE_LIMIT_PER_TENANT: 'off', INGEST_RATE_LIMIT_TIMEOUT_MS: '1000' });
  }, 120_000);

  afterAll(async () => {
    await svc?.stop();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('accepts webhooks when Redis is down (fail open)', async () => {
    const limited = `${svc.url}/v1/hooks/${await ingester(svc, svc.tenantId, svc.apiKey, 'limited')}`;
    const hook = `${svc.url}/v1/hooks/${await ingester(svc, svc.tenantId, svc.apiKey, 'open')}`;
    // enforced while Redis answers
    expect((await postMany([limited], 3, 1)).map((a) => a.status)).toEqual([202, 202, 429]);
    await redis!.stop();
    redis = undefined;
    // a Hook URL with no lease left asks Redis, which does not answer: five times its limit pass
    const down = await postMany([hook], 10, 2);
    expect(down.map((a) => a.status)).toEqual(new Array(10).fill(202));
    const routed = await post(hook, { gzip: true });
    expect(routed.status).toBe(202);
  });
});
