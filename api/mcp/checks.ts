import type { ClickHouseClient } from '@clickhouse/client';
import type { Admin } from 'kafkajs';
import type { Redis } from 'ioredis';
import { request, type Dispatcher } from 'undici';
import { checkHost, type AllowList, type Cidr } from '../../core/address-policy';
import { errorMessage } from '../../core/log';
import { withTimeout } from '../../core/timeout';
import { verifyConsistency } from '../../core/merkle';
import { CAPABILITIES, PLANES, RUNTIME_PROOFS, TRUST_PROOFS, type PlaneName, type ProofId, type ProofSpec, type ProofStatus } from '../../core/proof-catalogue';
import { openNote, parseCheckpoint, parseVerifierKey, type NoteSigner } from '../../core/signed-note';
import { consumerGroups, consumerSpec, groupIdOf, type Topics } from '../../core/topics';
import type { ConfigStore } from '../../platform/config-store/config-store';
import type { EvidenceStore } from '../../platform/evidence/store';
import { consumerLag, type TopicLag } from '../../platform/kafka/lag';
import type { TopicSpec } from '../../platform/kafka/client';
import type { BreakerBoard } from '../../platform/redis/breaker-board';
import type { DependencyName, DependencyStatus, HealthProbe } from '../routes/health';
import type { EvidenceLogInfo } from '../routes/evidence';
import { isSsrfRefusal } from '../../platform/http/guarded-agent';
import { SECRET_FIELDS } from '../routes/ingesters';
import { authSecret } from '../../core/destination-auth';

/** One answer of the running API to a probe request (see ApiProbe). */
export interface ProbeAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

/** Requests sent through the API's own middleware and routes, in process, for the live probes. */
export interface ApiProbe {
  send(req: { method: string; url: string; headers?: Record<string, string>; body?: unknown }): Promise<ProbeAnswer>;
  /** Runs `fn` with an API key of `tenantId` holding `scopes`, known only in memory and only meanwhile. */
  withKey<T>(tenantId: string, scopes: string[], fn: (apiKey: string) => Promise<T>): Promise<T>;
}

export interface OperationsDeps {
  admin: Admin;
  redis: Redis;
  redisPrefix: string;
  clickhouse: ClickHouseClient;
  database: string;
  topics: Topics;
  topicSpecs: TopicSpec[];
  /** Consumer groups are `<groupPrefix><stage>`. */
  groupPrefix: string;
  store: ConfigStore;
  evidence: EvidenceStore;
  evidenceLog: EvidenceLogInfo;
  /** The checkpoint key this process loaded, when it has one. */
  signer: NoteSigner | undefined;
  breakers: BreakerBoard;
  breakerResetMs: number;
  thresholds: { lagThreshold: number; graceMs: number; dlqThreshold: number };
  allow: AllowList;
  /** The agent deliveries go through (its SSRF guard is probed). */
  deliveryAgent: Dispatcher;
  httpsOnly: boolean;
  health: HealthProbe;
  probe: ApiProbe;
}

export interface ProofResult {
  id: ProofId;
  title: string;
  scope: ProofSpec['scope'];
  criterion: string;
  status: ProofStatus;
  observed: Record<string, unknown>;
  measured_at: string;
  duration_ms: number;
}

export interface Signal {
  name: string;
  status: ProofStatus;
  value: unknown;
  /** The proof the signal comes from, or `health` for the dependency checks. */
  source: string;
}

export interface PlaneResult {
  name: PlaneName;
  description: string;
  status: ProofStatus;
  signals: Signal[];
}

/** The worst of several statuses: any fail fails, else any unknown is unknown. */
export function worst(statuses: ProofStatus[]): ProofStatus {
  if (statuses.includes('fail')) return 'fail';
  if (statuses.includes('unknown')) return 'unknown';
  return 'pass';
}

/**
 * The consumers whose lag the stage check reads: all but the sink and the delay tiers, which have
 * checks of their own, and release, whose lag is the deliveries held for paused destinations.
 */
const STAGE_INPUTS = (t: Topics): [string, string[]][] => consumerGroups(t).filter((c) => c.name !== 'sink' && c.name !== 'retry' && c.name !== 'release').map((c) => [c.name, c.reads]);
const TABLES = ['events', 'event_transitions', 'deliveries', 'logs', 'evidence_leaves', 'evidence_nodes', 'evidence_checkpoints'];
/** Longest a retry-tier sample is kept, and the fewest seconds between two samples. */
const SAMPLE_SPACING_MS = 5_000;
const MAX_SAMPLES = 5_000;
const MIN_SIGNING_SECRET_BYTES = 24;

