import express, { type Express, type NextFunction, type Request, type Response, type Router } from 'express';
import type { ClickHouseClient } from '@clickhouse/client';
import { AppError } from '../core/errors';
import { jsonDepth } from '../core/json-depth';
import type { Logger } from '../core/log';
import type { ConfigStore } from '../platform/config-store/config-store';
import { authenticate, requireTenant, requireTenantOrOperator } from './auth';
import type { NameClaims } from './ports';
import { problemHandler } from './problem';
import { requestContext } from './request-log';
import { openApiDocument } from './openapi';
import { idempotency } from './idempotency';
import type { Keyring } from '../core/secrets/keyring';
import type { ApiKey } from '../core/model';
import type { Quotas } from '../core/quotas';
import { rateLimit } from './rate-limit';
import { templatesOfOpenApi } from './route-templates';
import type { RateLimits } from '../core/rate-limits';
import type { Redis } from 'ioredis';
import { deliveriesRouter } from './routes/deliveries';
import { destinationsRouter } from './routes/destinations';
import { destinationChangeDepsOf, destinationChangesRouter } from './routes/destination-changes';
import { healthRouter, type BuildInfo, type HealthProbe } from './routes/health';
import { metricsRouter } from './routes/metrics';
import { ingestersRouter } from './routes/ingesters';
import { eventsRouter } from './routes/events';
import { flowsRouter } from './routes/flows';
import { savedPayloadsRouter } from './routes/saved-payloads';
import { logsRouter } from './routes/logs';
import type { ReplayDeps } from '../platform/replay/replay';
import type { EvidenceStore } from '../platform/evidence/store';
import { evidenceLogRouter, evidenceRouter, type EvidenceLogInfo } from './routes/evidence';
import { Operations, type OperationsDeps } from './mcp/checks';
import { InProcessApi } from './mcp/probe';
import { mcpHandler, toolCatalogue, type ListedTool } from './mcp/server';
import { mcpRouter } from './routes/mcp';
import { apiKeysRouter } from './routes/api-keys';
import { replaysRouter } from './routes/replays';
import { ReplayMatches } from '../platform/replay/job-matches';
import { eventTypesRouter } from './routes/event-types';
import { KeyUsage } from '../platform/redis/key-usage';
import { statsRouter } from './routes/stats';
import { analyticsRouter } from './routes/analytics';
import { meRouter } from './routes/me';
import { StageLagReader } from '../platform/kafka/stage-lag';
import { uiHandler } from './ui';
import { apiDocsHandler } from './api-docs';
import { deadLettersRouter } from './routes/dead-letters';
import { destinationTransformationRouter } from './routes/destination-transformation';
import { DESTINATION_TYPE_SPECS } from '../core/destination-types';
import type { Transformer } from '../pipeline/deliver/transform/transformer';
import { DeadLetterStore } from '../platform/clickhouse/dead-letters';
import { tenantsRouter } from './routes/tenants';
import { eraseTenant } from '../platform/erasure/erase-tenant';
import { portalExchangeRouter, portalLookup, portalSessionsRouter } from './routes/portal-sessions';
import { PortalSessions } from '../platform/redis/portal-sessions';
import { destinationTestEventsRouter } from './routes/destination-test-events';
import { exportsRouter } from './routes/exports';

/** What the API needs once the service is up. */
export interface ApiServices {
  store: ConfigStore;
  clickhouse: ClickHouseClient;
  clickhouseDatabase: string;
  claims: NameClaims;
  replay: ReplayDeps;
  /** Base of the Hook URLs handed out, known once the server listens. */
  publicBaseUrl: string;
  redis: Redis;
  /** Namespace of this deployment's keys in Redis. */
  redisPrefix: string;
  idempotencyTtlSeconds: number;
  /** A process records a key's last use in Redis at most once per this many seconds. */
  apiKeyLastUsedIntervalSeconds: number;
  /** Seals the answers idempotency keeps in Redis (a create answer may carry a secret). */
  keyring: Keyring;
  rateLimits: RateLimits;
  /** Longest wait for Redis on a request's rate limit (default that of {@link rateLimit}). */
  rateLimitTimeoutMs?: number;
  /** Most objects of each kind a tenant may hold. */
  quotas: Quotas;
  disabledWriteGroups: readonly string[];
  evidence: EvidenceStore;
  evidenceLog: EvidenceLogInfo;
  destinationHttpsOnly: boolean;
  /** Distinct destinations the delivery flows of one ingester may name (MAX_FANOUT). */
  maxFanout: number;
  /** Why a destination URL is refused (SSRF policy, a loop to this service), or null. */
  refusalOfDestination(url: string): Promise<string | null>;
  /** The sandbox that checks and test-runs destinations' transformations; absent, neither can be done here. */
  transformer?: Transformer;
  /** What the live checks of the evidence surface read (the API adds its own probe). */
  operations: Omit<OperationsDeps, 'probe'>;
  /** INGEST_MAX_BODY_BYTES: the largest body any tenant's Hook URLs may take. */
  maxBodyBytes: number;
}

