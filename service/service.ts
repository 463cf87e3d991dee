import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { ClickHouseClient } from '@clickhouse/client';
import { Redis } from 'ioredis';
import { ReplayMatches } from '../platform/replay/job-matches';
import { startReplayJobs } from '../platform/replay/job-runner';
import type { Kafka, Producer } from 'kafkajs';
import { createApp, type ApiServices } from '../api/app';
import type { BuildInfo } from '../api/routes/health';
import { parserRefusalAnswer, writeProblem } from '../api/problem';
import type { Config, StageName } from '../core/config';
import { Logger, errorMessage, logOutput } from '../core/log';
import { newId } from '../core/ids';
import { REPO_ROOT } from '../core/paths';
import { SCOPES } from '../core/scopes';
import { evidenceWriterIdOf, groupPrefixOf, topicNames, type Topics } from '../core/topics';
import { startLocalInfrastructure, writeRunFile, removeRunFile, type LocalInfrastructure } from '../infra/local';
import { startSchemaRegistry, type SchemaRegistryServer } from '../infra/registry/server';
import { AvroCodec } from '../platform/avro/codec';
import { openClickHouse } from '../platform/clickhouse/client';
import { migrate } from '../platform/clickhouse/migrate';
import { ConfigStore } from '../platform/config-store/config-store';
import { ensureTenant, issueApiKey } from '../platform/config-store/tenants';
import { BatchingProducer, type BatchingOptions } from '../platform/kafka/batching-producer';
import { ProducerLanes, watchPartitionCounts } from '../platform/kafka/producer-lanes';
import { murmur2Partitioner } from '../platform/kafka/partitioner';
import { createKafka, createProducer, ensureTopics } from '../platform/kafka/client';
import { RedisNameClaims } from '../platform/redis/name-claims';
import { deliverStage } from '../pipeline/deliver/stage';
import { createPublisher } from '../pipeline/deliver/publishers';
import { createSandboxTransformer } from '../pipeline/deliver/transform/sandbox';
import { watchTransforms } from '../platform/metrics/transform-stats';
import { isBroker } from '../core/destination-types';
import { isOwnHost } from '../core/own-listeners';
import { undiciSender, type HttpSender } from '../pipeline/deliver/http-sender';
import { Breakers } from '../pipeline/deliver/breakers';
import { DeliverPeers } from '../pipeline/deliver/peers';
import { createGuardedAgent, isSsrfRefusal } from '../platform/http/guarded-agent';
import { refusalOfDestination } from '../platform/http/destination-check';
import { discoverOwnListeners } from './own-listeners';
import type { DestinationPort } from '../pipeline/deliver/stage';
import type { Destination } from '../core/model';
import { runDelayTiers } from '../pipeline/retry/delay-stage';
import { runRelease } from '../pipeline/release/stage';
import { Pacer } from '../pipeline/deliver/pace';
import { RedisSendSlots } from '../platform/redis/send-slots';
import { runWindowedStage } from '../pipeline/runtime/windowed-runner';
import { attemptMarksIn, type AttemptMarks } from '../pipeline/deliver/attempt-marks';
import { RedisBatchedMarks } from '../platform/redis/batched-marks';
import { OrderedLines } from '../pipeline/deliver/ordered-lines';
import { LogShipper } from '../platform/kafka/log-shipper';
import type { DeliveryTask } from '../platform/avro/records';
import { filterStage } from '../pipeline/filter/stage';
import { hookFastPath, ingestRouter, type IngestDeps } from '../pipeline/ingest/router';
import { routeStage } from '../pipeline/route/stage';
import { finishBacklog, runStage, type RunnerDeps, type RunningStage } from '../pipeline/runtime/run-stage';
import { chainStages } from '../pipeline/runtime/stage';
import { runEvidenceSequencer } from '../pipeline/evidence/sequencer';
import { loadEvidenceSigner } from '../platform/evidence/signing-key';
import { assertSignsLog } from '../platform/evidence/log-key';
import { KafkaFencedWriter } from '../platform/kafka/fenced-writer';
import { loadKeyring } from '../platform/secrets/keyring-source';
import { EvidenceStore } from '../platform/evidence/store';
import type { EvidenceLogInfo } from '../api/routes/evidence';
import { INSERT_COLUMNS, runSink, type RowWriter } from '../pipeline/sink/stage';
import { startSweeper } from '../platform/clickhouse/retention';
import { startAnalyticsRollup } from '../platform/clickhouse/analytics-rollup';
import { ANALYTICS_ROLLUP_LOCK, analyticsRollupLock } from '../platform/redis/analytics-rollup-lock';
import { retentionOf } from '../core/tenants';
import { validateStage } from '../pipeline/validate/stage';
import { healthProbe, type Connections } from './health';
import { BreakerBoard } from '../platform/redis/breaker-board';
import { RedisTokenLeases } from '../platform/redis/token-leases';
import { IngestLimiter } from '../pipeline/ingest/limits';
import { topology } from './topology';
import { OperationalEvents, publishOnReceived } from '../platform/operational/emitter';
import { watchBreakers } from '../platform/metrics/breaker-states';
import { startTracing } from '../platform/tracing/tracing';
import { DataKeys } from '../platform/secrets/data-keys';

