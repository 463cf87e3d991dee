import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, loadConfig, SETTINGS } from '../core/config';
import { REPO_ROOT, runScript } from './support/process';

describe('configuration', () => {
  it('has documented defaults', () => {
    const c = loadConfig({}, '/srv/app');
    expect(c.port).toBe(8080);
    expect(c.dataDir).toBe('/srv/app/.data');
    expect(c.kafkaBrokers).toBeUndefined();
    expect(c.kafkaReplicationFactor).toBe(1);
    expect(c.ingestMaxBodyBytes).toBe(1_048_576);
    expect(c.deliveryTimeoutMs).toBe(15_000);
    expect(c.stages).toEqual(['api', 'validate', 'filter', 'route', 'deliver', 'retry', 'evidence', 'sink']);
    expect(c.publicBaseUrl).toBe('http://127.0.0.1:8080');
  });

  it('reads brokers and raises the replication default for an external cluster', () => {
    const c = loadConfig({ KAFKA_BROKERS: 'k1:9092, k2:9092', STAGES: 'deliver,sink' });
    expect(c.kafkaBrokers).toEqual(['k1:9092', 'k2:9092']);
    expect(c.kafkaReplicationFactor).toBe(3);
    expect(c.stages).toEqual(['deliver', 'sink']);
  });

  it('reports every problem at once', () => {
    let error: unknown;
    try {
      loadConfig({ PORT: 'eighty', KAFKA_BROKERS: 'nohost', REDIS_URL: 'http://x', LOG_LEVEL: 'loud', STAGES: 'deliver,teleport', INGEST_MAX_BODY_BYTES: '0' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems).toHaveLength(6);
    for (const name of ['PORT', 'KAFKA_BROKERS', 'REDIS_URL', 'LOG_LEVEL', 'STAGES', 'INGEST_MAX_BODY_BYTES']) {
      expect(problems.some((p) => p.startsWith(`${name}:`))).toBe(true);
    }
  });

  it('makes the service exit 1 listing every error', async () => {
    const r = await runScript('service/main.ts', [], { ...process.env, PORT: '99999', LOG_LEVEL: 'chatty' }, 30_000);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('PORT: must be between 0 and 65535');
    expect(r.stderr).toContain('LOG_LEVEL: must be one of');
    expect(r.stdout).toBe('');
  });

  it('is documented in the README, every variable of it', () => {
    const readme = readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
    // the service's variables: the rows of the Configuration section (benchmarks have their own)
    const start = readme.indexOf('\n## Configuration');
    const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
    const documented = new Set([...section.matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map((m) => m[1]));
    expect([...documented].sort()).toEqual(SETTINGS.map((s) => s.env).sort());
    // and every variable the code reads is declared in SETTINGS
    const source = readFileSync(path.join(REPO_ROOT, 'core', 'config.ts'), 'utf8');
    const read = new Set([...source.matchAll(/r\.\w+\('([A-Z0-9_]+)'/g)].map((m) => m[1]));
    expect([...read].sort()).toEqual(SETTINGS.map((s) => s.env).sort());
  });
});
