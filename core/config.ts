import { createHash, createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { KeyringError, parseKeyring } from './secrets/keyring';
import { parseAllowList, type AllowList } from './address-policy';
import { parseRateLimit, parseRateLimits, type RateLimit, type RateLimits } from './rate-limits';
import { DEFAULT_QUOTAS, type Quotas } from './quotas';
import { isScope, SCOPES, type Scope } from './scopes';
import { DEFAULT_RETRY_SCHEDULE_MS, parseSchedule } from './retry-schedule';
import { DEFAULT_FILTER_LIMITS, type FilterLimits } from './filters';
import { DEFAULT_RETRY_TIERS_MS } from './topics';
import { parseSignerKey } from './signed-note';
import { Concealed, parseOtlpHeaders } from './otlp-headers';

/**
 * The one typed configuration of the service, read from environment variables.
 * Every setting is declared once in SETTINGS with its default and unit; the table of
 * docs/configuration.md lists the same variables (a test keeps them in step).
 */
export interface Config {
  /** `production` (the strict defaults) or `development` (`npm start`: some defaults relaxed, loudly). */
  environment: Environment;
  /**
   * The defaults development mode relaxed, one line each, printed at start so that nobody takes a
   * development setup for a production one. Empty in production.
   */
  relaxedDefaults: string[];
  port: number;
  host: string;
  publicBaseUrl: string;
  errorBase: string;
  dataDir: string;
  logLevel: LogLevel;
  /** One JSON object per line (`json`), or readable lines for a terminal (`pretty`). */
  logFormat: LogFormat;
  /** Unset: a local single-node Kafka is started under the data dir. */
  kafkaBrokers: string[] | undefined;
  kafkaReplicationFactor: number;
  kafkaPartitions: number;
  kafkaProducers: number;
  topicPrefix: string;
  /** Unset: a local Kafka-backed registry is started. */
  schemaRegistryUrl: string | undefined;
  /** Unset: a local redis-server is started. */
  redisUrl: string | undefined;
  /** Unset: the embedded engine (chdb) under the data dir. */
  clickhouseUrl: string | undefined;
  clickhouseUser: string;
  clickhousePassword: string;
  clickhouseDatabase: string;
  stages: StageName[];
  ingestMaxBodyBytes: number;
  /** What the filter stage reads of an event at most; an event beyond it goes to `events.dlq`. */
  filterLimits: FilterLimits;
  /** Deliveries of this service a webhook may have passed through before a Hook URL refuses it. */
  maxHops: number;
  /** Destinations one event may be delivered to. */
  maxFanout: number;
  deliveryTimeoutMs: number;
  deliveryConnectTimeoutMs: number;
  bootstrapDemoTenant: boolean;
  retryScheduleMs: number[];
  retryTiersMs: number[];
  destinationAllowedNetworks: AllowList;
  breaker: { errorThresholdPercentage: number; volumeThreshold: number; resetTimeoutMs: number; rollingWindowMs: number };
  deliveryMaxInFlight: number;
  /** Longest a stage waits for this process to apply the configuration version a record names (ms). */
  configVersionWaitMs: number;
  /** A deployment-wide limit: each deliver process takes its share (pipeline/deliver/fair-share.ts). */
  deliveryPerDestination: number;
  /** Longest wait for a rate-limit send slot spent in the deliver process, ms; longer ones hop through the delay topics. */
  deliveryRateWaitMs: number;
  /** Longest an ordered destination's delivery keeps the ones behind it waiting, from its first attempt in line, ms (docs/ordering.md). */
  deliveryOrderedWaitMs: number;
  deliverySyncMs: number;
  /** How long a finished attempt's mark is kept (0: no marks), s. */
  deliveryAttemptMarksTtlS: number;
  /** Broker destinations' connections idle this long are closed, ms. */
  brokerIdleCloseMs: number;
  /** The transformation sandbox: worker threads, CPU time and memory per run. */
  transformWorkers: number;
  transformTimeoutMs: number;
  transformMemoryMb: number;
  sinkBatchRows: number;
  sinkFlushMs: number;
  /** How long ClickHouse keeps bodies, attempts and logs (docs/retention.md); a tenant may set its own. */
  retention: RetentionPeriods;
  /** Seconds between the sink's sweeps of expired rows (0: none, merges alone apply the TTLs). */
  retentionSweepSeconds: number;
  /** Seconds between the rollups of stored attempts into the analytics views, and how far behind ClickHouse's clock they stay. */
  analyticsRollupSeconds: number;
  analyticsRollupLagSeconds: number;
  /** `retention.ms` of the topics carrying webhook bodies, when the service creates them; unset: the broker's default. */
  kafkaEventRetentionMs: number | undefined;
  ingestLingerMs: number;
  /** Longest a webhook waits for Kafka's acknowledgment before a 503 with Retry-After, ms. */
  ingestAckTimeoutMs: number;
  /** Longest the Kafka client waits for the answer to one request before it retries it elsewhere, ms. */
  kafkaRequestTimeoutMs: number;
  outputLingerMs: number;
  idempotencyTtlSeconds: number;
  /** A process records an API key's last use at most once per this many seconds. */
  apiKeyLastUsedIntervalSeconds: number;
  /** Replayed deliveries queued per second by all replay jobs of the deployment together. */
  replayRatePerS: number;
  /** Tries of a replay job that fail in a row before it ends `failed`. */
  replayMaxTries: number;
  /** Operational events: one per subject and type per `windowMs`, at most `perTenant` per tenant in a window. */
  operationalEvents: { windowMs: number; perTenant: number };
  rateLimits: RateLimits;
  /** Longest wait for Redis on an API request's rate limit before it goes through unlimited. */
  rateLimitTimeoutMs: number;
  /** Webhooks a Hook URL, and all Hook URLs of one tenant, accept; `null` is off. */
  ingestRateLimits: { perHook: RateLimit | null; perTenant: RateLimit | null; timeoutMs: number };
  /** Most objects of each kind one tenant may hold. */
  quotas: Quotas;
  disabledWriteGroups: Scope[];
  /** Unset: generated once and kept under the data dir. */
  evidenceSigningKey: string | undefined;
  evidenceOrigin: string | undefined;
  evidenceBatchSize: number;
  evidenceBatchAgeMs: number;
  /** Refuse destination URLs that are not https. */
  destinationHttpsOnly: boolean;
  /** Where the key-encryption keys that seal stored secrets come from (see platform/secrets/keyring-source.ts). */
  secrets: SecretsKeySource;
  /** Thresholds of the runtime proofs. */
  proofs: { lagThreshold: number; graceMs: number; dlqThreshold: number };
  /** Bearer token `/metrics` requires; unset, it answers anyone and names no tenant's objects. Never printed. */
  metricsToken: string | undefined;
  /**
   * Where spans go: the OTLP/HTTP traces endpoint, and the service name they carry. Without an
   * endpoint no span is recorded; the trace context still travels on every record. The headers
   * of each export request carry a hosted collector's credentials: never printed.
   */
  tracing: TracingConfig;
}

/** The samplers of OpenTelemetry's OTEL_TRACES_SAMPLER that the tracer offers. */
export const TRACE_SAMPLERS = ['parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio', 'always_on', 'always_off', 'traceidratio'] as const;
export type TraceSampler = (typeof TRACE_SAMPLERS)[number];
/** How the export requests' bodies go: the exporter sends OTLP over HTTP as JSON, compressed or not. */
export const OTLP_PROTOCOLS = ['http/json'] as const;
export const OTLP_COMPRESSIONS = ['none', 'gzip'] as const;
export type OtlpCompression = (typeof OTLP_COMPRESSIONS)[number];

/** Limits of what one span keeps (OpenTelemetry's span limits); past them the rest is dropped. */
export interface SpanLimitsConfig {
  attributeValueLengthLimit: number;
  attributeCountLimit: number;
  eventCountLimit: number;
  linkCountLimit: number;
  attributePerEventCountLimit: number;
  attributePerLinkCountLimit: number;
}

/**
 * Every OpenTelemetry variable the tracer acts on, read here once: the tracer is built from these
 * values, never from the environment itself.
 */
export interface TracingConfig {
  endpoint: string | undefined;
  serviceName: string;
  headers: Concealed<Readonly<Record<string, string>>>;
  timeoutMs: number;
  compression: OtlpCompression;
  /** PEM files (absolute paths) for the collector's TLS: its CA, and this client's certificate and key. */
  tls: { ca: string | undefined; cert: string | undefined; key: string | undefined };
  /** The batch span processor: how long spans wait, how many are queued and sent at once. */
  batch: { scheduledDelayMs: number; exportTimeoutMs: number; maxQueueSize: number; maxExportBatchSize: number };
  sampler: TraceSampler;
  /** The probability of the `traceidratio` samplers. */
  samplerRatio: number;
  /** Limits of any attribute, and of each span (which default to the former). */
  attributeLimits: { attributeValueLengthLimit: number; attributeCountLimit: number };
  spanLimits: SpanLimitsConfig;
}

/** The keyring's source: the keys themselves, or a file holding them (outside DATA_DIR). */
export interface SecretsKeySource {
  /** `id:base64[,id:base64…]`; never printed. */
  kek: string | undefined;
  kekFile: string | undefined;
  /** Development only: create the file with a new key when it does not exist. */
  generate: boolean;
}

/** Where development keeps the generated key of one data dir: outside it, so a copy of the data holds no key. */
export function developmentKekFile(dataDir: string, home = homedir()): string {
  const hash = createHash('sha256').update(path.resolve(dataDir)).digest('hex').slice(0, 16);
  return path.join(home, '.hookline', 'keys', `${hash}.kek`);
}

export const STAGE_NAMES = ['api', 'ingest', 'validate', 'filter', 'route', 'deliver', 'retry', 'evidence', 'sink'] as const;
export type StageName = (typeof STAGE_NAMES)[number];

/**
 * The roles of `--role`: one process per role is how the service scales out. `api` is the
 * management API with the Hook URLs; `ingest` the Hook URLs alone; `stage:validate` (or filter,
 * route) runs the validate chain; `sequencer` the evidence sequencer.
 */
export const ROLES: Record<string, StageName> = {
  api: 'api',
  ingest: 'ingest',
  'stage:validate': 'validate',
  'stage:filter': 'filter',
  'stage:route': 'route',
  'stage:deliver': 'deliver',
  'stage:retry': 'retry',
  'stage:evidence': 'evidence',
  sequencer: 'evidence',
  sink: 'sink',
};

/**
 * `--stage <name>` and `--role <role>` (each repeatable) override STAGES, for running one
 * stage or role per process. An unknown role is refused here, with the known ones.
 */
export function stagesFromArgs(argv: string[]): string | undefined {
  const names: string[] = [];
  const option = (i: number, flag: string): string | undefined => {
    const arg = argv[i]!;
    if (arg === flag) return argv[i + 1];
    return arg.startsWith(`${flag}=`) ? arg.slice(flag.length + 1) : undefined;
  };
  for (let i = 0; i < argv.length; i++) {
    const stage = option(i, '--stage');
    const role = option(i, '--role');
    if (argv[i] === '--stage' || argv[i] === '--role') i++;
    if (stage !== undefined) names.push(stage);
    if (role !== undefined) {
      const mapped = ROLES[role];
      if (!mapped) throw new ConfigError([`--role: unknown role "${role}"; roles: ${Object.keys(ROLES).join(', ')}`]);
      names.push(mapped);
    }
  }
  return names.length > 0 ? [...new Set(names)].join(',') : undefined;
}

/** True when the process answers HTTP on PORT for more than health: the API or the Hook URLs. */
export function servesHttp(stages: readonly StageName[]): boolean {
  return stages.includes('api') || stages.includes('ingest');
}
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];
export const ENVIRONMENTS = ['production', 'development'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface SettingDoc {
  env: string;
  default: string;
  unit: string;
  description: string;
}

type Env = Record<string, string | undefined>;

class Reader {
  readonly errors: string[] = [];
  constructor(private readonly env: Env) {}

  raw(name: string): string | undefined {
    const v = this.env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  }

  string(name: string, fallback: string): string {
    return this.raw(name) ?? fallback;
  }

  optionalUrl(name: string, protocols: string[]): string | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    try {
      const u = new URL(v);
      if (!protocols.includes(u.protocol)) {
        this.errors.push(`${name}: expected a ${protocols.join(' or ')} URL, got "${v}"`);
      }
    } catch {
      this.errors.push(`${name}: not a URL: "${v}"`);
    }
    return v.replace(/\/+$/, '');
  }

  integer(name: string, fallback: number, min: number, max: number): number {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    if (!/^-?\d+$/.test(v)) {
      this.errors.push(`${name}: expected an integer, got "${v}"`);
      return fallback;
    }
    const n = Number(v);
    if (n < min || n > max) {
      this.errors.push(`${name}: must be between ${min} and ${max}, got ${n}`);
      return fallback;
    }
    return n;
  }

  /** A C2SP signed-note signer key (`PRIVATE+KEY+…`), checked but never echoed. */
  signerKey(name: string): string | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    try {
      parseSignerKey(v);
    } catch (err) {
      this.errors.push(`${name}: ${(err as Error).message}`);
    }
    return v;
  }

  /** A signed-note key name: no white space, no `+`. */
  noteName(name: string): string | undefined {
    const v = this.raw(name);
    if (v !== undefined && /[\s+]/.test(v)) this.errors.push(`${name}: must not contain white space or "+", got "${v}"`);
    return v;
  }

  boolean(name: string, fallback: boolean): boolean {
    const v = this.raw(name)?.toLowerCase();
    if (v === undefined) return fallback;
    if (['1', 'true', 'yes', 'on'].includes(v)) return true;
    if (['0', 'false', 'no', 'off'].includes(v)) return false;
    this.errors.push(`${name}: expected true or false, got "${v}"`);
    return fallback;
  }

  allowList(name: string, fallback: string): AllowList {
    const { allow, errors } = parseAllowList(this.raw(name) ?? fallback);
    for (const e of errors) this.errors.push(`${name}: ${e}`);
    return allow;
  }

  writeGroups(name: string): Scope[] {
    const names = (this.raw(name) ?? '').split(',').map((s) => s.trim()).filter(Boolean);
    const bad = names.filter((n) => !n.startsWith('write:') || !isScope(n));
    if (bad.length > 0) this.errors.push(`${name}: not a write group: ${bad.join(', ')}; write groups: ${SCOPES.filter((s) => s.startsWith('write:')).join(', ')}`);
    return names.filter((n): n is Scope => n.startsWith('write:') && isScope(n));
  }

  rateLimits(name: string, fallback: string): RateLimits {
    const { limits, errors } = parseRateLimits(this.raw(name) ?? fallback);
    for (const e of errors) this.errors.push(`${name}: ${e}`);
    return limits;
  }

  rateLimit(name: string, fallback: string): RateLimit | null {
    const { limit, error } = parseRateLimit(this.raw(name) ?? fallback);
    if (error) this.errors.push(`${name}: ${error}`);
    return limit;
  }

  schedule(name: string, fallback: number[]): number[] {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    const { schedule, errors } = parseSchedule(v);
    for (const e of errors) this.errors.push(`${name}: ${e}`);
    return errors.length > 0 ? fallback : schedule;
  }

  /** A bearer token: at least `minLength` visible ASCII characters; checked but never echoed. */
  token(name: string, minLength: number): string | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    if (v.length < minLength || v.length > 1024 || !/^[\x21-\x7e]+$/.test(v)) this.errors.push(`${name}: must be ${minLength} to 1024 visible ASCII characters without spaces (e.g. \`openssl rand -hex 32\`)`);
    return v;
  }

  /** OTLP export headers (`name=value,...`, values percent-encoded); checked, never echoed. */
  otlpHeaders(name: string): Record<string, string> | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    const { headers, errors } = parseOtlpHeaders(v);
    for (const e of errors) this.errors.push(`${name}: ${e}`);
    return headers;
  }

  /** A probability: a decimal from 0 to 1. */
  fraction(name: string, fallback: number): number {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!/^(\d+(\.\d*)?|\.\d+)$/.test(v) || n > 1) {
      this.errors.push(`${name}: expected a number from 0 to 1, got "${v}"`);
      return fallback;
    }
    return n;
  }

  /**
   * A PEM file (a certificate, or a private key) as an absolute path, relative ones from `cwd`;
   * read and parsed here, so that a wrong path or file stops the start. Its contents are never
   * shown: a key file holds a secret.
   */
  pemFile(name: string, kind: 'certificate' | 'private key', cwd: string): { path: string; parsed: X509Certificate | KeyObject } | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    const file = path.resolve(cwd, v);
    let text: Buffer;
    try {
      text = readFileSync(file);
    } catch (err) {
      this.errors.push(`${name}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'unreadable'})`);
      return undefined;
    }
    try {
      return { path: file, parsed: kind === 'certificate' ? new X509Certificate(text) : createPrivateKey(text) };
    } catch {
      this.errors.push(`${name}: ${file} is not a PEM ${kind}${kind === 'private key' ? ' (without a passphrase)' : ''}`);
      return undefined;
    }
  }

  /** A retention (parseRetention): seconds, or null for `forever`. */
  retention(name: string, fallback: string): number | null {
    const given = this.optionalRetention(name);
    return given !== undefined ? given : (parseRetention(fallback).seconds ?? null);
  }

  /** A retention that may be unset (undefined); a wrong one is reported and taken as unset. */
  optionalRetention(name: string): number | null | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    const parsed = parseRetention(v);
    if (parsed.error !== undefined) this.errors.push(`${name}: ${parsed.error}`);
    return parsed.seconds;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    if (!(allowed as readonly string[]).includes(v)) {
      this.errors.push(`${name}: must be one of ${allowed.join(', ')}, got "${v}"`);
      return fallback;
    }
    return v as T;
  }
}