type Check = (tenantId: string) => Promise<{ status: ProofStatus; observed: Record<string, unknown> }>;

/**
 * The live checks behind the runtime proofs, trust proofs, planes, capabilities and readiness.
 * Nothing is cached: every answer measures again (the retry tiers keep offset samples, because
 * "draining" compares now with the past).
 */
export class Operations {
  private readonly tierSamples: { at: number; ends: Map<string, number[]> }[] = [];

  constructor(private readonly deps: OperationsDeps) {}

  private async timedCheck(spec: ProofSpec, check: Check, tenantId: string): Promise<ProofResult> {
    const started = performance.now();
    const at = new Date().toISOString();
    let outcome: { status: ProofStatus; observed: Record<string, unknown> };
    try {
      outcome = await withTimeout(check(tenantId), 5_000);
    } catch (err) {
      // a check that cannot measure says so; it does not pass
      outcome = { status: 'fail', observed: { error: errorMessage(err) } };
    }
    return { id: spec.id as ProofId, title: spec.title, scope: spec.scope, criterion: spec.criterion, status: outcome.status, observed: outcome.observed, measured_at: at, duration_ms: Math.round(performance.now() - started) };
  }

  async runtimeProofs(tenantId: string): Promise<ProofResult[]> {
    const checks: Record<string, Check> = {
      'PROOF-001': (t) => this.accounted(t),
      'PROOF-002': () => this.stageLag(),
      'PROOF-003': (t) => this.breakersWithinWindow(t),
      'PROOF-004': () => this.sinkLag(),
      'PROOF-005': () => this.logOnlyGrew(),
      'PROOF-006': () => this.kafkaTopics(),
      'PROOF-007': () => this.redisUp(),
      'PROOF-008': () => this.clickhouseSchema(),
      'PROOF-009': (t) => this.deadLetters(t),
      'PROOF-010': () => this.retryDraining(),
    };
    return Promise.all(RUNTIME_PROOFS.map((spec) => this.timedCheck(spec, checks[spec.id]!, tenantId)));
  }

  async trustProofs(tenantId: string): Promise<ProofResult[]> {
    const checks: Record<string, Check> = {
      'TRUST-001': (t) => this.keysHashed(t),
      'TRUST-002': (t) => this.scopesEnforced(t),
      'TRUST-003': () => this.signingKey(),
      'TRUST-004': (t) => this.outboundSigning(t),
      'TRUST-005': () => this.ssrfGuard(),
      'TRUST-006': (t) => this.secretsMasked(t),
      'TRUST-007': (t) => this.httpsOnly(t),
      'TRUST-008': (t) => this.inboundVerification(t),
      'TRUST-009': (t) => this.rateLimited(t),
      'TRUST-010': () => this.errorHygiene(),
    };
    return Promise.all(TRUST_PROOFS.map((spec) => this.timedCheck(spec, checks[spec.id]!, tenantId)));
  }