export interface RunningService {
  /** Base URL of the HTTP server, when this process runs the api stage. */
  url: string | undefined;
  topics: Topics;
  store: ConfigStore;
  /** Undefined in a process that runs neither the API nor the sink. */
  clickhouse: ClickHouseClient | undefined;
  kafka: Kafka;
  /** The demo tenant's key, when this start created it. */
  demoKey: string | undefined;
  /** The evidence log's origin and checkpoint key, in a process that runs the API or the evidence stage. */
  evidenceLog: EvidenceLogInfo | undefined;
  /** What the API serves with, in a process that runs it. */
  apiServices: ApiServices | undefined;
  stop(): Promise<void>;
}

/** `host:port` of a service URL (redis:, http:), with its scheme's port when it names none. */
function hostPortOf(text: string | undefined): string[] {
  const u = text ? URL.parse(text) : null;
  if (!u || u.hostname === '') return [];
  const port = u.port !== '' ? u.port : ({ 'redis:': '6379', 'rediss:': '6379', 'http:': '80', 'https:': '443' } as Record<string, string>)[u.protocol];
  return port ? [`${u.hostname}:${port}`] : [];
}

export function buildInfo(): BuildInfo {
  const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
  return {
    name: pkg.name,
    version: pkg.version,
    commit: process.env.BUILD_COMMIT ?? null,
    node: process.version,
    started_at: new Date().toISOString(),
  };
}

/**
 * The composition root: brings up (or connects to) the infrastructure, then the stages this
 * process runs. The HTTP server listens first, so health answers 503 while the rest starts.
 */