/**
 * How long ClickHouse keeps rows, in seconds (`null`: for ever). Bodies are the webhooks' bodies
 * and headers, the receivers' response bodies and the dead letters' bytes; attempts are every
 * row about an event or a delivery; logs the log lines. The evidence tables are never expired.
 */
export interface RetentionPeriods {
  bodiesSeconds: number | null;
  attemptsSeconds: number | null;
  logsSeconds: number | null;
}

/** The shortest and longest retention anyone may set, in seconds (1 s; 10 years of 365 days). */
export const RETENTION_BOUNDS = { min: 1, max: 10 * 365 * 86_400 } as const;
export const DEFAULT_RETENTION = { bodies: '30d', attempts: '90d', logs: '30d' } as const;

const DURATION_UNITS: Record<string, number> = { s: 1, m: 60, h: 3_600, d: 86_400 };

/**
 * A retention as written in the environment or on the CLI: `<n>s|m|h|d` (`30d`, `12h`, `90s`)
 * between RETENTION_BOUNDS, or `forever` (null). Returns the seconds, or an error to report.
 */
export function parseRetention(text: string): { seconds: number | null; error?: undefined } | { seconds?: undefined; error: string } {
  const v = text.trim().toLowerCase();
  if (v === 'forever') return { seconds: null };
  const m = /^(\d{1,12})([smhd])$/.exec(v);
  if (!m) return { error: `expected a duration such as 30d, 12h, 90s (units s, m, h, d) or forever, got "${text}"` };
  const seconds = Number(m[1]) * DURATION_UNITS[m[2]!]!;
  if (seconds < RETENTION_BOUNDS.min || seconds > RETENTION_BOUNDS.max) return { error: `must be from 1s to ${RETENTION_BOUNDS.max / 86_400}d (10 years), got "${text}"` };
  return { seconds };
}