  /** The six planes, each from the proofs and dependency checks behind it. */
  async planes(tenantId: string): Promise<{ planes: PlaneResult[]; proofs: ProofResult[]; dependencies: Record<DependencyName, DependencyStatus>; measured_at: string }> {
    const measured_at = new Date().toISOString();
    const [runtime, trust, dependencies] = await Promise.all([this.runtimeProofs(tenantId), this.trustProofs(tenantId), this.deps.health.check()]);
    const proofs = [...runtime, ...trust];
    const byId = new Map(proofs.map((p) => [p.id as string, p]));
    const proof = (id: ProofId, name: string = id): Signal => {
      const p = byId.get(id)!;
      return { name, status: p.status, value: p.observed, source: id };
    };
    const dependency = (name: DependencyName): Signal => {
      const d = dependencies[name];
      return { name, status: d.status === 'up' ? 'pass' : d.status === 'unused' ? 'unknown' : 'fail', value: d, source: 'health' };
    };
    const stage = (stageName: string): Signal => {
      const p = byId.get('PROOF-002')!;
      const stages = (p.observed.stages ?? {}) as Record<string, { lag: number; members: number; status: ProofStatus }>;
      const s = stages[stageName];
      return { name: `${stageName} lag`, status: s ? s.status : p.status, value: s ?? p.observed, source: 'PROOF-002' };
    };
    const signals: Record<PlaneName, Signal[]> = {
      ingestion: [dependency('kafka'), dependency('schema_registry'), proof('PROOF-006', 'topics'), dependency('pipeline')],
      processing: [stage('validate'), stage('filter'), stage('route'), proof('PROOF-001', 'events accounted for')],
      delivery: [stage('deliver'), proof('PROOF-003', 'circuit breakers'), proof('PROOF-010', 'retry tiers'), proof('PROOF-009', 'dead letters'), proof('TRUST-005', 'SSRF guard')],
      evidence: [stage('evidence-sequencer'), proof('PROOF-005', 'log only grew'), proof('TRUST-003', 'signing key')],
      query: [proof('PROOF-008', 'clickhouse'), proof('PROOF-004', 'sink lag')],
      control: [proof('PROOF-007', 'redis'), proof('TRUST-002', 'scopes'), proof('TRUST-009', 'rate limits'), proof('TRUST-001', 'hashed keys')],
    };
    const planes = PLANES.map((p) => ({ name: p.name, description: p.description, status: worst(signals[p.name].map((s) => s.status)), signals: signals[p.name] }));
    return { planes, proofs, dependencies, measured_at };
  }

  async capabilities(tenantId: string) {
    const measured_at = new Date().toISOString();
    const [runtime, trust] = await Promise.all([this.runtimeProofs(tenantId), this.trustProofs(tenantId)]);
    const byId = new Map([...runtime, ...trust].map((p) => [p.id as string, p]));
    return {
      capabilities: CAPABILITIES.map((c) => {
        const backing = c.proofs.map((id) => byId.get(id)!);
        return { id: c.id, kind: c.kind, title: c.title, status: worst(backing.map((p) => p.status)), proofs: backing.map((p) => ({ id: p.id, status: p.status })) };
      }),
      measured_at,
    };
  }

  async readiness(tenantId: string) {
    const { planes, proofs, measured_at } = await this.planes(tenantId);
    const count = (s: ProofStatus) => proofs.filter((p) => p.status === s).length;
    const status = worst(planes.map((p) => p.status));
    return {
      ready: status !== 'fail',
      status,
      domains: planes.map((p) => ({ name: p.name, status: p.status, failing: p.signals.filter((s) => s.status === 'fail').map((s) => s.name) })),
      proofs: { pass: count('pass'), fail: count('fail'), unknown: count('unknown') },
      measured_at,
    };
  }

  // -------------------------------------------------------------------------------------------
  // runtime proofs

  private async accounted(tenantId: string) {
    const { graceMs } = this.deps.thresholds;
    // two single passes, one per event and one per delivery, both inside the tenant's key prefix
    const eventsQuery = `
      SELECT count() AS events,
             countIf(length(states) = 1) AS unaccounted,
             groupArrayIf(8)(event_id, length(states) = 1) AS unaccounted_sample,
             countIf(has(states, 'failed') AND NOT has(states, 'validated')) AS failed_verification,
             countIf(has(states, 'validated') AND NOT has(states, 'filtered')) AS stopped_by_filter,
             countIf(has(states, 'filtered')) AS routed
      FROM (
        SELECT event_id, groupUniqArray(state) AS states, min(at) AS first_at
        FROM ${this.deps.database}.event_transitions
        WHERE tenant_id = {tenant:String} AND at >= now64(3) - INTERVAL 1 DAY
        GROUP BY event_id
        HAVING has(states, 'received') AND first_at < now64(3) - toIntervalMillisecond({grace:UInt64})
      )`;
    const deliveriesQuery = `
      SELECT countIf(has(states, 'delivered') AND NOT has(states, 'acked') AND last_at < now64(3) - toIntervalMillisecond({grace:UInt64})) AS delivered_without_ack,
             countIf(has(states, 'acked')) AS acked,
             countIf(has(states, 'dlq_queued')) AS dead_lettered
      FROM (
        SELECT delivery_id, groupUniqArray(state) AS states, max(at) AS last_at
        FROM ${this.deps.database}.event_transitions
        WHERE tenant_id = {tenant:String} AND delivery_id != '' AND at >= now64(3) - INTERVAL 1 DAY
        GROUP BY delivery_id
      )`;
    const run = async (query: string) => {
      const rs = await this.deps.clickhouse.query({ query, query_params: { tenant: tenantId, grace: graceMs }, format: 'JSONEachRow' });
      return (await rs.json<Record<string, string | number | string[]>>())[0] ?? {};
    };
    const [events, deliveries] = await Promise.all([run(eventsQuery), run(deliveriesQuery)]);
    const row = { ...events, ...deliveries };
    const n = (k: string) => Number(row?.[k] ?? 0);
    const observed = {
      window: '24h',
      grace_ms: graceMs,
      events_older_than_grace: n('events'),
      routed: n('routed'),
      stopped_by_filter_or_unrouted: n('stopped_by_filter'),
      failed_verification: n('failed_verification'),
      acked_deliveries: n('acked'),
      dead_lettered_deliveries: n('dead_lettered'),
      unaccounted_events: n('unaccounted'),
      unaccounted_sample: (row?.unaccounted_sample ?? []) as string[],
      delivered_without_ack: n('delivered_without_ack'),
    };
    return { status: observed.unaccounted_events === 0 && observed.delivered_without_ack === 0 ? 'pass' : 'fail', observed } as const;
  }

