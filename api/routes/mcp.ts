import express, { type RequestHandler, type Router } from 'express';
import type { ClickHouseClient } from '@clickhouse/client';
import { AppError } from '../../core/errors';
import { ID_PREFIX } from '../../core/ids';
import type { ApiKey } from '../../core/model';
import type { EvidenceStore } from '../../platform/evidence/store';
import type { ConfigStore } from '../../platform/config-store/config-store';
import { isoFromClickHouse } from '../../platform/clickhouse/time';
import { authOf, requireResourceOf, requireScope } from '../auth';
import type { Operations } from '../mcp/checks';
import type { ListedTool } from '../mcp/server';
import { checkpointBody, deliveryEvidence, integerParam } from './evidence';
import { attemptsOf, deliveryBody } from './deliveries';
import type { DeliveryRow } from '../../platform/clickhouse/deliveries-list';
import { readLogs } from './logs';

export interface McpRoutesDeps {
  clickhouse: ClickHouseClient;
  database: string;
  evidence: EvidenceStore;
  operations: Operations;
  store: ConfigStore;
  tools: () => ListedTool[];
  disabledWriteGroups: ReadonlySet<string>;
  /** POST /v1/mcp: the MCP transport. */
  mcp: RequestHandler;
}

/** The evidence surface's routes, with the scope each needs (null: any valid key). */
export const MCP_ROUTES = [
  { method: 'GET', path: '/v1/mcp/health', scope: null, public: true, description: 'Service health with build and version metadata; no key needed.' },
  { method: 'GET', path: '/v1/mcp/endpoints', scope: null, public: false, description: 'These endpoints and the MCP tools, with their scopes.' },
  { method: 'GET', path: '/v1/mcp/evidence/{id}', scope: 'read:evidence', public: false, description: 'Evidence by delivery, event, destination or ingester (endpoint) id.' },
  { method: 'GET', path: '/v1/mcp/deliveries/{id}/status', scope: 'read:deliveries', public: false, description: 'Status and outcome of a delivery, with its transitions and evidence status.' },
  { method: 'GET', path: '/v1/mcp/planes', scope: 'read:operations', public: false, description: 'The operational planes, each with its status and the signals behind it.' },
  { method: 'GET', path: '/v1/mcp/logs/{id}', scope: 'read:logs', public: false, description: 'Log lines that name a resource.' },
  { method: 'POST', path: '/v1/mcp', scope: null, public: false, description: 'The MCP endpoint (Streamable HTTP, JSON answers); each tool needs its own scope.' },
] as const;

/** Recent attempts shown for an event, destination or ingester. */
const RECENT_ATTEMPTS = 50;

/** An attempt with its leaf, when it has one. */
interface AttemptRow extends Omit<DeliveryRow, 'error_message' | 'body_sha256'> {
  leaf_index: string | null;
  leaf_hash: string | null;
}

export function mcpRouter(deps: McpRoutesDeps): Router {
  const router = express.Router();
  router.post('/', deps.mcp);

  router.get('/endpoints', (_req, res) => {
    res.json({
      endpoints: MCP_ROUTES.map((r) => ({ method: r.method, path: r.path, scope: r.scope, authentication: r.public ? 'none' : 'bearer', description: r.description })),
      mcp: {
        path: '/v1/mcp',
        transport: 'streamable-http',
        tools: deps.tools().map((t) => ({ name: t.spec.name, title: t.spec.title, group: t.spec.group, scope: t.spec.scope, enabled: !deps.disabledWriteGroups.has(t.spec.group) })),
      },
    });
  });

  router.get('/planes', requireScope('read:operations'), async (_req, res) => {
    const { planes, measured_at } = await deps.operations.planes(authOf(res).tenant_id);
    const status = planes.some((p) => p.status === 'fail') ? 'fail' : planes.some((p) => p.status === 'unknown') ? 'unknown' : 'pass';
    res.setHeader('cache-control', 'no-store').json({ status, planes, measured_at });
  });

  router.get('/deliveries/:deliveryId/status', requireScope('read:deliveries'), async (req, res) => {
    res.json(await deliveryStatus(deps, authOf(res), String(req.params.deliveryId)));
  });

  router.get('/evidence/:id', requireScope('read:evidence'), async (req, res) => {
    const key = authOf(res);
    const id = String(req.params.id);
    const kind = kindOf(id);
    if (kind === 'delivery') {
      const evidence = await deliveryEvidence(deps, key, id, { attempt: integerParam(req.query.attempt, 'attempt', 1), treeSize: integerParam(req.query.tree_size, 'tree_size', 1) });
      res.json({ id, kind, delivery_evidence: evidence });
      return;
    }
    res.json(await resourceEvidence(deps, key, id, kind));
  });

  router.get('/logs/:id', requireScope('read:logs'), async (req, res) => {
    res.json(await readLogs(deps.clickhouse, deps.database, authOf(res), req.query, String(req.params.id)));
  });

  return router;
}