/** A topic's `retention.ms`: -1 keeps for ever; undefined leaves the broker's default. */
function kafkaRetentionMs(seconds: number | null | undefined): number | undefined {
  return seconds === undefined ? undefined : seconds === null ? -1 : seconds * 1_000;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Reads and validates the whole configuration; every problem is reported at once. */
export function loadConfig(env: Env = process.env, cwd = process.cwd()): Config {
  const r = new Reader(env);
  const environment = r.oneOf('HOOKLINE_ENV', ENVIRONMENTS, 'production');
  const development = environment === 'development';
  const relaxedDefaults: string[] = [];
  /** A setting's default: the strict one, or in development the relaxed one, noted for the start-up notice. */
  const strictUnless = (name: string, strict: string, relaxed: string, why: string): string => {
    if (!development || r.raw(name) !== undefined) return strict;
    relaxedDefaults.push(`${name}=${relaxed}: ${why}`);
    return relaxed;
  };
  const stages = parseStages(r);
  // a process that only consumes answers health checks alone: several on one host must not
  // fight over one default port, so without PORT it takes a free one (named in its ready line)
  const port = r.integer('PORT', servesHttp(stages) ? 8080 : 0, 0, 65535);
  const host = r.string('HOST', '127.0.0.1');
  const publicBaseUrl = r.optionalUrl('PUBLIC_BASE_URL', ['http:', 'https:']) ?? `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  const errorBase = r.optionalUrl('ERROR_BASE', ['http:', 'https:']) ?? publicBaseUrl;
  const brokers = r.raw('KAFKA_BROKERS');
  const kafkaBrokers = brokers?.split(',').map((b) => b.trim()).filter(Boolean);
  for (const b of kafkaBrokers ?? []) {
    if (!/^[^\s:]+:\d{1,5}$/.test(b)) r.errors.push(`KAFKA_BROKERS: "${b}" is not host:port`);
  }
  const topicPrefix = r.string('TOPIC_PREFIX', '');
  if (!/^[a-zA-Z0-9._-]*$/.test(topicPrefix)) r.errors.push(`TOPIC_PREFIX: only letters, digits, ".", "_" and "-" are allowed, got "${topicPrefix}"`);
  const clickhouseDatabase = r.string('CLICKHOUSE_DATABASE', 'hookline');
  if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(clickhouseDatabase)) r.errors.push(`CLICKHOUSE_DATABASE: must be an identifier ([A-Za-z_][A-Za-z0-9_]*), got "${clickhouseDatabase}"`);
  const dataDir = path.resolve(cwd, r.string('DATA_DIR', '.data'));
  const secrets = secretsKeySource(r, { dataDir, development, relaxedDefaults, cwd, home: env.HOME?.trim() || undefined });

  const config: Config = {
    environment,
    relaxedDefaults,
    port,
    host,
    publicBaseUrl,
    errorBase,
    dataDir,
    logLevel: r.oneOf('LOG_LEVEL', LOG_LEVELS, 'info'),
    logFormat: r.oneOf('LOG_FORMAT', LOG_FORMATS, strictUnless('LOG_FORMAT', 'json', 'pretty', 'log lines on stdout are readable text, not one JSON object each') as LogFormat),
    kafkaBrokers,
    kafkaReplicationFactor: r.integer('KAFKA_REPLICATION_FACTOR', kafkaBrokers ? 3 : 1, 1, 16),
    kafkaPartitions: r.integer('KAFKA_PARTITIONS', 3, 1, 1024),
    kafkaProducers: r.integer('KAFKA_PRODUCERS', 1, 1, 16),
    topicPrefix,
    schemaRegistryUrl: r.optionalUrl('SCHEMA_REGISTRY_URL', ['http:', 'https:']),
    redisUrl: r.optionalUrl('REDIS_URL', ['redis:', 'rediss:']),
    clickhouseUrl: r.optionalUrl('CLICKHOUSE_URL', ['http:', 'https:']),
    clickhouseUser: r.string('CLICKHOUSE_USER', 'default'),
    clickhousePassword: r.string('CLICKHOUSE_PASSWORD', ''),
    clickhouseDatabase,
    stages,
    ingestMaxBodyBytes: r.integer('INGEST_MAX_BODY_BYTES', 1_048_576, 1, 64 * 1_048_576),
    filterLimits: {
      maxBodyBytes: r.integer('FILTER_MAX_BODY_BYTES', DEFAULT_FILTER_LIMITS.maxBodyBytes, 1, 64 * 1_048_576),
      maxJsonDepth: r.integer('FILTER_MAX_JSON_DEPTH', DEFAULT_FILTER_LIMITS.maxJsonDepth, 1, 1_000),
      maxHeaderBytes: r.integer('FILTER_MAX_HEADER_BYTES', DEFAULT_FILTER_LIMITS.maxHeaderBytes, 1, 1_048_576),
    },
    maxHops: r.integer('MAX_HOPS', 3, 0, 100),
    maxFanout: r.integer('MAX_FANOUT', 50, 1, 10_000),
    deliveryTimeoutMs: r.integer('DELIVERY_TIMEOUT_MS', 15_000, 100, 600_000),
    deliveryConnectTimeoutMs: r.integer('DELIVERY_CONNECT_TIMEOUT_MS', 5_000, 50, 600_000),
    bootstrapDemoTenant: r.boolean('BOOTSTRAP_DEMO_TENANT', true),
    retryScheduleMs: r.schedule('RETRY_SCHEDULE', DEFAULT_RETRY_SCHEDULE_MS),
    retryTiersMs: r.schedule('RETRY_TIERS', DEFAULT_RETRY_TIERS_MS).filter((t) => t > 0),
    destinationAllowedNetworks: r.allowList('DESTINATION_ALLOWED_NETWORKS', strictUnless('DESTINATION_ALLOWED_NETWORKS', 'none', 'loopback', 'deliveries may go to loopback addresses (127.0.0.0/8, ::1)')),
    breaker: {
      errorThresholdPercentage: r.integer('BREAKER_ERROR_PERCENT', 50, 1, 100),
      volumeThreshold: r.integer('BREAKER_MIN_ATTEMPTS', 5, 1, 10_000),
      resetTimeoutMs: r.integer('BREAKER_RESET_MS', 30_000, 100, 86_400_000),
      rollingWindowMs: r.integer('BREAKER_WINDOW_MS', 10_000, 1_000, 3_600_000),
    },
    deliveryMaxInFlight: r.integer('DELIVERY_MAX_IN_FLIGHT', 2_000, 1, 100_000),
    configVersionWaitMs: r.integer('CONFIG_VERSION_WAIT_MS', 5_000, 0, 600_000),
    deliveryPerDestination: r.integer('DELIVERY_PER_DESTINATION', 32, 1, 10_000),
    deliveryRateWaitMs: r.integer('DELIVERY_RATE_WAIT_MS', 1_000, 0, 60_000),
    deliveryOrderedWaitMs: r.integer('DELIVERY_ORDERED_WAIT_MS', 60_000, 0, 3_600_000),
    deliverySyncMs: r.integer('DELIVERY_SYNC_MS', 500, 50, 60_000),
    deliveryAttemptMarksTtlS: r.integer('DELIVERY_ATTEMPT_MARKS_TTL_S', 300, 0, 86_400),
    brokerIdleCloseMs: r.integer('BROKER_IDLE_CLOSE_MS', 60_000, 1_000, 3_600_000),
    transformWorkers: r.integer('TRANSFORM_WORKERS', 1, 1, 16),
    transformTimeoutMs: r.integer('TRANSFORM_TIMEOUT_MS', 50, 1, 5_000),
    transformMemoryMb: r.integer('TRANSFORM_MEMORY_MB', 16, 1, 512),
    sinkBatchRows: r.integer('SINK_BATCH_ROWS', 20_000, 1, 1_000_000),
    sinkFlushMs: r.integer('SINK_FLUSH_MS', 500, 10, 60_000),
    retention: {
      bodiesSeconds: r.retention('RETENTION_BODIES', DEFAULT_RETENTION.bodies),
      attemptsSeconds: r.retention('RETENTION_ATTEMPTS', DEFAULT_RETENTION.attempts),
      logsSeconds: r.retention('RETENTION_LOGS', DEFAULT_RETENTION.logs),
    },
    retentionSweepSeconds: r.integer('RETENTION_SWEEP_SECONDS', 3_600, 0, 7 * 86_400),
    analyticsRollupSeconds: r.integer('ANALYTICS_ROLLUP_SECONDS', 10, 1, 3_600),
    analyticsRollupLagSeconds: r.integer('ANALYTICS_ROLLUP_LAG_SECONDS', 30, 1, 3_600),
    kafkaEventRetentionMs: kafkaRetentionMs(r.optionalRetention('KAFKA_EVENT_RETENTION')),
    ingestLingerMs: r.integer('INGEST_LINGER_MS', 0, 0, 1_000),
    ingestAckTimeoutMs: r.integer('INGEST_ACK_TIMEOUT_MS', 5_000, 100, 120_000),
    kafkaRequestTimeoutMs: r.integer('KAFKA_REQUEST_TIMEOUT_MS', 5_000, 1_000, 300_000),
    outputLingerMs: r.integer('OUTPUT_LINGER_MS', 5, 0, 1_000),
    idempotencyTtlSeconds: r.integer('IDEMPOTENCY_TTL_SECONDS', 86_400, 1, 30 * 86_400),
    apiKeyLastUsedIntervalSeconds: r.integer('API_KEY_LAST_USED_INTERVAL_SECONDS', 60, 1, 86_400),
    replayRatePerS: r.integer('REPLAY_RATE_PER_S', 100, 1, 100_000),
    replayMaxTries: r.integer('REPLAY_MAX_TRIES', 10, 1, 100),
    operationalEvents: {
      windowMs: r.integer('OPERATIONAL_EVENT_WINDOW_MS', 300_000, 1_000, 86_400_000),
      perTenant: r.integer('OPERATIONAL_EVENTS_PER_TENANT', 100, 1, 100_000),
    },
    rateLimits: r.rateLimits('RATE_LIMITS', 'default=600/60s'),
    rateLimitTimeoutMs: r.integer('RATE_LIMIT_TIMEOUT_MS', 250, 10, 10_000),
    ingestRateLimits: {
      perHook: r.rateLimit('INGEST_RATE_LIMIT_PER_HOOK', '500/1s'),
      perTenant: r.rateLimit('INGEST_RATE_LIMIT_PER_TENANT', '2000/1s'),
      timeoutMs: r.integer('INGEST_RATE_LIMIT_TIMEOUT_MS', 200, 10, 10_000),
    },
    quotas: {
      ingesters: r.integer('MAX_INGESTERS_PER_TENANT', DEFAULT_QUOTAS.ingesters, 1, 1_000_000),
      destinations: r.integer('MAX_DESTINATIONS_PER_TENANT', DEFAULT_QUOTAS.destinations, 1, 1_000_000),
      delivery_flows: r.integer('MAX_FLOWS_PER_TENANT', DEFAULT_QUOTAS.delivery_flows, 1, 1_000_000),
      saved_payloads: r.integer('MAX_SAVED_PAYLOADS_PER_TENANT', DEFAULT_QUOTAS.saved_payloads, 1, 1_000_000),
      api_keys: r.integer('MAX_API_KEYS_PER_TENANT', DEFAULT_QUOTAS.api_keys, 1, 1_000_000),
      event_types: r.integer('MAX_EVENT_TYPES_PER_TENANT', DEFAULT_QUOTAS.event_types, 1, 1_000_000),
    },
    disabledWriteGroups: r.writeGroups('DISABLED_WRITE_GROUPS'),
    evidenceSigningKey: r.signerKey('EVIDENCE_SIGNING_KEY'),
    evidenceOrigin: r.noteName('EVIDENCE_ORIGIN'),
    evidenceBatchSize: r.integer('EVIDENCE_BATCH_SIZE', 1_000, 1, 2_000),
    evidenceBatchAgeMs: r.integer('EVIDENCE_BATCH_AGE_MS', 200, 1, 60_000),
    destinationHttpsOnly: r.boolean('DESTINATION_HTTPS_ONLY', false),
    secrets,
    proofs: {
      lagThreshold: r.integer('PROOF_LAG_THRESHOLD', 10_000, 0, 1_000_000_000),
      graceMs: r.integer('PROOF_GRACE_MS', 300_000, 1_000, 86_400_000),
      dlqThreshold: r.integer('PROOF_DLQ_THRESHOLD', 1_000, 0, 1_000_000_000),
    },
    metricsToken: r.token('METRICS_TOKEN', 16),
    tracing: tracingOf(r, cwd),
  };
  // shorter, a stage stopped for a deploy would find the records it had not read gone
  if (config.kafkaEventRetentionMs !== undefined && config.kafkaEventRetentionMs !== -1 && config.kafkaEventRetentionMs < 3_600_000) r.errors.push('KAFKA_EVENT_RETENTION: must be at least 1h (or forever), so that a stage stopped for a while still finds the records it has not read');
  if (isSplitWithoutEvidenceKey(config)) r.errors.push(SPLIT_NEEDS_KEY);
  if (r.errors.length > 0) throw new ConfigError(r.errors);
  return config;
}

/** The largest count or length limit a span takes. */
const MAX_SPAN_LIMIT = 1_000_000_000;

/**
 * The OTLP/HTTP export as OpenTelemetry's own variables configure it: the traces endpoint as
 * given, else the base endpoint with `/v1/traces`; each traces variable replaces the general one
 * whole (as the specification has signal-specific options override), so that headers meant for
 * another signal's collector are not sent to this one. Every variable is checked, the general
 * one also where a traces one replaces it; the batch processor, the sampler and the span limits
 * take OpenTelemetry's variables and defaults.
 */
function tracingOf(r: Reader, cwd: string): TracingConfig {
  const base = r.optionalUrl('OTEL_EXPORTER_OTLP_ENDPOINT', ['http:', 'https:']);
  const traces = r.optionalUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', ['http:', 'https:']);
  const headers = r.otlpHeaders('OTEL_EXPORTER_OTLP_HEADERS');
  const tracesHeaders = r.otlpHeaders('OTEL_EXPORTER_OTLP_TRACES_HEADERS');
  // the exporter sends JSON: a collector expecting another protocol would refuse every request
  r.oneOf('OTEL_EXPORTER_OTLP_PROTOCOL', OTLP_PROTOCOLS, 'http/json');
  r.oneOf('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', OTLP_PROTOCOLS, 'http/json');
  const compression = r.oneOf('OTEL_EXPORTER_OTLP_COMPRESSION', OTLP_COMPRESSIONS, 'none');
  const ca = [r.pemFile('OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE', 'certificate', cwd), r.pemFile('OTEL_EXPORTER_OTLP_CERTIFICATE', 'certificate', cwd)];
  const cert = [r.pemFile('OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE', 'certificate', cwd), r.pemFile('OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE', 'certificate', cwd)];
  const key = [r.pemFile('OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY', 'private key', cwd), r.pemFile('OTEL_EXPORTER_OTLP_CLIENT_KEY', 'private key', cwd)];
  const clientCert = cert[0] ?? cert[1];
  const clientKey = key[0] ?? key[1];
  if (clientCert && !clientKey) r.errors.push('OTEL_EXPORTER_OTLP_CLIENT_KEY: required with OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE (or their TRACES_ forms): a client certificate is sent with its private key');
  if (clientKey && !clientCert) r.errors.push('OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: required with OTEL_EXPORTER_OTLP_CLIENT_KEY (or their TRACES_ forms): a private key is sent with its client certificate');
  if (clientCert && clientKey && !(clientCert.parsed as X509Certificate).checkPrivateKey(clientKey.parsed as KeyObject)) {
    r.errors.push('OTEL_EXPORTER_OTLP_CLIENT_KEY: not the private key of the client certificate (OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE, or their TRACES_ forms)');
  }
  const maxQueueSize = r.integer('OTEL_BSP_MAX_QUEUE_SIZE', 2_048, 1, 1_000_000);
  const maxExportBatchSize = r.integer('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', Math.min(512, maxQueueSize), 1, 1_000_000);
  if (maxExportBatchSize > maxQueueSize) r.errors.push(`OTEL_BSP_MAX_EXPORT_BATCH_SIZE: must not exceed OTEL_BSP_MAX_QUEUE_SIZE (${maxQueueSize}), got ${maxExportBatchSize}`);
  const attributeLimits = {
    attributeValueLengthLimit: r.integer('OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT', Infinity, 0, MAX_SPAN_LIMIT),
    attributeCountLimit: r.integer('OTEL_ATTRIBUTE_COUNT_LIMIT', 128, 0, MAX_SPAN_LIMIT),
  };
  return {
    endpoint: traces ?? (base === undefined ? undefined : `${base}/v1/traces`),
    serviceName: r.string('OTEL_SERVICE_NAME', 'hookline'),
    headers: new Concealed(tracesHeaders ?? headers ?? {}),
    timeoutMs: r.integer('OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', r.integer('OTEL_EXPORTER_OTLP_TIMEOUT', 10_000, 1, 600_000), 1, 600_000),
    compression: r.oneOf('OTEL_EXPORTER_OTLP_TRACES_COMPRESSION', OTLP_COMPRESSIONS, compression),
    tls: { ca: (ca[0] ?? ca[1])?.path, cert: clientCert?.path, key: clientKey?.path },
    batch: {
      scheduledDelayMs: r.integer('OTEL_BSP_SCHEDULE_DELAY', 5_000, 0, 600_000),
      exportTimeoutMs: r.integer('OTEL_BSP_EXPORT_TIMEOUT', 30_000, 1, 600_000),
      maxQueueSize,
      maxExportBatchSize,
    },
    sampler: r.oneOf('OTEL_TRACES_SAMPLER', TRACE_SAMPLERS, 'parentbased_always_on'),
    samplerRatio: r.fraction('OTEL_TRACES_SAMPLER_ARG', 1),
    attributeLimits,
    spanLimits: {
      attributeValueLengthLimit: r.integer('OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT', attributeLimits.attributeValueLengthLimit, 0, MAX_SPAN_LIMIT),
      attributeCountLimit: r.integer('OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT', attributeLimits.attributeCountLimit, 0, MAX_SPAN_LIMIT),
      eventCountLimit: r.integer('OTEL_SPAN_EVENT_COUNT_LIMIT', 128, 0, MAX_SPAN_LIMIT),
      linkCountLimit: r.integer('OTEL_SPAN_LINK_COUNT_LIMIT', 128, 0, MAX_SPAN_LIMIT),
      attributePerEventCountLimit: r.integer('OTEL_SPAN_ATTRIBUTE_PER_EVENT_COUNT_LIMIT', 128, 0, MAX_SPAN_LIMIT),
      attributePerLinkCountLimit: r.integer('OTEL_SPAN_ATTRIBUTE_PER_LINK_COUNT_LIMIT', 128, 0, MAX_SPAN_LIMIT),
    },
  };
}

const SPLIT_NEEDS_KEY = 'EVIDENCE_SIGNING_KEY is required: processes split by stage must share EVIDENCE_SIGNING_KEY (a process that runs the api or evidence stage but not every stage would otherwise generate its own key and sign or publish checkpoints no other process can check)';

/**
 * A process that publishes or signs the evidence log's checkpoints (api, evidence) beside other
 * processes of the deployment (it does not run every stage) needs the deployment's key: a key
 * generated under its own DATA_DIR would be another key than the one of the other processes.
 */
function isSplitWithoutEvidenceKey(config: Pick<Config, 'stages' | 'evidenceSigningKey'>): boolean {
  const split = STAGE_NAMES.some((stage) => !config.stages.includes(stage));
  const handlesCheckpoints = config.stages.includes('api') || config.stages.includes('evidence');
  return split && handlesCheckpoints && config.evidenceSigningKey === undefined;
}

const MAKE_KEK = 'make one with `echo "k1:$(openssl rand -base64 32)"` and keep it outside DATA_DIR';

function secretsKeySource(r: Reader, at: { dataDir: string; development: boolean; relaxedDefaults: string[]; cwd: string; home: string | undefined }): SecretsKeySource {
  const { dataDir, cwd } = at;
  const kek = r.raw('SECRETS_KEK');
  const file = r.raw('SECRETS_KEK_FILE');
  if (kek !== undefined && file !== undefined) r.errors.push('SECRETS_KEK and SECRETS_KEK_FILE: set one, not both');
  if (kek !== undefined) {
    try {
      parseKeyring(kek, 'SECRETS_KEK');
    } catch (err) {
      if (!(err instanceof KeyringError)) throw err;
      r.errors.push(err.message);
    }
    return { kek, kekFile: undefined, generate: false };
  }
  if (file !== undefined) {
    const kekFile = path.resolve(cwd, file);
    const relative = path.relative(dataDir, kekFile);
    if (!relative.startsWith('..') && !path.isAbsolute(relative)) r.errors.push(`SECRETS_KEK_FILE: must lie outside DATA_DIR (${dataDir}): a copy of the data must not carry its key`);
    return { kek: undefined, kekFile, generate: false };
  }
  if (at.development) {
    const kekFile = developmentKekFile(dataDir, at.home);
    at.relaxedDefaults.push(`SECRETS_KEK_FILE=${kekFile}: the key that encrypts stored secrets is generated on first start and kept there (outside DATA_DIR); without it the data's secrets cannot be read`);
    return { kek: undefined, kekFile, generate: true };
  }
  r.errors.push(`SECRETS_KEK or SECRETS_KEK_FILE is required: the key-encryption key that seals stored secrets, as id:base64 of 32 random bytes; ${MAKE_KEK}`);
  return { kek: undefined, kekFile: undefined, generate: false };
}