  private async groupMembers(groups: string[]): Promise<Map<string, number>> {
    const { groups: described } = await this.deps.admin.describeGroups(groups);
    return new Map(described.map((g) => [g.groupId, g.members.length]));
  }

  private async stageLag() {
    const { lagThreshold } = this.deps.thresholds;
    const inputs = STAGE_INPUTS(this.deps.topics);
    const groups = inputs.map(([stage]) => groupIdOf(this.deps.groupPrefix, stage));
    const [lags, members] = await Promise.all([Promise.all(inputs.map(([, topics], i) => consumerLag(this.deps.admin, groups[i]!, topics))), this.groupMembers(groups)]);
    const stages: Record<string, { lag: number; members: number; threshold: number; status: ProofStatus }> = {};
    inputs.forEach(([stage], i) => {
      const lag = sum(lags[i]!);
      const live = members.get(groups[i]!) ?? 0;
      // a stage that no process runs leaves its work waiting: only that, with work waiting, fails
      stages[stage] = { lag, members: live, threshold: lagThreshold, status: lag > lagThreshold || (live === 0 && lag > 0) ? 'fail' : 'pass' };
    });
    return { status: worst(Object.values(stages).map((s) => s.status)), observed: { stages } };
  }

  /** Every tenant's breakers count; only the caller's own are listed with their destination ids. */
  private async breakersWithinWindow(tenantId: string) {
    const entries = await this.deps.breakers.entries();
    const now = Date.now();
    const window = this.deps.breakerResetMs + this.deps.thresholds.graceMs;
    const measured = entries.map((e) => ({ ...e, for_ms: now - e.since }));
    const stuck = measured.filter((e) => e.state === 'open' && e.for_ms > window);
    const own = measured.filter((e) => e.tenant_id === tenantId).map((e) => ({ destination_id: e.destination_id, state: e.state, since: new Date(e.since).toISOString(), for_ms: e.for_ms, instance: e.instance }));
    const ownStuck = own.filter((e) => e.state === 'open' && e.for_ms > window);
    return {
      status: stuck.length === 0 ? 'pass' : 'fail',
      observed: { open: measured.filter((e) => e.state === 'open').length, half_open: measured.filter((e) => e.state === 'half-open').length, window_ms: window, beyond_window: ownStuck, beyond_window_other_tenants: stuck.length - ownStuck.length, breakers: own.slice(0, 50) },
    } as const;
  }

  private async sinkLag() {
    const { lagThreshold } = this.deps.thresholds;
    const group = groupIdOf(this.deps.groupPrefix, 'sink');
    const [lags, members] = await Promise.all([consumerLag(this.deps.admin, group, consumerSpec(this.deps.topics, 'sink').reads), this.groupMembers([group])]);
    const lag = sum(lags);
    const live = members.get(group) ?? 0;
    return {
      status: lag > lagThreshold || (live === 0 && lag > 0) ? 'fail' : 'pass',
      observed: { lag, threshold: lagThreshold, members: live, topics: Object.fromEntries(lags.map((l) => [l.topic, l.lag])) },
    } as const;
  }