type EvidenceKind = 'delivery' | 'event' | 'destination' | 'ingester';

function kindOf(id: string): EvidenceKind {
  const prefix = id.split('_')[0];
  const kinds: Record<string, EvidenceKind> = { [ID_PREFIX.delivery]: 'delivery', [ID_PREFIX.event]: 'event', [ID_PREFIX.destination]: 'destination', [ID_PREFIX.ingester]: 'ingester' };
  const kind = prefix === undefined ? undefined : kinds[prefix];
  if (!kind || !/^[a-z]{3}_[0-9a-z]{26}$/.test(id)) {
    throw new AppError('validation-error', 'id must be a delivery (dlv_), event (evt_), destination (dst_) or ingester (ing_) id', { errors: [{ field: 'id', message: 'is not a delivery, event, destination or ingester id' }] });
  }
  return kind;
}

/** An event's, destination's or ingester's recent delivery attempts with the evidence status of each. */
async function resourceEvidence(deps: McpRoutesDeps, key: ApiKey, id: string, kind: Exclude<EvidenceKind, 'delivery'>) {
  const { clickhouse, database } = deps;
  if (kind !== 'event') requireResourceOf(key, id);
  const where = ['d.tenant_id = {tenant:String}'];
  if (kind === 'event') where.push('d.event_id = {id:String}');
  if (kind === 'destination') where.push('d.destination_id = {id:String}');
  if (kind === 'ingester') where.push(`d.event_id IN (SELECT event_id FROM ${database}.events WHERE tenant_id = {tenant:String} AND ingester_id = {id:String})`);
  const params: Record<string, unknown> = { tenant: key.tenant_id, id, limit: RECENT_ATTEMPTS };
  if (key.resource_ids) {
    where.push('d.destination_id IN {resources:Array(String)}');
    params.resources = key.resource_ids;
  }
  const [rs, counts, checkpoint] = await Promise.all([
    clickhouse.query({
      query: `SELECT d.delivery_id AS delivery_id, d.attempt_number AS attempt_number, d.event_id AS event_id, d.destination_id AS destination_id, d.status AS status,
                     d.response_code AS response_code, toString(d.attempted_at) AS attempted_at_text, l.leaf_index AS leaf_index, l.leaf_hash AS leaf_hash
              FROM (SELECT * FROM ${database}.deliveries FINAL) AS d
              LEFT JOIN (SELECT tenant_id, delivery_id, attempt_number, toNullable(leaf_index) AS leaf_index, toNullable(leaf_hash) AS leaf_hash FROM ${database}.evidence_leaves FINAL WHERE tenant_id = {tenant:String}) AS l
                ON l.tenant_id = d.tenant_id AND l.delivery_id = d.delivery_id AND l.attempt_number = d.attempt_number
              WHERE ${where.join(' AND ')}
              ORDER BY d.attempted_at DESC, d.delivery_id DESC, d.attempt_number DESC LIMIT {limit:UInt32}`,
      query_params: params,
      format: 'JSONEachRow',
      clickhouse_settings: { join_use_nulls: 1 },
    }),
    clickhouse.query({
      query: `SELECT count() AS attempts, uniqExact(d.delivery_id) AS deliveries FROM ${database}.deliveries AS d WHERE ${where.join(' AND ')}`,
      query_params: params,
      format: 'JSONEachRow',
    }),
    deps.evidence.checkpoint(),
  ]);
  const rows = await rs.json<AttemptRow>();
  const [total] = await counts.json<{ attempts: string; deliveries: string }>();
  if (rows.length === 0) {
    // a resource with no attempt yet still exists when it is configured (or, for an event, received)
    const known = kind === 'event' ? await eventExists(deps, key.tenant_id, id) : kind === 'destination' ? deps.store.get('destination', key.tenant_id, id) !== undefined : deps.store.get('ingester', key.tenant_id, id) !== undefined;
    if (!known) throw new AppError('not-found', `${kind} ${id} does not exist`);
  }
  const size = checkpoint?.tree_size ?? 0;
  const attempts = rows.map((r) => {
    const index = r.leaf_index === null ? null : Number(r.leaf_index);
    return {
      delivery_id: r.delivery_id,
      attempt_number: r.attempt_number,
      event_id: r.event_id,
      destination_id: r.destination_id,
      status: r.status,
      response_code: r.response_code,
      attempted_at: isoFromClickHouse(r.attempted_at_text),
      evidence_status: index !== null && index < size ? ('confirmed' as const) : ('pending' as const),
      leaf_index: index,
      leaf_hash: r.leaf_hash,
    };
  });
  return {
    id,
    kind,
    summary: { deliveries: Number(total?.deliveries ?? 0), attempts: Number(total?.attempts ?? 0), shown: attempts.length, confirmed: attempts.filter((a) => a.evidence_status === 'confirmed').length, pending: attempts.filter((a) => a.evidence_status === 'pending').length },
    attempts,
    checkpoint: checkpoint ? checkpointBody(checkpoint) : null,
  };
}