export interface ApiOptions {
  /** Base of problem type URIs; a function, since it may name the port bound at start. */
  errorBase: () => string;
  log: Logger;
  probe: HealthProbe;
  build: BuildInfo;
  /** Resolves the services once start-up has finished; until then routes answer 503. */
  services(): ApiServices | undefined;
  /** Base URL of the server this app is served by, once it listens (probes and tools call it). */
  selfUrl?: () => string | undefined;
  /** Routers mounted before the API's own (the Hook URLs). */
  extraRouters?: () => Router | undefined;
  /** The stages this process runs, shown by the health routes. */
  stages?: readonly string[];
  /** False in a process without the `api` stage: only health (and the Hook URLs, when given) are served. */
  serveApi?: boolean;
  /** METRICS_TOKEN: when set, `/metrics` answers only requests that carry it as a bearer token. */
  metricsToken?: string;
}

/** Deepest JSON nesting a request body may have; deeper bodies would only exhaust the stack. */
export const MAX_JSON_DEPTH = 64;

/** JSON bodies only, and only as application/json (or +json). */
function jsonBody(): express.RequestHandler {
  const parse = express.json({ limit: '1mb', strict: false, type: () => true });
  return (req, res, next) => {
    const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
    if (!hasBody) return next();
    const type = String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/json' && !type.endsWith('+json')) {
      return next(new AppError('unsupported-media-type', 'send the request body as application/json'));
    }
    return parse(req, res, (err?: unknown) => {
      if (err) return next(err);
      if (jsonDepth(req.body, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
        return next(new AppError('validation-error', `the body nests deeper than ${MAX_JSON_DEPTH} levels`, { errors: [{ field: 'body', message: `nests deeper than ${MAX_JSON_DEPTH} levels` }] }));
      }
      return next();
    });
  };
}