  private async logOnlyGrew() {
    const [newest, previous] = await this.deps.evidence.checkpoints(2);
    if (!newest) return { status: 'unknown', observed: { reason: 'no checkpoint has been sealed yet' } } as const;
    const verifier = parseVerifierKey(this.deps.evidenceLog.verifierKey);
    const open = (note: string) => parseCheckpoint(openNote(note, verifier));
    const to = open(newest.checkpoint);
    if (!previous) return { status: 'pass', observed: { newest_tree_size: to.size, reason: 'only one checkpoint: its signature verifies' } } as const;
    const from = open(previous.checkpoint);
    const proof = await this.deps.evidence.consistencyProof(from.size, to.size);
    const consistent = verifyConsistency(from.size, to.size, proof, from.root, to.root);
    return {
      status: consistent ? 'pass' : 'fail',
      observed: { from_tree_size: from.size, to_tree_size: to.size, from_root: from.root.toString('hex'), to_root: to.root.toString('hex'), proof_hashes: proof.length, signatures_verified: 2, consistent },
    } as const;
  }

  private async kafkaTopics() {
    const metadata = await this.deps.admin.fetchTopicMetadata({ topics: this.deps.topicSpecs.map((s) => s.topic) });
    const partitionsOf = new Map(metadata.topics.map((t) => [t.name, t.partitions.length]));
    const missing = this.deps.topicSpecs.filter((s) => !partitionsOf.has(s.topic)).map((s) => s.topic);
    const short = this.deps.topicSpecs.filter((s) => (partitionsOf.get(s.topic) ?? 0) < s.partitions && partitionsOf.has(s.topic)).map((s) => s.topic);
    const brokers = (await this.deps.admin.describeCluster()).brokers.length;
    return { status: missing.length === 0 && short.length === 0 ? 'pass' : 'fail', observed: { brokers, topics: this.deps.topicSpecs.length, missing, fewer_partitions: short } } as const;
  }

  private async redisUp() {
    const started = performance.now();
    const answer = await withTimeout(this.deps.redis.ping(), 2_000);
    return { status: answer === 'PONG' ? 'pass' : 'fail', observed: { answer, latency_ms: Math.round(performance.now() - started) } } as const;
  }

  private async clickhouseSchema() {
    const rs = await this.deps.clickhouse.query({ query: 'SELECT name FROM system.tables WHERE database = {db:String}', query_params: { db: this.deps.database }, format: 'JSONEachRow' });
    const present = new Set((await rs.json<{ name: string }>()).map((r) => r.name));
    const missing = TABLES.filter((t) => !present.has(t));
    return { status: missing.length === 0 ? 'pass' : 'fail', observed: { database: this.deps.database, tables: TABLES.length - missing.length, missing } } as const;
  }

  private async deadLetters(tenantId: string) {
    const rs = await this.deps.clickhouse.query({
      query: `SELECT DISTINCT delivery_id FROM ${this.deps.database}.event_transitions
              WHERE tenant_id = {tenant:String} AND state = 'dlq_queued' AND delivery_id != '' AND at >= now64(3) - INTERVAL 30 DAY LIMIT 100000`,
      query_params: { tenant: tenantId },
      format: 'JSONEachRow',
    });
    const ids = (await rs.json<{ delivery_id: string }>()).map((r) => r.delivery_id);
    let retried = 0;
    // the replay claims (platform/replay) mark each dead delivery that was retried
    for (let i = 0; i < ids.length; i += 1_000) {
      const chunk = ids.slice(i, i + 1_000);
      if (chunk.length === 0) break;
      retried += await this.deps.redis.exists(...chunk.map((id) => `${this.deps.redisPrefix}replayed:${tenantId}:${id}`));
    }
    const backlog = ids.length - retried;
    return { status: backlog <= this.deps.thresholds.dlqThreshold ? 'pass' : 'fail', observed: { window: '30d', dead_deliveries: ids.length, retried, backlog, threshold: this.deps.thresholds.dlqThreshold } } as const;
  }