async function eventExists(deps: McpRoutesDeps, tenantId: string, eventId: string): Promise<boolean> {
  const rs = await deps.clickhouse.query({ query: `SELECT 1 FROM ${deps.database}.events WHERE tenant_id = {tenant:String} AND event_id = {id:String} LIMIT 1`, query_params: { tenant: tenantId, id: eventId }, format: 'JSONEachRow' });
  return (await rs.json()).length > 0;
}

/** A delivery's status and outcome: the latest attempt, every attempt, its transitions and its evidence status. */
async function deliveryStatus(deps: McpRoutesDeps, key: ApiKey, deliveryId: string) {
  const rows = await attemptsOf(deps.clickhouse, deps.database, key, deliveryId);
  const delivery = deliveryBody(rows);
  const nextText = rows[rows.length - 1]!.next_attempt_at_text;
  const [rs, leaf, checkpoint] = await Promise.all([
    deps.clickhouse.query({
      query: `SELECT state, toString(at) AS at_text, reason FROM ${deps.database}.event_transitions FINAL
              WHERE tenant_id = {tenant:String} AND event_id = {event:String} AND (delivery_id = {id:String} OR delivery_id = '')
              ORDER BY at, state`,
      query_params: { tenant: key.tenant_id, event: delivery.event_id, id: deliveryId },
      format: 'JSONEachRow',
    }),
    deps.evidence.leaf(key.tenant_id, deliveryId, delivery.attempt_number),
    deps.evidence.checkpoint(),
  ]);
  const transitions = (await rs.json<{ state: string; at_text: string; reason: string | null }>()).map((t) => ({ state: t.state, at: isoFromClickHouse(t.at_text), reason: t.reason }));
  const sealed = leaf !== null && checkpoint !== null && checkpoint.tree_size > leaf.leaf_index;
  const outcome = delivery.status === 'delivered' ? 'delivered' : delivery.status === 'failed' ? 'failed' : 'in_flight';
  return {
    delivery_id: delivery.id,
    event_id: delivery.event_id,
    destination_id: delivery.destination_id,
    status: delivery.status,
    outcome,
    final: outcome !== 'in_flight',
    attempts: delivery.attempts.length,
    last_attempt: delivery.attempts[delivery.attempts.length - 1],
    next_attempt_at: outcome === 'in_flight' && nextText ? isoFromClickHouse(nextText) : null,
    transitions,
    evidence: { status: sealed ? 'confirmed' : 'pending', attempt_number: delivery.attempt_number, leaf_index: leaf?.leaf_index ?? null, tree_size: sealed ? checkpoint.tree_size : null },
  };
}