function parseStages(r: Reader): StageName[] {
  const v = r.raw('STAGES');
  if (v === undefined || v === 'all') return [...STAGE_NAMES];
  const names = v.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = names.filter((n) => !(STAGE_NAMES as readonly string[]).includes(n));
  if (unknown.length > 0) r.errors.push(`STAGES: unknown stage ${unknown.join(', ')}; known: all, ${STAGE_NAMES.join(', ')}`);
  const stages = names.filter((n): n is StageName => (STAGE_NAMES as readonly string[]).includes(n));
  // the API serves the Hook URLs too
  if (stages.includes('api') && !stages.includes('ingest')) stages.push('ingest');
  return stages;
}

/** The documented settings, in the order docs/configuration.md lists them. */
export const SETTINGS: SettingDoc[] = [
  { env: 'HOOKLINE_ENV', default: 'production', unit: 'production, development', description: '`development` relaxes the defaults marked so below for local use and prints each relaxation at start; `npm start` runs in development unless this is set. Every default is the strict one in `production`.' },
  { env: 'PORT', default: '8080 (0 in a process without api or ingest)', unit: 'TCP port', description: 'Port of the HTTP API and the Hook URLs, and of `/healthz` and `/readyz`, which every process serves. A process that runs neither `api` nor `ingest` takes a free port unless PORT is set, and names it in its `service ready` line.' },
  { env: 'HOST', default: '127.0.0.1', unit: 'address', description: 'Address the HTTP server binds to (0.0.0.0 in containers).' },
  { env: 'PUBLIC_BASE_URL', default: 'http://HOST:PORT', unit: 'URL', description: 'Base of the Hook URLs handed to senders.' },
  { env: 'ERROR_BASE', default: 'PUBLIC_BASE_URL', unit: 'URL', description: 'Base of problem type URIs: `<ERROR_BASE>/errors/<slug>`.' },
  { env: 'DATA_DIR', default: './.data', unit: 'path', description: 'Directory of all local state: Kafka log, Redis, embedded ClickHouse, run files.' },
  { env: 'LOG_LEVEL', default: 'info', unit: 'debug, info, warn, error', description: 'Lowest level written to stdout.' },
  { env: 'LOG_FORMAT', default: 'json (development: pretty)', unit: 'json, pretty', description: '`json`: one JSON object per line (`level`, `ts`, `msg`, then the fields; secrets redacted), for log collectors. `pretty`: one readable line per event, for a terminal. See [Logs](#logs).' },
  { env: 'KAFKA_BROKERS', default: 'unset: local Kafka', unit: 'host:port list', description: 'Comma-separated bootstrap brokers. Unset, a single-node Kafka 4 (KRaft) is resolved with Maven and started under DATA_DIR.' },
  { env: 'KAFKA_REPLICATION_FACTOR', default: '1 local, 3 with KAFKA_BROKERS', unit: 'replicas', description: 'Replication factor of topics the service creates.' },
  { env: 'KAFKA_PARTITIONS', default: '3', unit: 'partitions', description: 'Partitions of the event and delivery topics the service creates.' },
  { env: 'KAFKA_REQUEST_TIMEOUT_MS', default: '5000', unit: 'milliseconds', description: 'Longest the Kafka client waits for the answer to one request (a produce, a commit, a metadata read; a fetch and a group join have their own waits on top) before it fails it and retries, after reading where the partition\'s leader is now. A frozen broker holds a request this long; the Kafka clients\' usual default, 30 s, held webhooks and stages for 30 s each time. Keep it above the slowest acknowledgment the cluster gives under load.' },
  { env: 'KAFKA_PRODUCERS', default: '1', unit: 'producers', description: 'Idempotent producers of a process, each owning a share of every topic\'s partitions (partition modulo this count), so that as many produce requests can be in flight; each partition keeps one writer and its order. At most 16.' },
  { env: 'TOPIC_PREFIX', default: '(empty)', unit: 'string', description: 'Prefix of every topic name, to share one cluster between deployments.' },
  { env: 'SCHEMA_REGISTRY_URL', default: 'unset: local registry', unit: 'URL', description: 'Confluent-compatible schema registry. Unset, a Kafka-backed registry runs inside the service.' },
  { env: 'REDIS_URL', default: 'unset: local redis-server', unit: 'redis:// URL', description: 'Redis for idempotency keys, rate limits and coordination. Unset, a redis-server is started on a free loopback port.' },
  { env: 'CLICKHOUSE_URL', default: 'unset: embedded chdb', unit: 'URL', description: 'ClickHouse HTTP endpoint. Unset, the embedded engine (chdb) keeps its data under DATA_DIR.' },
  { env: 'CLICKHOUSE_USER', default: 'default', unit: 'string', description: 'ClickHouse user (server only).' },
  { env: 'CLICKHOUSE_PASSWORD', default: '(empty)', unit: 'string', description: 'ClickHouse password (server only).' },
  { env: 'CLICKHOUSE_DATABASE', default: 'hookline', unit: 'identifier', description: 'Database holding the query tables; created and migrated at start.' },
  { env: 'STAGES', default: 'all', unit: 'list', description: 'Stages this process runs: all, or a comma list of api, ingest, validate, filter, route, deliver, retry, evidence, sink (`api` serves the Hook URLs too, `ingest` the Hook URLs alone; validate, filter and route run as one: naming any runs the three). `--stage <name>` or `--role <role>` (ingest, api, stage:<name>, sequencer, sink) on the command line overrides it.' },
  { env: 'INGEST_MAX_BODY_BYTES', default: '1048576', unit: 'bytes', description: 'Largest webhook body a Hook URL accepts; larger gets 413.' },
  { env: 'FILTER_MAX_BODY_BYTES', default: '262144', unit: 'bytes', description: 'Largest body a filter body rule reads. An event whose body rules need a larger body is not filtered: it goes to `events.dlq` with the reason (`failed`, `dlq_queued`).' },
  { env: 'FILTER_MAX_JSON_DEPTH', default: '32', unit: 'levels', description: 'Deepest nesting of JSON arrays and objects a filter body rule reads; a deeper body goes to `events.dlq` like a larger one.' },
  { env: 'FILTER_MAX_HEADER_BYTES', default: '8192', unit: 'bytes', description: 'Most bytes of one header (all its values together) a filter `matches` rule reads; a longer header goes to `events.dlq` like a larger body.' },
  { env: 'MAX_HOPS', default: '3', unit: 'deliveries', description: 'Deliveries of this service a webhook may already have passed through (its `X-Hookline-Hops` header); beyond it a Hook URL answers 422, so that chains of destinations and Hook URLs cannot loop.' },
  { env: 'MAX_FANOUT', default: '50', unit: 'destinations', description: 'Distinct destinations across the delivery flows of one ingester (422 on write); routing delivers to the first this many by destination id and logs the rest as left out.' },
  { env: 'DELIVERY_TIMEOUT_MS', default: '15000', unit: 'milliseconds', description: 'Total time allowed for one delivery attempt.' },
  { env: 'DELIVERY_CONNECT_TIMEOUT_MS', default: '5000', unit: 'milliseconds', description: 'Time allowed to open the connection of one delivery attempt.' },
  { env: 'RETRY_SCHEDULE', default: '0,5s,5m,30m,2h,5h,10h,10h', unit: 'durations (ms, s, m, h, d)', description: 'Wait before each delivery attempt (the first is usually 0); ±10% jitter is added. A destination may carry its own `retry_schedule_ms`.' },
  { env: 'RETRY_TIERS', default: '1s,5s,30s,5m,30m,2h,5h', unit: 'durations', description: 'Delay topics `deliveries.retry.<tier>` that carry waiting deliveries; a wait is spent hopping through them, never in a timer in memory.' },
  { env: 'DESTINATION_ALLOWED_NETWORKS', default: 'none (development: loopback)', unit: 'list of CIDRs, IPs, `loopback`, `private`, `none`', description: 'Non-public addresses deliveries may connect to (SSRF guard); everything else private, loopback, link-local or cloud-metadata is refused. Cloud-metadata addresses only when listed one by one.' },
  { env: 'BREAKER_ERROR_PERCENT', default: '50', unit: 'percent', description: 'Share of failed attempts in the window that opens a destination\'s circuit breaker.' },
  { env: 'BREAKER_MIN_ATTEMPTS', default: '5', unit: 'attempts', description: 'Attempts in the window before the breaker may open.' },
  { env: 'BREAKER_RESET_MS', default: '30000', unit: 'milliseconds', description: 'How long an open breaker holds deliveries back before one trial attempt (half-open).' },
  { env: 'BREAKER_WINDOW_MS', default: '10000', unit: 'milliseconds', description: 'Rolling window of the breaker\'s statistics.' },
  { env: 'DELIVERY_MAX_IN_FLIGHT', default: '2000', unit: 'deliveries', description: 'Deliveries one process attempts at once; beyond it, consumption pauses.' },
  { env: 'CONFIG_VERSION_WAIT_MS', default: '5000', unit: 'milliseconds', description: 'Longest a stage holds a record whose `hookline-config-version` header names configuration this process has not applied yet (an ingester or destination just changed through another process). Past it the record is decided with the configuration this process has, and a warning is logged (at most every 10 s, with the count); 0 never waits.' },
  { env: 'DELIVERY_PER_DESTINATION', default: '32', unit: 'requests', description: 'Concurrent requests to one destination from the whole deployment: each deliver process takes its share of it (the limit dealt out among the live deliver processes, at least 1 each), counted afresh every DELIVERY_SYNC_MS. While processes join it may be overshot by the joiners\' shares for a while (see Delivery).' },
  { env: 'DELIVERY_RATE_WAIT_MS', default: '1000', unit: 'milliseconds', description: 'Longest wait for a send slot of a destination\'s rate limit (rate_limit_per_s) spent in the deliver process, outside the destination\'s concurrent requests; a longer wait hops through the delay topics and comes back this long before its slot. Never less than the shortest RETRY_TIERS tier.' },
  { env: 'DELIVERY_ORDERED_WAIT_MS', default: '60000', unit: 'milliseconds', description: 'Longest a delivery to an `ordered` destination keeps the deliveries behind it waiting, counted from its first attempt in line: its retries, waits on an open breaker and for a send slot that end within it are spent in the deliver process, and the next delivery goes only after it. A longer wait sends it through the delay topics (it leaves the line and arrives after later ones). 0: an ordered destination never waits in line. At most 3600000. See docs/ordering.md.' },
  { env: 'DELIVERY_ATTEMPT_MARKS_TTL_S', default: '300', unit: 'seconds', description: 'How long a finished delivery attempt is remembered in Redis (its result, without the request). Every attempt is claimed in Redis before it is sent (SET NX, pipelined with the other claims of the moment) and its result replaces the claim, so that a task read again for any reason (fetched again, a rebalance, a restart, an old owner cut off with a frozen coordinator) writes that attempt\'s outcome again instead of sending the webhook again; this is what lets a destination\'s place free when its attempt is decided, before its outcome is acknowledged. Results go to Redis in batches (a round trip every 20 ms or 1,000 results); each is about 250 bytes, so Redis holds about rate x this x 250 bytes (75 MB at 1,000 deliveries/s and 300 s). 0: no claims and no results (a task read again is attempted again, at-least-once).' },
  { env: 'BROKER_IDLE_CLOSE_MS', default: '60000', unit: 'milliseconds', description: 'A broker destination\'s connection (kafka, amqp, nats, mqtt) that sent nothing for this long is closed; the next delivery opens it again. A destination paused, changed or deleted has its connection closed at once.' },
  { env: 'TRANSFORM_WORKERS', default: '1', unit: 'count', description: 'Worker threads of each process running destinations\' transformations (a QuickJS WebAssembly sandbox each). Tenants take turns on them, so one tenant\'s slow code waits behind its own runs, not others\'. The event loop never runs tenant code.' },
  { env: 'TRANSFORM_TIMEOUT_MS', default: '50', unit: 'milliseconds', description: 'CPU time one run of a transformation may take; beyond it the run is stopped and that attempt fails ("ran out of time"), retried as any failure.' },
  { env: 'TRANSFORM_MEMORY_MB', default: '16', unit: 'MiB', description: 'Memory one run of a transformation may use; beyond it the run is stopped and that attempt fails ("ran out of memory").' },
  { env: 'DELIVERY_SYNC_MS', default: '500', unit: 'milliseconds', description: 'How often a deliver process says in Redis that it is live and reads the other deliver processes: their number (its share of DELIVERY_PER_DESTINATION) and their open breakers (which hold its deliveries too). Also, plus a few Redis round trips, the bound on how late it follows another process\'s breaker.' },
  { env: 'SINK_BATCH_ROWS', default: '20000', unit: 'rows', description: 'Rows the ClickHouse sink gathers before an insert.' },
  { env: 'SINK_FLUSH_MS', default: '500', unit: 'milliseconds', description: 'Longest time a row waits in the sink before its insert. Every insert makes a part the engine merges later: shorter waits cost CPU, longer ones delay `acked` and query freshness.' },
  { env: 'INGEST_ACK_TIMEOUT_MS', default: '5000', unit: 'milliseconds', description: 'Longest a webhook waits for Kafka to acknowledge it (acks=all) before the Hook URL answers 503 `service-unavailable` with Retry-After: 1 instead of holding the sender (a broker frozen, leadership moving). The problem\'s `detail` says whether the event was never stored (it was still waiting for a request) or may still be (its request had not come back); a retry of the latter may be received twice.' },
  { env: 'INGEST_LINGER_MS', default: '0', unit: 'milliseconds', description: 'How long the Hook URL waits to gather concurrent webhooks into one Kafka request (0: one event-loop turn).' },
  { env: 'OUTPUT_LINGER_MS', default: '5', unit: 'milliseconds', description: 'How long the stages\' outputs wait to gather into one Kafka request when no request of theirs is in flight (0: one event-loop turn); while one is, they gather until it is answered anyway. At moderate rates it halves the produce requests per event for at most this much more latency per stage.' },
  { env: 'IDEMPOTENCY_TTL_SECONDS', default: '86400', unit: 'seconds', description: 'How long an `Idempotency-Key` and its answer are kept (per tenant and API key, in Redis).' },
  { env: 'RATE_LIMITS', default: 'default=600/60s', unit: '`default=N/window;METHOD /path=N/window`', description: 'Requests per API key and route (path with `:tenantId` and `:id`, e.g. `POST /v1/tenants/:tenantId/destinations=20/60s`); windows in s, m or h. Over it: 429 with Retry-After.' },
  { env: 'RATE_LIMIT_TIMEOUT_MS', default: '250', unit: 'milliseconds', description: 'Longest wait for Redis on an API request\'s rate limit; past it the request goes through without RateLimit headers (fail open, logged at most once a minute with the count).' },
  { env: 'INGEST_RATE_LIMIT_PER_HOOK', default: '500/1s', unit: '`N/window` (s, m, h) or `off`', description: 'Webhooks one Hook URL accepts, counted across all processes in Redis; over it: 429 `rate-limit-exceeded` with Retry-After, nothing stored. Far above what a provider ordinarily sends one endpoint, low enough that one runaway sender cannot take a process (about 7000 webhooks/s in the benchmark) for itself. Processes take tokens in leases of 2% of the limit (at most 50), so N processes may admit up to N leases more. Fails open when Redis does not answer.' },
  { env: 'INGEST_RATE_LIMIT_PER_TENANT', default: '2000/1s', unit: '`N/window` (s, m, h) or `off`', description: 'Webhooks all Hook URLs of one tenant accept together, as INGEST_RATE_LIMIT_PER_HOOK: four Hook URLs at their own limit at once, yet under a third of what one process accepts, so one tenant cannot take a process.' },
  { env: 'INGEST_RATE_LIMIT_TIMEOUT_MS', default: '200', unit: 'milliseconds', description: 'Longest wait for Redis when a process needs a new lease of ingest tokens; past it the webhook is accepted, and so are all for the next second (fail open, logged at most every 10 s with the count).' },
  { env: 'MAX_INGESTERS_PER_TENANT', default: '1000', unit: 'ingesters', description: 'Most ingesters (Hook URLs) one tenant may hold; one more is 403 quota-exceeded.' },
  { env: 'MAX_DESTINATIONS_PER_TENANT', default: '1000', unit: 'destinations', description: 'Most destinations one tenant may hold; one more is 403 quota-exceeded.' },
  { env: 'MAX_FLOWS_PER_TENANT', default: '1000', unit: 'delivery flows', description: 'Most delivery flows one tenant may hold (also those an ingester create makes); one more is 403 quota-exceeded.' },
  { env: 'MAX_SAVED_PAYLOADS_PER_TENANT', default: '10000', unit: 'saved payloads', description: 'Most saved payloads one tenant may hold; one more is 403 quota-exceeded.' },
  { env: 'MAX_API_KEYS_PER_TENANT', default: '100', unit: 'API keys', description: 'Most usable (not revoked, not expired) API keys one tenant may hold; one more is 403 quota-exceeded from the API, and `keys create` refuses it. Retired keys stay listed up to the same number, the oldest deleted first.' },
  { env: 'MAX_EVENT_TYPES_PER_TENANT', default: '1000', unit: 'event types', description: 'Most event types one tenant\'s catalogue may hold; one more is 403 quota-exceeded.' },
  { env: 'API_KEY_LAST_USED_INTERVAL_SECONDS', default: '60', unit: 'seconds', description: 'An API process records a key\'s `last_used_at` in Redis at most once per this interval per key (not on every request), so the time shown is accurate to about it.' },
  { env: 'REPLAY_RATE_PER_S', default: '100', unit: 'deliveries/s', description: 'Replayed deliveries all replay jobs of the deployment queue together per second (a token bucket in Redis shared by every API process), so that a replay cannot crowd out live deliveries. 1 to 100000.' },
  { env: 'REPLAY_MAX_TRIES', default: '10', unit: 'tries', description: 'Tries in a row of one replay job that end in an error (ClickHouse or Kafka unreachable, a query refused) before the job ends `failed`, the last error as its `error`. The count is kept in Redis: while Redis is unreachable no try runs, and none counts. After a failed try the next waits 1 s, doubling up to 60 s (10 tries: about 4 minutes); a try that makes progress clears the count. 1 to 100.' },
  { env: 'OPERATIONAL_EVENT_WINDOW_MS', default: '300000', unit: 'milliseconds', description: 'Operational events (`destination.disabled`, `destination.breaker_opened`, `delivery.exhausted`, `replay.completed`): at most one per type and subject (destination or replay job) in this window, however many deliver processes see the happening; the ones left out are counted in the next one\'s `suppressed`.' },
  { env: 'OPERATIONAL_EVENTS_PER_TENANT', default: '100', unit: 'events per window', description: 'Most operational events one tenant gets in an OPERATIONAL_EVENT_WINDOW_MS window, whatever their subjects.' },
  { env: 'DISABLED_WRITE_GROUPS', default: '(empty)', unit: 'list of write scopes', description: 'Write groups switched off, e.g. `write:destinations`: their routes answer 403 write-tool-disabled with `tool_group`.' },
  { env: 'EVIDENCE_SIGNING_KEY', default: 'unset: generated', unit: 'note signer key', description: 'Ed25519 key that signs the evidence checkpoints, as `PRIVATE+KEY+<origin>+<key id>+<base64>` (the C2SP signed-note / Go `note` format); its name is the log\'s origin. Unset, one is generated on first start and kept in `DATA_DIR/evidence/signing-key`. Processes split by stage must share it: a process that runs the api or evidence stage but not every stage refuses to start without it, and a process without it whose generated key did not sign the deployment\'s log (its newest checkpoint names the key) refuses to start too.' },
  { env: 'EVIDENCE_ORIGIN', default: 'hookline/evidence/<random>', unit: 'string', description: 'Origin (first checkpoint line and key name) given to a generated signing key.' },
  { env: 'EVIDENCE_BATCH_SIZE', default: '1000', unit: 'leaves', description: 'Most delivery outcomes sealed into one signed checkpoint (at most 2000).' },
  { env: 'EVIDENCE_BATCH_AGE_MS', default: '200', unit: 'milliseconds', description: 'Longest an outcome waits before its batch is sealed.' },
  { env: 'DESTINATION_HTTPS_ONLY', default: 'false', unit: 'boolean', description: 'Refuse destination URLs that are not `https:` (400 on create). Off by default so the quick start can deliver to a local `http:` receiver; TRUST-007 fails while it is off or any destination is `http:`.' },
  { env: 'SECRETS_KEK', default: 'required (development: generated)', unit: '`id:base64` list', description: 'Key-encryption keys that seal every stored secret (provider and destination secrets, destination credentials, the evidence signing key file, idempotency answers): comma-separated `id:base64` of 32 random bytes (`echo "k1:$(openssl rand -base64 32)"`). The first seals, all open: put a new key first to rotate. Required in production (or SECRETS_KEK_FILE); development generates one into `~/.hookline/keys/`.' },
  { env: 'SECRETS_KEK_FILE', default: 'unset (development: `~/.hookline/keys/<hash of DATA_DIR>.kek`)', unit: 'path', description: 'File holding the same as SECRETS_KEK (one key per line or comma-separated); must lie outside DATA_DIR. Development creates it (mode 0600) on first start.' },
  { env: 'PROOF_LAG_THRESHOLD', default: '10000', unit: 'records', description: 'Consumer lag of a stage (PROOF-002) or of the sink (PROOF-004) above which the proof fails.' },
  { env: 'PROOF_GRACE_MS', default: '300000', unit: 'milliseconds', description: 'How long an accepted event may rest at `received`, or a delivered attempt wait for `acked`, before PROOF-001 counts it as unaccounted; also the slack PROOF-003 and PROOF-010 allow beyond a breaker\'s or a retry tier\'s delay.' },
  { env: 'PROOF_DLQ_THRESHOLD', default: '1000', unit: 'deliveries', description: 'Dead deliveries of a tenant not yet retried above which PROOF-009 fails.' },
  { env: 'METRICS_TOKEN', default: 'unset: no token', unit: 'string (16 to 1024 visible ASCII characters)', description: 'Bearer token `GET /metrics` requires on every process (`Authorization: Bearer <token>`; otherwise 401). Unset, `/metrics` answers anyone who reaches the port and names no tenant\'s objects: `hookline_breaker_state` (which names destinations) is left empty and only `hookline_breakers` counts the breakers.' },
  { env: 'OTEL_EXPORTER_OTLP_ENDPOINT', default: 'unset: no spans', unit: 'URL', description: 'OpenTelemetry collector (OTLP over HTTP, e.g. `http://localhost:4318`): spans go to `<it>/v1/traces`, batched. Unset (and no OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), no span is recorded; the W3C trace context still travels on every record, delivery row, log line and outbound request. See Tracing.' },
  { env: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', default: 'unset', unit: 'URL', description: 'The OTLP/HTTP traces endpoint itself (`.../v1/traces`), used as given; takes precedence over OTEL_EXPORTER_OTLP_ENDPOINT.' },
  { env: 'OTEL_EXPORTER_OTLP_HEADERS', default: 'unset: none', unit: '`name=value,...` (values percent-encoded)', description: 'Headers of every OTLP export request, such as a hosted collector\'s API key (`x-honeycomb-team=<key>`, `Authorization=Basic%20<base64>`): comma-separated, each part trimmed, values percent-decoded. A credential: never logged or shown; a malformed value stops the start with the member\'s position, not its text.' },
  { env: 'OTEL_EXPORTER_OTLP_TRACES_HEADERS', default: 'unset', unit: 'as OTEL_EXPORTER_OTLP_HEADERS', description: 'The headers of the traces export; when set, it replaces OTEL_EXPORTER_OTLP_HEADERS whole (none of the latter is sent).' },
  { env: 'OTEL_EXPORTER_OTLP_TIMEOUT', default: '10000', unit: 'milliseconds', description: 'Longest wait for the collector to answer one export request; past it that batch of spans is dropped.' },
  { env: 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', default: 'OTEL_EXPORTER_OTLP_TIMEOUT', unit: 'milliseconds', description: 'The same for the traces export; replaces OTEL_EXPORTER_OTLP_TIMEOUT.' },
  { env: 'OTEL_EXPORTER_OTLP_PROTOCOL', default: 'http/json', unit: 'http/json', description: 'The OTLP transport of the export: only `http/json` (OTLP over HTTP as JSON, which every OTLP/HTTP receiver takes, port 4318). Another value (`grpc`, `http/protobuf`) stops the start rather than send a collector what it does not expect.' },
  { env: 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', default: 'OTEL_EXPORTER_OTLP_PROTOCOL', unit: 'http/json', description: 'The same for the traces export.' },
  { env: 'OTEL_EXPORTER_OTLP_COMPRESSION', default: 'none', unit: 'none, gzip', description: 'Compression of the export requests\' bodies.' },
  { env: 'OTEL_EXPORTER_OTLP_TRACES_COMPRESSION', default: 'OTEL_EXPORTER_OTLP_COMPRESSION', unit: 'none, gzip', description: 'The same for the traces export; replaces OTEL_EXPORTER_OTLP_COMPRESSION.' },
  { env: 'OTEL_EXPORTER_OTLP_CERTIFICATE', default: 'unset: the system\'s CAs', unit: 'path (PEM)', description: 'The CA certificate(s) an `https:` collector\'s certificate is checked against, for a collector behind a private CA. Relative to the working directory; a file that cannot be read or is not a PEM certificate stops the start.' },
  { env: 'OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE', default: 'OTEL_EXPORTER_OTLP_CERTIFICATE', unit: 'path (PEM)', description: 'The same for the traces export; replaces OTEL_EXPORTER_OTLP_CERTIFICATE.' },
  { env: 'OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE', default: 'unset: none', unit: 'path (PEM)', description: 'This process\'s certificate, for a collector that asks for one (mutual TLS); needs OTEL_EXPORTER_OTLP_CLIENT_KEY.' },
  { env: 'OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE', default: 'OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE', unit: 'path (PEM)', description: 'The same for the traces export; replaces OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE.' },
  { env: 'OTEL_EXPORTER_OTLP_CLIENT_KEY', default: 'unset: none', unit: 'path (PEM)', description: 'The private key of the client certificate, unencrypted; it must belong to that certificate (checked at start). Its contents are never shown.' },
  { env: 'OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY', default: 'OTEL_EXPORTER_OTLP_CLIENT_KEY', unit: 'path (PEM)', description: 'The same for the traces export; replaces OTEL_EXPORTER_OTLP_CLIENT_KEY.' },
  { env: 'OTEL_BSP_SCHEDULE_DELAY', default: '5000', unit: 'milliseconds', description: 'Longest a finished span waits before the batch it is in is sent.' },
  { env: 'OTEL_BSP_EXPORT_TIMEOUT', default: '30000', unit: 'milliseconds', description: 'Longest the export of one batch may take before it is given up.' },
  { env: 'OTEL_BSP_MAX_QUEUE_SIZE', default: '2048', unit: 'spans', description: 'Finished spans waiting for their export at most; past it new spans are dropped.' },
  { env: 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', default: '512 (at most OTEL_BSP_MAX_QUEUE_SIZE)', unit: 'spans', description: 'Spans per export request; not more than OTEL_BSP_MAX_QUEUE_SIZE.' },
  { env: 'OTEL_TRACES_SAMPLER', default: 'parentbased_always_on', unit: '`always_on`, `always_off`, `traceidratio`, each also `parentbased_`', description: 'Which traces are recorded: all, none, or a share of them chosen by trace id (OTEL_TRACES_SAMPLER_ARG). A `parentbased_` sampler follows the sampled flag of the `traceparent` a webhook came with, and decides as its root only for a trace that begins here.' },
  { env: 'OTEL_TRACES_SAMPLER_ARG', default: '1', unit: 'number from 0 to 1', description: 'The share of traces the `traceidratio` samplers record.' },
  { env: 'OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT', default: 'unlimited', unit: 'characters', description: 'Longest attribute value a span keeps; a longer one is cut.' },
  { env: 'OTEL_ATTRIBUTE_COUNT_LIMIT', default: '128', unit: 'attributes', description: 'Attributes a span keeps; the rest are dropped.' },
  { env: 'OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT', default: 'OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT', unit: 'characters', description: 'The same for spans; replaces OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT.' },
  { env: 'OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT', default: 'OTEL_ATTRIBUTE_COUNT_LIMIT', unit: 'attributes', description: 'The same for spans; replaces OTEL_ATTRIBUTE_COUNT_LIMIT.' },
  { env: 'OTEL_SPAN_EVENT_COUNT_LIMIT', default: '128', unit: 'events', description: 'Events a span keeps.' },
  { env: 'OTEL_SPAN_LINK_COUNT_LIMIT', default: '128', unit: 'links', description: 'Links a span keeps.' },
  { env: 'OTEL_SPAN_ATTRIBUTE_PER_EVENT_COUNT_LIMIT', default: '128', unit: 'attributes', description: 'Attributes each event of a span keeps.' },
  { env: 'OTEL_SPAN_ATTRIBUTE_PER_LINK_COUNT_LIMIT', default: '128', unit: 'attributes', description: 'Attributes each link of a span keeps.' },
  { env: 'OTEL_SERVICE_NAME', default: 'hookline', unit: 'string', description: 'The `service.name` of the spans this process exports (give each role its own to tell them apart).' },
  { env: 'RETENTION_BODIES', default: '30d', unit: 'duration (`30d`, `12h`, `90s`) or `forever`', description: 'How long ClickHouse keeps bodies: each webhook\'s body and headers, each attempt\'s response body, each dead letter\'s bytes. Past it the body is cleared (GET …/events/{id} shows `body: null`, `body_expired: true`; retrying or replaying the event answers 409) while the row and its `body_sha256` stay. 1 s to 10 years; a tenant may set its own (`limits.retention`). See [Retention](./retention.md).' },
  { env: 'RETENTION_ATTEMPTS', default: '90d', unit: 'duration or `forever`', description: 'How long ClickHouse keeps the rows of events and attempts (`events`, `deliveries`, `event_transitions`, `event_types`, `dead_letters`, `dead_letter_replays`); past it they are deleted. The evidence tables never are: a proof still verifies. 1 s to 10 years; a tenant may set its own.' },
  { env: 'RETENTION_LOGS', default: '30d', unit: 'duration or `forever`', description: 'How long ClickHouse keeps log lines (`logs`). 1 s to 10 years; a tenant may set its own.' },
  { env: 'RETENTION_SWEEP_SECONDS', default: '3600', unit: 'seconds', description: 'Every this often a process running the sink rewrites the ClickHouse partitions holding rows expired since its last sweep, so that expired bodies and rows are gone within about this time. 0: no sweep; the TTLs then apply only when merges run (`merge_with_ttl_timeout` 1 hour). At most 7 days.' },
  { env: 'ANALYTICS_ROLLUP_SECONDS', default: '10', unit: 'seconds', description: 'Every this often a process running the sink adds the attempts stored since its last rollup to the analytics views that hour and day answers read (minute answers read the attempts). 1 to 3600. See [Analytics](./analytics.md#how-the-views-are-filled).' },
  { env: 'ANALYTICS_ROLLUP_LAG_SECONDS', default: '30', unit: 'seconds', description: 'A rollup takes the attempts stored up to this long before ClickHouse\'s clock, so that every insert begun before then has committed: hour and day answers lag the attempts by this plus up to `ANALYTICS_ROLLUP_SECONDS`. An insert that takes longer than this to commit is not counted in them (NC-24). 1 to 3600.' },
  { env: 'KAFKA_EVENT_RETENTION', default: 'unset: the broker\'s default (Kafka\'s: 7 days)', unit: 'duration or `forever`', description: '`retention.ms` of the topics whose records carry webhook bodies (`webhooks.*`, `deliveries.requested`, `deliveries.held`, `deliveries.dlq`, `events.dlq`, the retry tiers), set when the service creates them; existing topics are left as they are. See [Retention](./retention.md).' },
  { env: 'BOOTSTRAP_DEMO_TENANT', default: 'true', unit: 'boolean', description: 'On first start with an empty configuration, create tenant `demo` and print its API key once (only a process that runs the API does).' },
];