  private async retryDraining() {
    const { admin, topics, groupPrefix, thresholds } = this.deps;
    const tiers = topics.retryTiers;
    const lags = await consumerLag(admin, groupIdOf(groupPrefix, 'retry'), consumerSpec(topics, 'retry').reads);
    const now = Date.now();
    const ends = new Map(lags.map((l) => [l.topic, l.partitions.map((p) => p.end)]));
    const last = this.tierSamples[this.tierSamples.length - 1];
    if (!last || now - last.at >= SAMPLE_SPACING_MS) {
      this.tierSamples.push({ at: now, ends });
      if (this.tierSamples.length > MAX_SAMPLES) this.tierSamples.shift();
    }
    const perTier = tiers.map((tier) => {
      const lag = lags.find((l) => l.topic === tier.topic)!;
      if (lag.lag === 0) return { topic: tier.topic, delay_ms: tier.delayMs, waiting: 0, status: 'pass' as ProofStatus };
      // the newest sample old enough that everything in the tier then must have left it by now
      const due = tier.delayMs + thresholds.graceMs;
      const sample = [...this.tierSamples].reverse().find((s) => now - s.at >= due);
      if (!sample) return { topic: tier.topic, delay_ms: tier.delayMs, waiting: lag.lag, status: 'unknown' as ProofStatus, reason: `no offset sample older than ${due} ms yet` };
      const then = sample.ends.get(tier.topic) ?? [];
      const behind = lag.partitions.filter((p) => (p.committed ?? 0) < (then[p.partition] ?? 0)).map((p) => p.partition);
      return { topic: tier.topic, delay_ms: tier.delayMs, waiting: lag.lag, status: (behind.length === 0 ? 'pass' : 'fail') as ProofStatus, sampled_at: new Date(sample.at).toISOString(), partitions_behind: behind };
    });
    return { status: worst(perTier.map((t) => t.status)), observed: { tiers: perTier } };
  }

  // -------------------------------------------------------------------------------------------
  // trust proofs

  /** Every tenant's keys count; only the caller's own unhashed keys are named. */
  private async keysHashed(tenantId: string) {
    const keys = this.deps.store.all('api_key');
    const bad = keys.filter((k) => !/^[0-9a-f]{64}$/.test(k.secret_sha256) || Object.keys(k).some((f) => /^(secret|api_key|key|token)$/i.test(f)));
    const own = bad.filter((k) => k.tenant_id === tenantId).map((k) => k.id);
    return { status: bad.length === 0 ? 'pass' : 'fail', observed: { keys: keys.length, hashed: keys.length - bad.length, not_hashed: own, not_hashed_other_tenants: bad.length - own.length } } as const;
  }

  private async scopesEnforced(tenantId: string) {
    const probeTenant = `probe-${tenantId}`.slice(0, 60);
    const { probe } = this.deps;
    const unauthenticated = await probe.send({ method: 'GET', url: `/v1/tenants/${probeTenant}/destinations` });
    const [read, write, otherTenant] = await probe.withKey(probeTenant, [], async (key) => {
      const auth = { authorization: `Bearer ${key}` };
      return Promise.all([
        probe.send({ method: 'GET', url: `/v1/tenants/${probeTenant}/destinations`, headers: auth }),
        probe.send({ method: 'POST', url: `/v1/tenants/${probeTenant}/destinations`, headers: { ...auth, 'content-type': 'application/json' }, body: { name: 'scope probe', url: 'https://example.invalid/' } }),
        probe.send({ method: 'GET', url: `/v1/tenants/${tenantId}/destinations`, headers: auth }),
      ]);
    });
    const slug = (a: ProbeAnswer) => String((a.body as { type?: string } | undefined)?.type ?? '').split('/').pop();
    const scope = (a: ProbeAnswer) => (a.body as { required_scope?: string } | undefined)?.required_scope;
    const results = {
      no_key: { status: unauthenticated.status, expected: 401 },
      read_without_scope: { status: read.status, type: slug(read), required_scope: scope(read), expected: '403 insufficient-scope read:destinations' },
      write_without_scope: { status: write.status, type: slug(write), required_scope: scope(write), expected: '403 insufficient-scope write:destinations or write-tool-disabled' },
      other_tenant: { status: otherTenant.status, expected: 404 },
    };
    const ok =
      unauthenticated.status === 401 &&
      read.status === 403 && slug(read) === 'insufficient-scope' && scope(read) === 'read:destinations' &&
      write.status === 403 && (slug(write) === 'write-tool-disabled' || (slug(write) === 'insufficient-scope' && scope(write) === 'write:destinations')) &&
      otherTenant.status === 404;
    return { status: ok ? 'pass' : 'fail', observed: results } as const;
  }

