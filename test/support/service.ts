import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ClickHouseClient } from '@clickhouse/client';
import { loadConfig, type Config } from '../../core/config';
import { Logger } from '../../core/log';
import { SCOPES, type Scope } from '../../core/scopes';
import { OPERATOR_TENANT } from '../../core/tenants';
import { ensureTenant, issueApiKey } from '../../platform/config-store/tenants';
import { startService, type RunningService } from '../../service/service';
import { uniqueSuffix } from './ids';
import { randomKek } from './keyring';

export interface TestService {
  service: RunningService;
  /** The service's own ClickHouse client (the embedded engine allows one per process). */
  clickhouse: ClickHouseClient;
  config: Config;
  url: string;
  tenantId: string;
  apiKey: string;
  /** Calls the API as the test tenant (or with another key). */
  api(method: string, pathname: string, body?: unknown, options?: { key?: string | null; headers?: Record<string, string> }): Promise<{ status: number; headers: Headers; body: any }>;
  newKey(scopes: Scope[], options?: { tenantId?: string; resourceIds?: string[] }): Promise<string>;
  /** A new operator key (what `keys create --operator` makes on the service's host). */
  operatorKey(): Promise<string>;
  stop(): Promise<void>;
}

/**
 * The whole service in this test process, on the run's shared Kafka, registry and Redis,
 * with its own topics, consumer groups, ClickHouse database, data dir and tenant.
 */
export async function startTestService(env: Record<string, string> = {}): Promise<TestService> {
  const suffix = uniqueSuffix();
  const dataDir = mkdtempSync(path.join(process.env.HOOKLINE_TEST_DIR ?? tmpdir(), 'svc-'));
  const config = loadConfig({
    ...process.env,
    PORT: '0',
    DATA_DIR: dataDir,
    TOPIC_PREFIX: `t${suffix}.`,
    CLICKHOUSE_DATABASE: `t_${suffix}`,
    BOOTSTRAP_DEMO_TENANT: 'false',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'error',
    KAFKA_PARTITIONS: '2',
    KAFKA_REPLICATION_FACTOR: '1',
    // receivers in tests listen on loopback, which production refuses
    DESTINATION_ALLOWED_NETWORKS: 'loopback',
    // the run's key (global setup), so a CLI the test spawns opens what the service sealed
    SECRETS_KEK: process.env.SECRETS_KEK ?? randomKek(),
    // hour and day analytics within seconds of the attempts, not the production lag's half a minute
    ANALYTICS_ROLLUP_SECONDS: '1',
    ANALYTICS_ROLLUP_LAG_SECONDS: '3',
    ...env,
  });
  const log = new Logger(config.logLevel);
  const service = await startService(config, log);
  const url = service.url!;
  // the service names its bound port in problem types and Hook URLs; so do the tests
  if (config.errorBase.endsWith(':0')) config.errorBase = url;
  if (config.publicBaseUrl.endsWith(':0')) config.publicBaseUrl = url;
  const tenantId = `tenant-${suffix}`;
  await ensureTenant(service.store, tenantId);
  const apiKey = (await issueApiKey(service.store, tenantId, [...SCOPES])).api_key;
  if (!service.clickhouse) throw new Error('the test service runs without ClickHouse');
  return {
    service,
    clickhouse: service.clickhouse,
    config,
    url,
    tenantId,
    apiKey,
    async api(method, pathname, body, options = {}) {
      const key = options.key === undefined ? apiKey : options.key;
      const headers: Record<string, string> = { ...(options.headers ?? {}) };
      if (key !== null) headers.authorization = `Bearer ${key}`;
      if (body !== undefined) headers['content-type'] ??= 'application/json';
      const res = await fetch(`${url}${pathname}`, { method, headers, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        /* not JSON */
      }
      return { status: res.status, headers: res.headers, body: parsed };
    },
    async newKey(scopes, options = {}) {
      const t = options.tenantId ?? tenantId;
      await ensureTenant(service.store, t);
      return (await issueApiKey(service.store, t, scopes, { resourceIds: options.resourceIds ?? null })).api_key;
    },
    async operatorKey() {
      return (await issueApiKey(service.store, OPERATOR_TENANT, [], { name: 'operator' })).api_key;
    },
    async stop() {
      await service.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000, intervalMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
