import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, loadConfig, SETTINGS, STAGE_NAMES } from '../core/config';
import { generateSignerKey } from '../core/signed-note';
import { randomKek } from './support/keyring';
import { REPO_ROOT, runScript } from './support/process';

/** Production needs a key-encryption key; these tests are about other settings. */
const KEK = { SECRETS_KEK: randomKek() };

describe('configuration', () => {
  it('has documented defaults', () => {
    const c = loadConfig(KEK, '/srv/app');
    expect(c.port).toBe(8080);
    expect(c.dataDir).toBe('/srv/app/.data');
    expect(c.kafkaBrokers).toBeUndefined();
    expect(c.kafkaReplicationFactor).toBe(1);
    expect(c.ingestMaxBodyBytes).toBe(1_048_576);
    expect(c.deliveryTimeoutMs).toBe(15_000);
    expect(c.stages).toEqual(['api', 'ingest', 'validate', 'filter', 'route', 'deliver', 'retry', 'evidence', 'sink']);
    expect(c.publicBaseUrl).toBe('http://127.0.0.1:8080');
    expect(c.ingestRateLimits).toEqual({ perHook: { limit: 500, windowSeconds: 1 }, perTenant: { limit: 2000, windowSeconds: 1 }, timeoutMs: 200 });
    expect(loadConfig({ ...KEK, INGEST_RATE_LIMIT_PER_HOOK: 'off', INGEST_RATE_LIMIT_PER_TENANT: '90/1m' }).ingestRateLimits).toMatchObject({ perHook: null, perTenant: { limit: 90, windowSeconds: 60 } });
    expect(c.rateLimitTimeoutMs).toBe(250);
    expect(loadConfig({ ...KEK, RATE_LIMIT_TIMEOUT_MS: '1000' }).rateLimitTimeoutMs).toBe(1000);
  });

  it('is strict by default and relaxes only named defaults in development, saying so', () => {
    const strict = loadConfig(KEK);
    expect(strict.environment).toBe('production');
    expect(strict.destinationAllowedNetworks.ranges).toEqual([]);
    expect(strict.relaxedDefaults).toEqual([]);
    const dev = loadConfig({ HOOKLINE_ENV: 'development' });
    expect(dev.destinationAllowedNetworks.ranges.length).toBeGreaterThan(0);
    expect(dev.relaxedDefaults.some((l) => l.startsWith('DESTINATION_ALLOWED_NETWORKS=loopback'))).toBe(true);
    // a value set explicitly is not a relaxed default, in development either
    const explicit = loadConfig({ HOOKLINE_ENV: 'development', DESTINATION_ALLOWED_NETWORKS: 'none' });
    expect(explicit.destinationAllowedNetworks.ranges).toEqual([]);
    expect(explicit.relaxedDefaults.some((l) => l.startsWith('DESTINATION_ALLOWED_NETWORKS'))).toBe(false);
    // the key that seals stored secrets: required in production, generated outside DATA_DIR in development
    expect(() => loadConfig({})).toThrow(/SECRETS_KEK or SECRETS_KEK_FILE is required/);
    expect(dev.relaxedDefaults.some((l) => l.startsWith('SECRETS_KEK_FILE=') && l.includes('.hookline'))).toBe(true);
    expect(loadConfig({ HOOKLINE_ENV: 'development', ...KEK }).relaxedDefaults.some((l) => l.startsWith('SECRETS_KEK'))).toBe(false);
  });

  it('writes JSON log lines, and readable ones by default in development', () => {
    expect(loadConfig(KEK).logFormat).toBe('json');
    const dev = loadConfig({ HOOKLINE_ENV: 'development', ...KEK });
    expect(dev.logFormat).toBe('pretty');
    expect(dev.relaxedDefaults.some((l) => l.startsWith('LOG_FORMAT=pretty'))).toBe(true);
    const json = loadConfig({ HOOKLINE_ENV: 'development', LOG_FORMAT: 'json', ...KEK });
    expect([json.logFormat, json.relaxedDefaults.some((l) => l.startsWith('LOG_FORMAT'))]).toEqual(['json', false]);
    expect(() => loadConfig({ LOG_FORMAT: 'xml', ...KEK })).toThrow(/LOG_FORMAT: must be one of json, pretty/);
  });

  it('reads brokers and raises the replication default for an external cluster', () => {
    const c = loadConfig({ ...KEK, KAFKA_BROKERS: 'k1:9092, k2:9092', STAGES: 'deliver,sink' });
    expect(c.kafkaBrokers).toEqual(['k1:9092', 'k2:9092']);
    expect(c.kafkaReplicationFactor).toBe(3);
    expect(c.stages).toEqual(['deliver', 'sink']);
  });

  it('reports every problem at once', () => {
    let error: unknown;
    try {
      loadConfig({ ...KEK, PORT: 'eighty', KAFKA_BROKERS: 'nohost', REDIS_URL: 'http://x', LOG_LEVEL: 'loud', STAGES: 'deliver,teleport', INGEST_MAX_BODY_BYTES: '0', INGEST_RATE_LIMIT_PER_HOOK: 'fast' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems).toHaveLength(7);
    for (const name of ['PORT', 'KAFKA_BROKERS', 'REDIS_URL', 'LOG_LEVEL', 'STAGES', 'INGEST_MAX_BODY_BYTES', 'INGEST_RATE_LIMIT_PER_HOOK']) {
      expect(problems.some((p) => p.startsWith(`${name}:`))).toBe(true);
    }
  });

  it('refuses a process that runs the api or evidence stage but not every stage without EVIDENCE_SIGNING_KEY', () => {
    const refused = (env: Record<string, string>) => {
      try {
        loadConfig({ ...KEK, ...env });
        return [];
      } catch (err) {
        return (err as ConfigError).problems;
      }
    };
    const rule = /^EVIDENCE_SIGNING_KEY is required: processes split by stage must share EVIDENCE_SIGNING_KEY/;
    for (const stages of ['api', 'evidence', 'api,deliver', 'api,validate,filter,route,evidence,sink']) {
      expect(refused({ STAGES: stages })).toEqual([expect.stringMatching(rule)]);
      expect(refused({ STAGES: stages, EVIDENCE_SIGNING_KEY: generateSignerKey('hookline.test/split') })).toEqual([]);
    }
    // every stage in one process keeps its generated key; stages without checkpoints need none
    for (const stages of ['all', STAGE_NAMES.join(','), 'deliver,retry', 'sink']) expect(refused({ STAGES: stages })).toEqual([]);
    // reported with the other problems, all at once
    const problems = refused({ STAGES: 'evidence', PORT: 'eighty' });
    expect(problems).toHaveLength(2);
    expect(problems.some((p) => rule.test(p))).toBe(true);
  });

  it('makes a split process without EVIDENCE_SIGNING_KEY exit 1 at start with a one-line reason', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, ...KEK, STAGES: 'evidence' };
    delete env.EVIDENCE_SIGNING_KEY;
    const r = await runScript('service/main.ts', [], env, 30_000);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^ {2}- EVIDENCE_SIGNING_KEY is required: processes split by stage must share EVIDENCE_SIGNING_KEY[^\n]*$/m);
    expect(r.stdout).toBe('');
  });

  it('makes the service exit 1 listing every error', async () => {
    const r = await runScript('service/main.ts', [], { ...process.env, PORT: '99999', LOG_LEVEL: 'chatty' }, 30_000);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('PORT: must be between 0 and 65535');
    expect(r.stderr).toContain('LOG_LEVEL: must be one of');
    expect(r.stdout).toBe('');
  });

  it('is documented in docs/configuration.md, every variable of it', () => {
    // the service's variables: the rows of the configuration page (benchmarks have their own)
    const section = readFileSync(path.join(REPO_ROOT, 'docs', 'configuration.md'), 'utf8');
    const documented = new Set([...section.matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map((m) => m[1]));
    expect([...documented].sort()).toEqual(SETTINGS.map((s) => s.env).sort());
    // and every variable the code reads is declared in SETTINGS
    const source = readFileSync(path.join(REPO_ROOT, 'core', 'config.ts'), 'utf8');
    const read = new Set([...source.matchAll(/r\.\w+\('([A-Z0-9_]+)'/g)].map((m) => m[1]));
    expect([...read].sort()).toEqual(SETTINGS.map((s) => s.env).sort());
  });
});