  private async signingKey() {
    const published = parseVerifierKey(this.deps.evidenceLog.verifierKey);
    const observed: Record<string, unknown> = { origin: published.name, key_id: published.keyId.toString('hex') };
    let ok = true;
    if (this.deps.signer) {
      const text = `${published.name}\nkey probe ${new Date().toISOString()}\n`;
      try {
        openNote(this.deps.signer.sign(text), published);
        observed.loaded_key_matches_published = true;
      } catch (err) {
        ok = false;
        observed.loaded_key_matches_published = false;
        observed.error = errorMessage(err);
      }
    } else {
      observed.loaded_key_matches_published = null;
    }
    const newest = await this.deps.evidence.checkpoint();
    if (newest) {
      try {
        openNote(newest.checkpoint, published);
        observed.newest_checkpoint_verifies = true;
      } catch (err) {
        ok = false;
        observed.newest_checkpoint_verifies = false;
        observed.checkpoint_error = errorMessage(err);
      }
      observed.newest_tree_size = newest.tree_size;
    } else {
      observed.newest_checkpoint_verifies = null;
    }
    const status: ProofStatus = !ok ? 'fail' : this.deps.signer || newest ? 'pass' : 'unknown';
    return { status, observed };
  }

  private async outboundSigning(tenantId: string) {
    const destinations = this.deps.store.list('destination', tenantId);
    const weak = destinations.filter((d) => {
      const m = /^whsec_([A-Za-z0-9+/=]+)$/.exec(d.signing_secret ?? '');
      return !m || Buffer.from(m[1]!, 'base64').length < MIN_SIGNING_SECRET_BYTES;
    });
    return { status: weak.length === 0 ? 'pass' : 'fail', observed: { destinations: destinations.length, signing: destinations.length - weak.length, without_secret: weak.map((d) => d.id), scheme: 'Standard Webhooks (HMAC-SHA256)' } } as const;
  }

  private async ssrfGuard() {
    const probes = [
      { target: 'http://169.254.169.254/latest/meta-data/', what: 'cloud metadata' },
      { target: 'http://10.0.0.1/', what: 'private network' },
    ];
    const results = await Promise.all(
      probes.map(async (p) => {
        // the agent refuses these before it dials; one that policy would allow is never sent
        const verdict = checkHost(new URL(p.target).hostname, this.deps.allow);
        if (verdict.ok) return { ...p, refused: false, by: 'allow list (not sent)' };
        try {
          const res = await request(p.target, { dispatcher: this.deps.deliveryAgent, signal: AbortSignal.timeout(2_000) });
          await res.body.dump();
          return { ...p, refused: false, by: `answered ${res.statusCode}` };
        } catch (err) {
          return { ...p, refused: isSsrfRefusal(err), by: errorMessage(err) };
        }
      }),
    );
    return { status: results.every((r) => r.refused) ? 'pass' : 'fail', observed: { allowed_networks: this.deps.allow.ranges.map(cidrText), probes: results } } as const;
  }

  private secretsOf(tenantId: string): string[] {
    const secrets = new Set<string>();
    for (const d of this.deps.store.list('destination', tenantId)) {
      if (d.signing_secret) secrets.add(d.signing_secret);
      const credential = authSecret(d.auth);
      if (credential) secrets.add(credential);
    }
    for (const i of this.deps.store.list('ingester', tenantId)) {
      for (const [k, v] of Object.entries(i.config)) {
        if (!SECRET_FIELDS.test(k)) continue;
        for (const s of Array.isArray(v) ? v : [v]) if (typeof s === 'string' && s.length >= 8) secrets.add(s);
      }
    }
    return [...secrets];
  }

