import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
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
    const r = await runScript('service/main.ts', [], { ...process.env, PORT: '99999', LOG_LEVEL: 'chatty', OTEL_TRACES_SAMPLER: 'sometimes', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 30_000);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('PORT: must be between 0 and 65535');
    expect(r.stderr).toContain('LOG_LEVEL: must be one of');
    expect(r.stderr).toContain('OTEL_TRACES_SAMPLER: must be one of');
    expect(r.stderr).toContain('OTEL_EXPORTER_OTLP_PROTOCOL: must be one of http/json, got "grpc"');
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

/** A throwaway self-signed client certificate and its key (P-256), made for these checks only. */
const TEST_CERTIFICATE = `-----BEGIN CERTIFICATE-----
MIIBljCCATugAwIBAgIUDuWuodp0piAaAd1uOkEsAuWISMkwCgYIKoZIzj0EAwIw
HzEdMBsGA1UEAwwUaG9va2xpbmUgdGVzdCBjbGllbnQwIBcNMjYxMTI3MDU1MTQ4
WhgPMjEyNjExMDMwNTUxNDhaMB8xHTAbBgNVBAMMFGhvb2tsaW5lIHRlc3QgY2xp
ZW50MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE+XTYyPUvOz8xbsjzlbDdDVGS
EYxkVc9s/0IzNC+LxMXdFHLztqXycmcKPsmkUTI/562b4+nhw2lzH3D9woLvgqNT
MFEwHQYDVR0OBBYEFFgHFybjedyKAxvhoD8j75zqsailMB8GA1UdIwQYMBaAFFgH
FybjedyKAxvhoD8j75zqsailMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwID
SQAwRgIhAK+GIZSRzmoiu2MDVQDDdubDUJLGMJL4oOUVxmjRw1s7AiEA5jVbY9xp
xtIYC2K9ynUcQPYeeOhv/yuMcGlC75LvydI=
-----END CERTIFICATE-----`;
const TEST_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgNdassstt5BjE/hes
2uttcO70NibNaoZT1ds/d1V9zCuhRANCAAT5dNjI9S87PzFuyPOVsN0NUZIRjGRV
z2z/QjM0L4vExd0UcvO2pfJyZwo+yaRRMj/nrZvj6eHDaXMfcP3Cgu+C
-----END PRIVATE KEY-----`;

describe('OpenTelemetry settings', () => {
  const dir = mkdtempSync(path.join(process.env.HOOKLINE_TEST_DIR ?? tmpdir(), 'otel-'));
  const file = (name: string, text: string) => {
    writeFileSync(path.join(dir, name), text);
    return path.join(dir, name);
  };
  const problemsOf = (env: Record<string, string>): string[] => {
    try {
      loadConfig({ ...KEK, ...env });
      return [];
    } catch (err) {
      return (err as ConfigError).problems;
    }
  };

  it('refuses a bad value of every one of them, all at once, each by its name', () => {
    const notPem = file('not.pem', 'hello\n');
    const missing = path.join(dir, 'missing.pem');
    const bad: Record<string, string> = {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://collector:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'collector:4318/v1/traces',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-api-key=%zz',
      OTEL_EXPORTER_OTLP_TIMEOUT: '0',
      OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: 'soon',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_COMPRESSION: 'zstd',
      OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: 'deflate',
      OTEL_EXPORTER_OTLP_CERTIFICATE: missing,
      OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE: notPem,
      OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: missing,
      OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE: notPem,
      OTEL_EXPORTER_OTLP_CLIENT_KEY: missing,
      OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY: notPem,
      OTEL_BSP_SCHEDULE_DELAY: '-1',
      OTEL_BSP_EXPORT_TIMEOUT: '1.5',
      OTEL_BSP_MAX_QUEUE_SIZE: '0',
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: 'many',
      OTEL_TRACES_SAMPLER: 'sometimes',
      OTEL_TRACES_SAMPLER_ARG: '1.5',
      OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT: '-5',
      OTEL_ATTRIBUTE_COUNT_LIMIT: 'x',
      OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT: 'x',
      OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT: '1e3',
      OTEL_SPAN_EVENT_COUNT_LIMIT: 'x',
      OTEL_SPAN_LINK_COUNT_LIMIT: 'x',
      OTEL_SPAN_ATTRIBUTE_PER_EVENT_COUNT_LIMIT: 'x',
      OTEL_SPAN_ATTRIBUTE_PER_LINK_COUNT_LIMIT: 'x',
    };
    // every OpenTelemetry setting the service declares, but the service name (any text is one)
    expect(Object.keys(bad).sort()).toEqual(SETTINGS.map((s) => s.env).filter((e) => e.startsWith('OTEL_') && e !== 'OTEL_SERVICE_NAME').sort());
    const problems = problemsOf(bad);
    expect(problems.map((p) => p.slice(0, p.indexOf(':'))).sort()).toEqual(Object.keys(bad).sort());
    expect(problems).toEqual(expect.arrayContaining([
      'OTEL_EXPORTER_OTLP_PROTOCOL: must be one of http/json, got "grpc"',
      `OTEL_EXPORTER_OTLP_CERTIFICATE: cannot read ${missing} (ENOENT)`,
      `OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY: ${notPem} is not a PEM private key (without a passphrase)`,
      'OTEL_TRACES_SAMPLER_ARG: expected a number from 0 to 1, got "1.5"',
    ]));
  });

  it('takes good values as given, each traces variable over its general one', () => {
    const ca = file('ca.pem', TEST_CERTIFICATE);
    const cert = file('client.pem', TEST_CERTIFICATE);
    const key = file('client.key', TEST_KEY);
    const tracing = loadConfig({
      ...KEK,
      OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_COMPRESSION: 'none',
      OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: 'gzip',
      OTEL_EXPORTER_OTLP_CERTIFICATE: ca,
      OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: cert,
      OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY: path.relative(process.cwd(), key),
      OTEL_BSP_MAX_QUEUE_SIZE: '100',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_ATTRIBUTE_COUNT_LIMIT: '64',
      OTEL_SPAN_EVENT_COUNT_LIMIT: '0',
    }).tracing;
    expect(tracing).toMatchObject({
      endpoint: 'https://collector:4318/v1/traces',
      compression: 'gzip',
      tls: { ca, cert, key },
      // the batch size follows a smaller queue
      batch: { scheduledDelayMs: 5000, exportTimeoutMs: 30000, maxQueueSize: 100, maxExportBatchSize: 100 },
      sampler: 'parentbased_traceidratio',
      samplerRatio: 0.25,
      attributeLimits: { attributeCountLimit: 64, attributeValueLengthLimit: Infinity },
      spanLimits: { attributeCountLimit: 64, eventCountLimit: 0, linkCountLimit: 128 },
    });
    expect(loadConfig(KEK).tracing).toMatchObject({ compression: 'none', tls: { ca: undefined, cert: undefined, key: undefined }, sampler: 'parentbased_always_on', samplerRatio: 1, batch: { maxQueueSize: 2048, maxExportBatchSize: 512 } });
  });

  it('refuses a client certificate without its key, a key without its certificate, a key of another, and a batch above the queue', () => {
    const cert = file('pair.pem', TEST_CERTIFICATE);
    const key = file('pair.key', TEST_KEY);
    const other = file('other.key', generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
    expect(problemsOf({ OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: cert })).toEqual([expect.stringMatching(/^OTEL_EXPORTER_OTLP_CLIENT_KEY: required with OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE/)]);
    expect(problemsOf({ OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY: key })).toEqual([expect.stringMatching(/^OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: required with OTEL_EXPORTER_OTLP_CLIENT_KEY/)]);
    expect(problemsOf({ OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: cert, OTEL_EXPORTER_OTLP_CLIENT_KEY: other })).toEqual([expect.stringMatching(/^OTEL_EXPORTER_OTLP_CLIENT_KEY: not the private key of the client certificate/)]);
    expect(problemsOf({ OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: cert, OTEL_EXPORTER_OTLP_CLIENT_KEY: key })).toEqual([]);
    expect(problemsOf({ OTEL_BSP_MAX_QUEUE_SIZE: '100', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '200' })).toEqual(['OTEL_BSP_MAX_EXPORT_BATCH_SIZE: must not exceed OTEL_BSP_MAX_QUEUE_SIZE (100), got 200']);
    // what the key file holds is never shown
    const problems = problemsOf({ OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: key, OTEL_EXPORTER_OTLP_CLIENT_KEY: key });
    expect(problems.join('\n')).not.toContain(TEST_KEY.split('\n')[1]);
  });
});