export function createApp(options: ApiOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.use(requestContext(options.log));
  app.use(healthRouter(options.probe, options.build, options.stages));
  app.use(metricsRouter(options.metricsToken));

  const whenReady = (build: (s: ApiServices) => Router) => {
    let router: Router | undefined;
    return (req: Request, res: Response, next: NextFunction) => {
      const services = options.services();
      if (!services) return next(new AppError('service-unavailable', 'the service is starting; try again shortly'));
      router ??= build(services);
      return router(req, res, next);
    };
  };

  // probes and MCP tools send requests into this same app, and authenticate through it
  let inProcess: InProcessApi | undefined;
  const inProcessOf = (s: ApiServices) => {
    if (!inProcess) {
      inProcess = new InProcessApi(s.store, options.selfUrl ?? (() => undefined));
    }
    return inProcess;
  };
  // one recorder per process, shared by the tenant routes and the MCP endpoint
  let usage: KeyUsage | undefined;
  const usageOf = (s: ApiServices) => (usage ??= new KeyUsage(s.redis, s.redisPrefix, s.apiKeyLastUsedIntervalSeconds * 1000, options.log));
  /** Records uses of stored keys only; a probe's short-lived in-memory key is no tenant's. */
  const onUse = (s: ApiServices) => (key: ApiKey) => {
    if (s.store.find('api_key', key.id) === key) usageOf(s).record(key.tenant_id, key.id);
  };
  // portal sessions live in Redis: one view per process
  let portal: PortalSessions | undefined;
  const portalOf = (s: ApiServices) => (portal ??= new PortalSessions(s.redis, s.redisPrefix));
  /** What every authenticated route runs first: the disabled write groups, the key, the rate limit, the JSON body, idempotency. */
  const commonOf = (s: ApiServices, auth: express.RequestHandler[]) => [
    disabledGroupsOf(s),
    ...auth,
    // before idempotency, so a 429 is never stored as the answer to a key
    rateLimit({ redis: s.redis, prefix: s.redisPrefix, limits: s.rateLimits, timeoutMs: s.rateLimitTimeoutMs, routes: routesOf(), log: options.log }),
    jsonBody(),
    idempotency({ redis: s.redis, prefix: s.redisPrefix, ttlSeconds: s.idempotencyTtlSeconds, keyring: s.keyring, log: options.log }),
  ];
  let disabledGroups: express.RequestHandler | undefined;
  const disabledGroupsOf = (s: ApiServices) => {
    if (!disabledGroups) {
      const disabled = new Set(s.disabledWriteGroups);
      disabledGroups = (_req, res, next) => {
        res.locals.disabledWriteGroups = disabled;
        next();
      };
    }
    return disabledGroups;
  };
  let tools: ListedTool[] | undefined;
  // rate-limit buckets are keyed by the documented route a request matches, never its raw spelling
  let routes: string[] | undefined;
  const routesOf = () => (routes ??= templatesOfOpenApi(openApiDocument({ errorBase: options.errorBase() }).paths as Record<string, object>));
  const toolsOf = () => (tools ??= toolCatalogue((openApiDocument({ errorBase: options.errorBase() }) as { components: { schemas: Record<string, Record<string, unknown>> } }).components.schemas));

  app.get('/v1/openapi.json', (_req, res) => {
    res.json(openApiDocument({ errorBase: options.errorBase() }));
  });
  app.get('/v1/destination-types', (_req, res) => {
    res.json({ destination_types: Object.values(DESTINATION_TYPE_SPECS) });
  });

  app.use((req, res, next) => {
    const extra = options.extraRouters?.();
    // a sender must not take "starting" for "no such Hook URL": 503 says try again
    const startingHooks = !extra && req.path.startsWith('/v1/hooks/') && (options.stages === undefined || options.stages.includes('ingest'));
    if (!extra) return startingHooks ? next(new AppError('service-unavailable', 'the service is starting; try again shortly', { retry_after_seconds: 1 }, true)) : next();
    return extra(req, res, next);
  });

  if (options.serveApi !== false) mountApi();
  app.use((req, _res, next) => next(new AppError('not-found', options.serveApi === false ? `no route ${req.method} ${req.path}: this process runs ${(options.stages ?? []).join(', ') || 'no stage'}, not the API` : `no route ${req.method} ${req.path}`)));
  app.use(problemHandler(options.errorBase, options.log));
  return app;

  function mountApi(): void {
    // operators' routes: the tenants themselves (the tenant router below serves what is inside one)
    app.use(
      '/v1/tenants',
      whenReady((s) => tenantsRouter(s.store, { maxBodyBytes: s.maxBodyBytes, erase: (id) => eraseTenant({ store: s.store, redis: s.redis, redisPrefix: s.redisPrefix, clickhouse: { client: s.clickhouse, database: s.clickhouseDatabase }, log: options.log }, id), before: commonOf(s, [authenticate(inProcessOf(s).lookup(), onUse(s))]) })),
    );
    // portal sessions: the tenant's keys, or an operator key on its behalf
    app.use(
      '/v1/tenants/:tenantId/portal-sessions',
      whenReady((s) => {
        const sessions = express.Router({ mergeParams: true });
        sessions.use(commonOf(s, [authenticate(inProcessOf(s).lookup(), onUse(s), portalLookup(portalOf(s), s.store)), requireTenantOrOperator((id) => s.store.tenant(id) !== undefined)]));
        sessions.use(portalSessionsRouter(s.store, portalOf(s), { publicBaseUrl: () => s.publicBaseUrl }));
        return sessions;
      }),
    );
    app.use(
      '/v1/portal/session',
      whenReady((s) => {
        const exchange = express.Router();
        exchange.use(jsonBody());
        exchange.use(portalExchangeRouter(s.store, portalOf(s), { secure: () => s.publicBaseUrl.startsWith('https:') }));
        return exchange;
      }),
    );
    app.use(
      '/v1/tenants/:tenantId',
      whenReady((s) => {
        const tenant = express.Router({ mergeParams: true });
        tenant.use(commonOf(s, [authenticate(inProcessOf(s).lookup(), onUse(s), portalLookup(portalOf(s), s.store)), requireTenant]));
        const destinationChanges = destinationChangeDepsOf(s, options.log);
        tenant.use('/destinations', destinationsRouter(s.store, s.claims, { httpsOnly: s.destinationHttpsOnly, refusalOf: s.refusalOfDestination, quotas: s.quotas, changes: destinationChanges.record, ...(destinationChanges.checkTransformation ? { checkTransformation: destinationChanges.checkTransformation } : {}) }));
        tenant.use('/destinations', destinationChangesRouter(destinationChanges));
        tenant.use('/destinations', destinationTransformationRouter(s.store, s.transformer));
        tenant.use('/destinations', destinationTestEventsRouter(s.store, s.replay));
        tenant.use('/ingesters', ingestersRouter(s.store, s.publicBaseUrl, s.maxFanout, s.quotas));
        tenant.use('/deliveries', deliveriesRouter(s.clickhouse, s.clickhouseDatabase));
        tenant.use('/events', eventsRouter(s.clickhouse, s.clickhouseDatabase, s.store, s.replay));
        tenant.use('/dead-letters', deadLettersRouter(new DeadLetterStore(s.clickhouse, s.clickhouseDatabase), s.replay));
        tenant.use('/delivery-flows', flowsRouter(s.store, s.maxFanout, s.quotas));
        tenant.use('/saved-payloads', savedPayloadsRouter(s.store, s.quotas));
        tenant.use('/api-keys', apiKeysRouter(s.store, usageOf(s), s.quotas));
        tenant.use('/replays', replaysRouter(s.store, new ReplayMatches(s.clickhouse, s.clickhouseDatabase), s.redis, s.redisPrefix));
        tenant.use('/event-types', eventTypesRouter(s.store, s.claims, s.quotas));
        tenant.use('/logs', logsRouter(s.clickhouse, s.clickhouseDatabase));
        tenant.use('/exports', exportsRouter(s.clickhouse, s.clickhouseDatabase, options.log));
        tenant.use('/evidence', evidenceRouter(s.evidence, s.clickhouse, s.clickhouseDatabase));
        tenant.use('/evidence-log', evidenceLogRouter(s.evidence, s.evidenceLog));
        const lag = new StageLagReader(s.operations.admin, s.operations.topics, s.operations.groupPrefix);
        tenant.use('/stats', statsRouter({ clickhouse: s.clickhouse, database: s.clickhouseDatabase, store: s.store, lag, breakers: s.operations.breakers, log: options.log }));
        tenant.use('/analytics', analyticsRouter(s.clickhouse, s.clickhouseDatabase));
        return tenant;
      }),
    );

    app.use(
      '/v1/mcp',
      whenReady((s) => {
        const api = inProcessOf(s);
        const operations = new Operations({ ...s.operations, probe: api });
        const disabled = new Set<string>(s.disabledWriteGroups);
        const mcp = express.Router();
        mcp.use(authenticate(api.lookup(), onUse(s)));
        mcp.use(rateLimit({ redis: s.redis, prefix: s.redisPrefix, limits: s.rateLimits, timeoutMs: s.rateLimitTimeoutMs, routes: routesOf(), log: options.log }));
        mcp.use(jsonBody());
        const transport = mcpHandler({ deps: { operations, api, evidence: s.evidence, evidenceLog: s.evidenceLog }, tools: toolsOf, disabledWriteGroups: disabled, errorBase: options.errorBase, log: options.log });
        mcp.use(mcpRouter({ clickhouse: s.clickhouse, database: s.clickhouseDatabase, evidence: s.evidence, store: s.store, operations, tools: toolsOf, disabledWriteGroups: disabled, mcp: transport }));
        // stateless Streamable HTTP: no server-sent event stream to open, no session to end
        mcp.all('/', (_req, res, next) => {
          res.setHeader('allow', 'POST');
          next(new AppError('method-not-allowed', 'the MCP endpoint takes POST only (stateless Streamable HTTP)'));
        });
        return mcp;
      }),
    );

    app.use(
      '/v1/me',
      whenReady((s) => {
        const me = express.Router();
        me.use(authenticate(inProcessOf(s).lookup(), onUse(s), portalLookup(portalOf(s), s.store)));
        me.use(rateLimit({ redis: s.redis, prefix: s.redisPrefix, limits: s.rateLimits, timeoutMs: s.rateLimitTimeoutMs, routes: routesOf(), log: options.log }));
        me.use(jsonBody());
        me.use(meRouter((id) => s.store.tenant(id)));
        return me;
      }),
    );

    // the dashboard: static files, the API calls it makes go through the routes above
    // a portal link names its tenant (?tenant=): the page may be framed by that tenant's allowed origins
    app.use('/ui', uiHandler(undefined, (tenantId) => options.services()?.store.tenant(tenantId)?.portal?.frame_ancestors ?? []));
    // the API reference: GET /v1/openapi.json rendered by Redoc
    app.use('/docs', apiDocsHandler());
  }
}