  private async secretsMasked(tenantId: string) {
    const secrets = this.secretsOf(tenantId);
    if (secrets.length === 0) return { status: 'pass', observed: { secrets: 0, reason: 'the tenant stores no secret' } } as const;
    const { probe } = this.deps;
    const answers = await probe.withKey(tenantId, ['read:destinations', 'read:ingesters'], (key) =>
      Promise.all(['destinations', 'ingesters'].map((r) => probe.send({ method: 'GET', url: `/v1/tenants/${tenantId}/${r}?limit=200`, headers: { authorization: `Bearer ${key}` } }))),
    );
    const text = answers.map((a) => JSON.stringify(a.body)).join('\n');
    const inResponses = secrets.filter((s) => text.includes(s)).length;
    const rs = await this.deps.clickhouse.query({
      query: `SELECT count() AS n FROM ${this.deps.database}.logs WHERE tenant_id = {tenant:String} AND ts >= now64(3) - INTERVAL 1 DAY
              AND multiSearchAny(concat(message, fields), {secrets:Array(String)})`,
      query_params: { tenant: tenantId, secrets: secrets.slice(0, 255) },
      format: 'JSONEachRow',
    });
    const inLogs = Number((await rs.json<{ n: string }>())[0]?.n ?? 0);
    return {
      status: inResponses === 0 && inLogs === 0 && answers.every((a) => a.status === 200) ? 'pass' : 'fail',
      observed: { secrets: secrets.length, responses_read: answers.map((a) => a.status), secrets_in_responses: inResponses, log_lines_with_secrets: inLogs, log_window: '24h' },
    } as const;
  }

  private async httpsOnly(tenantId: string) {
    const destinations = this.deps.store.list('destination', tenantId);
    const plain = destinations.filter((d) => !d.url.toLowerCase().startsWith('https:')).map((d) => d.id);
    return { status: this.deps.httpsOnly && plain.length === 0 ? 'pass' : 'fail', observed: { policy: this.deps.httpsOnly ? 'https only' : 'http allowed (DESTINATION_HTTPS_ONLY=false)', destinations: destinations.length, not_https: plain } } as const;
  }

  private async inboundVerification(tenantId: string) {
    const ingesters = this.deps.store.list('ingester', tenantId);
    const open = ingesters.filter((i) => i.provider === 'none').map((i) => i.id);
    const providers: Record<string, number> = {};
    for (const i of ingesters) providers[i.provider] = (providers[i.provider] ?? 0) + 1;
    return { status: open.length === 0 ? 'pass' : 'fail', observed: { ingesters: ingesters.length, providers, without_verification: open } } as const;
  }

  private async rateLimited(tenantId: string) {
    const { probe } = this.deps;
    const answer = await probe.withKey(tenantId, ['read:destinations'], (key) => probe.send({ method: 'GET', url: `/v1/tenants/${tenantId}/destinations?limit=1`, headers: { authorization: `Bearer ${key}` } }));
    const headers = ['ratelimit', 'ratelimit-policy', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'];
    const present = headers.filter((h) => answer.headers[h] !== undefined);
    return { status: present.length === headers.length ? 'pass' : 'fail', observed: { probe_status: answer.status, headers_present: present, policy: answer.headers['ratelimit-policy'] ?? null } } as const;
  }

  private async errorHygiene() {
    const { probe } = this.deps;
    // a body that is not JSON, sent with a valid key so that it reaches the body parser
    const answer = await probe.withKey('probe', [], (key) =>
      probe.send({ method: 'POST', url: '/v1/tenants/probe/destinations', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{"name": ' }),
    );
    const body = answer.body as Record<string, unknown> | undefined;
    const members = body ? Object.keys(body).sort() : [];
    const allowed = new Set(['type', 'title', 'status', 'detail', 'instance', 'errors']);
    const text = JSON.stringify(body ?? '');
    const leaks = /\bat [\w.<>]+ \(|node_modules|\.ts:\d+|Error:/.test(text);
    const contentType = String(answer.headers['content-type'] ?? '');
    const ok = answer.status >= 400 && answer.status < 500 && contentType.startsWith('application/problem+json') && members.every((m) => allowed.has(m)) && ['type', 'title', 'status', 'detail', 'instance'].every((m) => members.includes(m)) && !leaks;
    return { status: ok ? 'pass' : 'fail', observed: { probe_status: answer.status, content_type: contentType, members, internals_found: leaks } } as const;
  }
}

function cidrText(c: Cidr): string {
  if (c.family === 4) return `${[24, 16, 8, 0].map((shift) => Number((c.network >> BigInt(shift)) & 0xffn)).join('.')}/${c.prefix}`;
  const groups = Array.from({ length: 8 }, (_, i) => Number((c.network >> BigInt(112 - 16 * i)) & 0xffffn).toString(16));
  return `${groups.join(':').replace(/(^|:)0(:0)+(:|$)/, '::')}/${c.prefix}`;
}

function sum(lags: TopicLag[]): number {
  return lags.reduce((n, l) => n + l.lag, 0);
}