export async function startService(config: Config, log = new Logger(config.logLevel, {}, logOutput(config.logFormat))): Promise<RunningService> {
  const topics = topicNames(config.topicPrefix, config.retryTiersMs);
  // first: without its keys the service can read none of its stored secrets
  const keyring = loadKeyring(config.secrets);
  // the API publishes the checkpoint key and the evidence stage signs with it
  const evidenceSigner = config.stages.includes('api') || config.stages.includes('evidence')
    ? loadEvidenceSigner({ signingKey: config.evidenceSigningKey, origin: config.evidenceOrigin, dataDir: config.dataDir, keyring })
    : undefined;
  const evidenceLog: EvidenceLogInfo | undefined = evidenceSigner && { origin: evidenceSigner.name, verifierKey: evidenceSigner.verifierKey, keyId: evidenceSigner.keyId.toString('hex'), publicKey: evidenceSigner.publicKey };
  const connections: Connections = {};
  const probe = healthProbe(connections);
  let services: ApiServices | undefined;
  let ingest: ReturnType<typeof ingestRouter> | undefined;
  let ingestDeps: IngestDeps | undefined;
  const cleanups: (() => Promise<unknown>)[] = [];
  const stopAll = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      await cleanup().catch((err: unknown) => log.warn('error while stopping', { error: errorMessage(err) }));
    }
  };

  try {
    // first in, so that it stops last: spans of the stopping stages are still sent
    if (config.tracing.endpoint) {
      const { endpoint, serviceName, headers } = config.tracing;
      cleanups.push(startTracing({ ...config.tracing, endpoint, serviceVersion: buildInfo().version, headers: headers.reveal() }));
      // the host and the headers' names only: the URL and the headers' values may hold credentials
      log.info('exporting traces', { collector: URL.parse(endpoint)?.host, service_name: serviceName, header_names: Object.keys(headers.reveal()) });
    }
    let url: string | undefined;
    // a port of 0 is never public: without PUBLIC_BASE_URL/ERROR_BASE the bound port is used
    const resolvePort = (base: string) => (base.endsWith(':0') && url ? `${base.slice(0, -2)}:${new URL(url).port}` : base);
    const errorBase = () => resolvePort(config.errorBase);
    // every process answers /healthz and /readyz; the API and the Hook URLs only where it runs them
    {
      const app = createApp({
        errorBase,
        log,
        probe,
        build: buildInfo(),
        services: () => services,
        selfUrl: () => url,
        extraRouters: () => ingest,
        stages: config.stages,
        serveApi: config.stages.includes('api'),
        metricsToken: config.metricsToken,
      });
      // the Hook URL's common case is answered without the framework: it is the hot path
      const listener = hookFastPath(() => ingestDeps, app, (err, _req, res, requestId) => writeProblem(res, errorBase(), err, requestId, log));
      const server = http.createServer({ keepAliveTimeout: 65_000 }, listener);
      server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
        // requests Node's parser refuses (unknown method, bad or oversized headers) still get a problem document
        if (!socket.writable) return socket.destroy();
        socket.end(parserRefusalAnswer(errorBase(), err, newId('request')));
      });
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(config.port, config.host, () => resolve());
      });
      const address = server.address();
      const port = address && typeof address === 'object' ? address.port : config.port;
      url = `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${port}`;
      cleanups.push(async () => {
        // clients that keep polling hold keep-alive connections open; give answers in flight
        // a moment, then cut what is left so that stopping never waits on a client
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        const force = setTimeout(() => server.closeAllConnections(), 2_000);
        await closed;
        clearTimeout(force);
      });
      log.info('HTTP server listening; dependencies starting', { url });
    }

    const infra: LocalInfrastructure = await startLocalInfrastructure(config, log);
    cleanups.push(() => infra.stop());

    const kafka = createKafka(infra.endpoints.kafkaBrokers, `hookline-${process.pid}`, { log, requestTimeoutMs: config.kafkaRequestTimeoutMs });
    const { specs, records } = topology(topics, config.kafkaPartitions, config.ingestMaxBodyBytes, config.kafkaEventRetentionMs);
    await ensureTopics(kafka, specs, config.kafkaReplicationFactor);
    const admin = kafka.admin();
    await admin.connect();
    cleanups.push(() => admin.disconnect());
    connections.kafkaAdmin = admin;

    let registryUrl = infra.endpoints.schemaRegistryUrl;
    if (!registryUrl) {
      const registry: SchemaRegistryServer = await startSchemaRegistry({ kafka, topic: topics.schemas });
      cleanups.push(() => registry.close());
      registryUrl = registry.url;
      log.info('local schema registry started', { url: registryUrl });
    }
    connections.schemaRegistryUrl = registryUrl;
    const codec = AvroCodec.connect(registryUrl);
    await codec.register(records);
    // a key generated under DATA_DIR must be the one the deployment's log is signed with
    if (evidenceSigner && !config.evidenceSigningKey) await assertSignsLog(kafka, codec, topics.evidenceLeaves, evidenceSigner);

    const redis = new Redis(infra.endpoints.redisUrl, { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: true });
    await redis.connect();
    cleanups.push(() => redis.quit());
    connections.redis = redis;

    // only the API and the sink use ClickHouse: a scaled-out deliver process opens no engine
    let clickhouse: ClickHouseClient | undefined;
    if (config.stages.includes('api') || config.stages.includes('sink')) {
      const client = openClickHouse({ url: config.clickhouseUrl, user: config.clickhouseUser, password: config.clickhousePassword, dataDir: config.dataDir });
      clickhouse = client;
      cleanups.push(() => client.close());
      await migrate(client, config.clickhouseDatabase);
      connections.clickhouse = client;
    } else {
      connections.clickhouseUnused = true;
    }

    const store = new ConfigStore(kafka, codec, topics.config, keyring, (key, reason) => log.error('configuration record not applied: its secrets do not open', { key, reason }));
    await store.start();
    cleanups.push(() => store.stop());
    // from here on every webhook body the codec writes to Kafka is sealed with its tenant's data key
    codec.sealBodies(new DataKeys(store));

    // the log shipper's and the operational events' producer
    const producer: Producer = createProducer(kafka, { createPartitioner: murmur2Partitioner });
    await producer.connect();
    // every producer a gatherer made, the ones it replaced included (disconnecting twice is harmless)
    const gathering = new Set<Producer>([producer]);
    cleanups.push(() => Promise.all([...gathering].map((p) => p.disconnect())).then(() => undefined));
    const ownProducer = async (): Promise<Producer> => {
      const p = createProducer(kafka, { createPartitioner: murmur2Partitioner });
      gathering.add(p);
      await p.connect();
      return p;
    };
    const partitionCounts = await watchPartitionCounts(admin, specs.map((s) => s.topic));
    cleanups.push(async () => partitionCounts.stop());
    /**
     * One sender of gathering producers, one per lane (KAFKA_PRODUCERS, each owning a share of the
     * partitions), each with an idempotent producer of its own that it replaces after a rejected
     * send (BatchingOptions.renew).
     */
    const lanes = async (options: BatchingOptions) =>
      new ProducerLanes(await Promise.all(Array.from({ length: config.kafkaProducers }, async () => new BatchingProducer(await ownProducer(), { ...options, renew: ownProducer }))), partitionCounts.partitionsOf);

    writeRunFile(config.dataDir, {
      pid: process.pid,
      kafka_brokers: infra.endpoints.kafkaBrokers,
      schema_registry_url: registryUrl,
      redis_url: infra.endpoints.redisUrl,
      api_url: config.stages.includes('api') ? url ?? null : null,
    });
    cleanups.push(async () => removeRunFile(config.dataDir));

    const logShipper = new LogShipper(producer, codec, topics.logs);
    log.addSink(logShipper.sink);
    cleanups.push(() => logShipper.flush());

    const infrastructure = [...infra.endpoints.kafkaBrokers, ...[infra.endpoints.redisUrl, registryUrl, config.clickhouseUrl].flatMap((u) => hostPortOf(u))];
    const own = await discoverOwnListeners(config, url, resolvePort(config.publicBaseUrl), infrastructure);
    const agent = createGuardedAgent({ own, allow: config.destinationAllowedNetworks, connectTimeoutMs: config.deliveryConnectTimeoutMs, totalTimeoutMs: config.deliveryTimeoutMs, connections: config.deliveryPerDestination });
    const sender: HttpSender = undiciSender(agent, { totalTimeoutMs: config.deliveryTimeoutMs });
    cleanups.push(() => sender.close());
    // tenants' transformations: run by deliver, checked and test-run by the API, never on the event loop
    const transformer = config.stages.includes('deliver') || config.stages.includes('api') ? createSandboxTransformer({ workers: config.transformWorkers, timeoutMs: config.transformTimeoutMs, memoryMb: config.transformMemoryMb }) : undefined;
    if (transformer) {
      const unwatchTransforms = watchTransforms(transformer);
      cleanups.push(async () => {
        unwatchTransforms();
        await transformer.close();
      });
    }
    // breaker states go to Redis too, where the API's proofs and planes and the other deliver processes read them
    const board = new BreakerBoard(redis, config.topicPrefix, { expiresMs: Math.max(5_000, 3 * config.deliverySyncMs) });
    // the owner's trial takes at most one attempt's time; the others see its answer one sync later
    const peers = new DeliverPeers(board, { limit: config.deliveryPerDestination, syncMs: config.deliverySyncMs, timing: { resetMs: config.breaker.resetTimeoutMs, trialMs: config.deliveryTimeoutMs + config.deliverySyncMs } }, log);
    // operational events: what the service tells tenants about their destinations and replays
    const operational = new OperationalEvents({ config: store, redis, prefix: config.topicPrefix, publish: publishOnReceived(producer, codec, topics.received), ...config.operationalEvents, log });
    cleanups.push(() => operational.settle());
    const breakers = new Breakers(config.breaker, (destinationId, state, tenantId) => {
      log.info(`circuit breaker ${state}`, { tenant_id: tenantId, destination_id: destinationId, breaker: state });
      board.record(tenantId, destinationId, state).catch((err: unknown) => log.warn('breaker state not published', { destination_id: destinationId, error: errorMessage(err) }));
      if (state === 'open') operational.track(operational.breakerOpened(tenantId, destinationId, config.breaker.resetTimeoutMs));
    }, peers);
    cleanups.push(async () => breakers.shutdown());
    // destination ids belong to tenants: the metrics name them only behind METRICS_TOKEN
    const unwatchBreakers = watchBreakers({ states: () => breakers.states(), nameDestinations: config.metricsToken !== undefined });
    cleanups.push(async () => unwatchBreakers());
    if (config.stages.includes('deliver')) {
      // after the stages stopped (cleanups run backwards): a process leaves the live set, and the
      // others' shares grow, only once its own requests are done
      cleanups.push(async () => {
        peers.stop();
        await board.stop();
      });
    }
    const outputs = await lanes({ maxBatch: 1_000, lingerMs: config.outputLingerMs });
    const runnerDeps: RunnerDeps = {
      kafka, admin, outputs, codec, log, groupPrefix: groupPrefixOf(config.topicPrefix), deadLetterTopic: topics.eventsDlq,
      config: { versions: store, waitMs: config.configVersionWaitMs },
    };
    const running: RunningStage[] = [];
    // stages stop before the producer and the store they write through
    cleanups.push(() => Promise.all(running.map((s) => s.stop())));
    const has = (stage: StageName) => config.stages.includes(stage);
    const starting: Promise<RunningStage>[] = [];
    if (has('validate') || has('filter') || has('route')) {
      const filter = filterStage(topics, store, config.filterLimits);
      const route = routeStage(topics, store, config.maxFanout, config.filterLimits, (tenantId) => store.list('destination', tenantId));
      // the filter and route groups of a deployment that ran them on their own finish what they
      // had left (route's first: the filter group's leftovers are routed in the same pass) and
      // stop; their ends are read before the chain writes anything
      for (const leftover of [route, chainStages(filter, route)]) {
        const finishing = await finishBacklog(leftover, runnerDeps);
        if (finishing) running.push(finishing);
      }
      starting.push(runStage(chainStages(validateStage(topics, store), filter, route), runnerDeps));
    }
    if (has('deliver')) {
      // a first view before the first delivery: the share is known from the start
      await peers.start();
      const destinations: DestinationPort = {
        get: (kind, tenantId, id) => store.get(kind, tenantId, id),
        tenant: (id) => store.tenant(id),
        disable: async (d, reason) => {
          // the attempt took time: start from the latest version, and never recreate a deleted one
          const current = store.get('destination', d.tenant_id, d.id) ?? d;
          // another delivery's 410 disabled it first: that one is its change
          if (current.status === 'disabled') return undefined;
          const next: Destination = { ...current, status: 'disabled', disabled_reason: reason, updated_at: new Date().toISOString() };
          const applied = await store.update(next);
          if (applied) log.warn('destination disabled', { tenant_id: d.tenant_id, destination_id: d.id, reason });
          else log.info('destination deleted before it could be disabled', { tenant_id: d.tenant_id, destination_id: d.id, reason });
          return applied ? { before: current, after: next } : undefined;
        },
      };
      const pacer = new Pacer(new RedisSendSlots(redis, config.topicPrefix), { shortWaitMs: config.deliveryRateWaitMs + (topics.retryTiers[0]?.delayMs ?? 0), lateMs: 1_000, unreachableWaitMs: 1_000 });
      const lines = new OrderedLines(config.deliveryOrderedWaitMs);
      // before the stages stop (cleanups run backwards): a delivery waiting in line leaves it at once
      cleanups.push(async () => lines.stop());
      let marks: AttemptMarks | undefined;
      if (config.deliveryAttemptMarksTtlS > 0) {
        const markStore = new RedisBatchedMarks(redis, config.topicPrefix, { ttlMs: config.deliveryAttemptMarksTtlS * 1_000, onWriteFailed: (err) => log.warn('attempt marks not written; a delivery read again may be sent again', { error: errorMessage(err) }) });
        // a claim outlives the longest attempt (the transformation, the request, the breaker's
        // bookkeeping): a claim still there after it is an owner that died, and is taken over
        marks = attemptMarksIn(markStore, { owner: `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`, ttlMs: config.deliveryTimeoutMs + config.transformTimeoutMs + 5_000 });
        // after the stages (cleanups run backwards): the last attempts' marks are written before Redis closes
        cleanups.push(() => markStore.flush());
      }
      // broker destinations: one pooled connection each, through the same address policy as webhooks
      const publisher = createPublisher({ allow: config.destinationAllowedNetworks, ownEndpoint: (address, port) => isOwnHost(own, address, port), idleMs: config.brokerIdleCloseMs, connectTimeoutMs: config.deliveryConnectTimeoutMs, log });
      // a paused or deleted destination's connection is closed at once (a changed one reconnects on its next message)
      const unwatchDestinations = store.onChange((entity, deleted) => {
        if (entity.kind === 'destination' && isBroker(entity) && (deleted || entity.status !== 'active')) void publisher.release(entity.id);
      });
      cleanups.push(async () => {
        unwatchDestinations();
        await publisher.close();
      });
      const stage = deliverStage({ topics, destinations, sender, breakers, defaultSchedule: config.retryScheduleMs, isRefusal: isSsrfRefusal, pacer, happenings: operational, lines, marks, publisher, transformer, publishTimeoutMs: config.deliveryTimeoutMs, claimWaitMs: config.deliveryTimeoutMs + config.transformTimeoutMs + 10_000 });
      const ordered = (t: DeliveryTask) => store.get('destination', t.tenant_id, t.destination_id)?.ordered === true;
      // an ordered destination's deliveries take their send slots in line, one at a time, in order
      const prepare = async (t: DeliveryTask) => (ordered(t) ? t : pacer.prepare(t, store.get('destination', t.tenant_id, t.destination_id)));
      // an ordered destination's deliveries form one line, run one at a time in the order read
      // (docs/ordering.md); a paced delivery whose slot is still far only moves on to the delay
      // topics: it takes none of its destination's places
      const keyOf = (t: DeliveryTask) => (ordered(t) ? `${t.destination_id}/line` : t.slot_at != null && t.slot_at > Date.now() + 50 ? `${t.destination_id}/waits` : t.destination_id);
      const perKey = (key: string) => (key.endsWith('/line') ? 1 : peers.share());
      starting.push(runWindowedStage(stage, runnerDeps, { maxInFlight: config.deliveryMaxInFlight, keyOf, perKey, prepare }));
      // held deliveries go back wherever deliveries are made
      starting.push(runRelease(topics, store, runnerDeps));
    }
    if (has('retry')) starting.push(runDelayTiers(topics, runnerDeps));
    if (has('evidence')) {
      const writer = new KafkaFencedWriter(kafka, evidenceWriterIdOf(runnerDeps.groupPrefix));
      starting.push(runEvidenceSequencer(topics, runnerDeps, { batchSize: config.evidenceBatchSize, batchAgeMs: config.evidenceBatchAgeMs, origin: evidenceSigner!.name, signer: evidenceSigner!, writer }));
    }
    if (has('sink')) {
      const sinkClient = clickhouse!;
      const writer: RowWriter = {
        insert: async (table, rows) => {
          await sinkClient.insert({ table: `${config.clickhouseDatabase}.${table}`, values: rows, format: 'JSONEachRow', columns: INSERT_COLUMNS[table] as [string, ...string[]] | undefined });
        },
      };
      starting.push(runSink(topics, writer, runnerDeps, { batchRows: config.sinkBatchRows, flushMs: config.sinkFlushMs, retention: (tenantId) => retentionOf(store.tenant(tenantId), config.retention), erased: (tenantId) => store.isErased(tenantId) }));
      if (config.retentionSweepSeconds > 0) {
        const sweeper = startSweeper(sinkClient, config.clickhouseDatabase, config.retentionSweepSeconds, log);
        cleanups.push(() => sweeper.stop());
      }
      const rollupLock = analyticsRollupLock(redis, config.topicPrefix);
      const rollup = startAnalyticsRollup(sinkClient, config.clickhouseDatabase, {
        intervalS: config.analyticsRollupSeconds,
        lagS: config.analyticsRollupLagSeconds,
        withLock: (fn) => rollupLock.withLock(ANALYTICS_ROLLUP_LOCK, fn),
        skipped: () => store.all('tenant').filter((t) => t.state === 'erasing').map((t) => t.id),
        log,
      });
      cleanups.push(() => rollup.stop());
    }
    running.push(...(await Promise.all(starting)));

    let demoKey: string | undefined;
    // only where the API runs: roles started together would otherwise each make a demo tenant
    if (config.bootstrapDemoTenant && has('api') && store.all('tenant').length === 0) {
      await ensureTenant(store, 'demo', 'Demo tenant');
      demoKey = (await issueApiKey(store, 'demo', [...SCOPES])).api_key;
    }

    if (has('ingest')) {
      const limiter = new IngestLimiter({ source: new RedisTokenLeases(redis), prefix: config.topicPrefix, perHook: config.ingestRateLimits.perHook, perTenant: config.ingestRateLimits.perTenant, timeoutMs: config.ingestRateLimits.timeoutMs, log });
      cleanups.push(async () => limiter.stop());
      ingestDeps = { topics, config: store, codec, producer: await lanes({ lingerMs: config.ingestLingerMs }), maxBodyBytes: config.ingestMaxBodyBytes, maxHops: config.maxHops, log, limiter, ackDeadlineMs: config.ingestAckTimeoutMs };
      ingest = ingestRouter(ingestDeps);
    }
    const evidenceStore = clickhouse && new EvidenceStore(clickhouse, config.clickhouseDatabase);
    if (clickhouse) services = { store, clickhouse, clickhouseDatabase: config.clickhouseDatabase, maxBodyBytes: config.ingestMaxBodyBytes, claims: new RedisNameClaims(redis, config.topicPrefix), replay: { producer, codec, topics, redis, prefix: config.topicPrefix, config: store, destinations: store },
      publicBaseUrl: resolvePort(config.publicBaseUrl),
      redis,
      redisPrefix: config.topicPrefix,
      idempotencyTtlSeconds: config.idempotencyTtlSeconds,
      apiKeyLastUsedIntervalSeconds: config.apiKeyLastUsedIntervalSeconds,
      keyring,
      rateLimits: config.rateLimits,
      rateLimitTimeoutMs: config.rateLimitTimeoutMs,
      quotas: config.quotas,
      disabledWriteGroups: config.disabledWriteGroups,
      evidence: evidenceStore!,
      evidenceLog: evidenceLog!,
      destinationHttpsOnly: config.destinationHttpsOnly,
      maxFanout: config.maxFanout,
      refusalOfDestination: (destinationUrl) => refusalOfDestination(destinationUrl, { allow: config.destinationAllowedNetworks, own }),
      ...(transformer ? { transformer } : {}),
      operations: {
        admin,
        redis,
        redisPrefix: config.topicPrefix,
        clickhouse,
        database: config.clickhouseDatabase,
        topics,
        topicSpecs: specs,
        groupPrefix: runnerDeps.groupPrefix,
        store,
        evidence: evidenceStore!,
        evidenceLog: evidenceLog!,
        signer: evidenceSigner,
        breakers: board,
        breakerResetMs: config.breaker.resetTimeoutMs,
        thresholds: config.proofs,
        allow: config.destinationAllowedNetworks,
        deliveryAgent: agent,
        httpsOnly: config.destinationHttpsOnly,
        health: probe,
      },
    };
    if (services && has('api')) startReplayJobs({ store, matches: new ReplayMatches(services.clickhouse, config.clickhouseDatabase), replay: services.replay, redis, prefix: config.topicPrefix, ratePerS: config.replayRatePerS, maxTries: config.replayMaxTries, log, operational }, cleanups);
    connections.ready = true;
    log.info('service ready', { url, stages: config.stages, data_dir: config.dataDir });

    return { url, topics, store, clickhouse, kafka, demoKey, evidenceLog, apiServices: services, stop: stopAll };
  } catch (err) {
    log.error('start-up failed; stopping what was started', { error: errorMessage(err) });
    await stopAll();
    throw err;
  }
}
