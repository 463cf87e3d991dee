import type { ApiKey } from '../../core/model';
import { NON_CLAIMS } from '../../core/non-claims';
import { RUNTIME_PROOFS, TRUST_PROOFS } from '../../core/proof-catalogue';
import type { Scope } from '../../core/scopes';
import { parseCheckpoint, splitNote } from '../../core/signed-note';
import type { EvidenceStore } from '../../platform/evidence/store';
import { checkpointPage, type EvidenceLogInfo } from '../routes/evidence';
import type { Operations, ProbeAnswer } from './checks';
import type { InProcessApi } from './probe';
import { eventTypeTools } from './event-type-tools';
import { dashboardTools } from './dashboard-tools';
import { deadLetterTools } from './dead-letter-tools';
import { exportTools } from './export-tools';
import { analyticsTools } from './analytics-tools';
import { tenantTools } from './tenant-tools';

type Json = Record<string, unknown>;

/** What a tool runs with: the caller's key, its Authorization header, the validated arguments. */
export interface ToolContext {
  key: ApiKey;
  authorization: string;
  args: Json;
}

export interface ToolDeps {
  operations: Operations;
  api: InProcessApi;
  evidence: EvidenceStore;
  evidenceLog: EvidenceLogInfo;
}

export interface ToolSpec {
  name: string;
  title: string;
  description: string;
  /** The scope a key needs to call the tool; null: any valid key. */
  scope: Scope | null;
  /** `read`, or the write group (write scope) that configuration can disable; `operator` for the operators' writes. */
  group: 'read' | Scope | 'operator';
  /** Who may call it: tenant keys (default), operator keys only, or both (an operator on a tenant's behalf). */
  audience?: 'tenant' | 'operator' | 'both';
  /** Components of the OpenAPI document the input is built from (body schema) and the output is. */
  input: { body?: string; properties?: Json; required?: string[] };
  output: string;
  annotations: { readOnlyHint: boolean; destructiveHint?: boolean; idempotentHint?: boolean };
  run(deps: ToolDeps, ctx: ToolContext): Promise<Json>;
}

const id = (what: string, pattern?: string): Json => ({ type: 'string', minLength: 1, maxLength: 64, ...(pattern ? { pattern } : {}), description: what });
const idempotencyKey: Json = { type: 'string', minLength: 1, maxLength: 255, description: 'Sent as the Idempotency-Key header of the write: the same key and arguments give the first answer again and change nothing twice.' };
const limit: Json = { type: 'integer', minimum: 1, maximum: 200, description: 'Items per page (default 50).' };
const cursor: Json = { type: 'string', minLength: 1, description: 'The next_cursor of the previous page.' };
const enc = encodeURIComponent;
/** The search filters of list_deliveries: the query parameters of the deliveries list. */
const SEARCH_INPUT: Json = {
  destination_id: { type: 'string', minLength: 1, maxLength: 200, description: 'Only attempts to this destination.' },
  event_type: { type: 'string', minLength: 1, maxLength: 200, description: 'Only attempts of events of this type.' },
  from: { type: 'string', format: 'date-time', description: 'Attempts at or after this time (RFC 3339).' },
  to: { type: 'string', format: 'date-time', description: 'Attempts before this time (RFC 3339).' },
  response_code: { type: 'string', pattern: '^[1-5]([0-9]{2}|xx|XX)$', description: 'An HTTP status (503) or class (5xx).' },
  q: { type: 'string', minLength: 1, maxLength: 200, description: 'Text in the response body start or the request body, ignoring case.' },
};

/** The JSON body of a 2xx answer, or the problem of another as a tool error. */
function answerOf(answer: ProbeAnswer): Json {
  if (answer.status >= 200 && answer.status < 300) return (answer.body ?? {}) as Json;
  throw new ToolProblem(answer.status, answer.body as Json);
}

/** A REST answer that is not a success: the tool result is an error carrying its problem document. */
export class ToolProblem extends Error {
  constructor(
    readonly status: number,
    readonly problem: Json,
  ) {
    super(typeof problem?.detail === 'string' ? problem.detail : `answered ${status}`);
  }
}

/** A call of a REST route as the caller, with the caller's key (its scopes, limits and rate limits apply). */
async function rest(deps: ToolDeps, ctx: ToolContext, method: string, path: string, options: { query?: Json; body?: Json; idempotent?: boolean; headers?: Record<string, string> } = {}): Promise<Json> {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined && v !== null) qs.set(k, String(v));
  const headers: Record<string, string> = { ...(options.headers ?? {}), authorization: ctx.authorization };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (typeof ctx.args.idempotency_key === 'string') headers['idempotency-key'] = ctx.args.idempotency_key;
  const url = `${path}${qs.size > 0 ? `?${qs}` : ''}`;
  return answerOf(await deps.api.send({ method, url, headers, body: options.body }));
}

const tenantPath = (ctx: ToolContext, rest: string) => `/v1/tenants/${enc(ctx.key.tenant_id)}${rest}`;
/** The arguments of a write without the ones that are not body members. */
const bodyOf = (args: Json, ...drop: string[]): Json => Object.fromEntries(Object.entries(args).filter(([k]) => k !== 'idempotency_key' && !drop.includes(k)));

/** The run of a delete tool: DELETE `<collection>/<args[arg]>` as the caller, answered as `Deleted`. */
const deleteRun = (collection: string, arg: string) => async (d: ToolDeps, c: ToolContext): Promise<Json> => {
  const id = String(c.args[arg]);
  await rest(d, c, 'DELETE', tenantPath(c, `${collection}/${enc(id)}`));
  return { deleted: true, id };
};

/** A stored checkpoint as an integrity receipt: its origin and its (first) signature. */
function receiptOf(signedNote: string) {
  const { text, signatures } = splitNote(signedNote);
  const s = signatures[0];
  return { origin: parseCheckpoint(text).origin, signature: s ? { key_name: s.name, key_id: s.keyId.toString('hex'), algorithm: 'ed25519', signature: s.bytes.toString('base64') } : null };
}

function proofIds(ids: readonly { id: string }[]): Json {
  return { type: 'array', items: { type: 'string', enum: ids.map((p) => p.id) }, uniqueItems: true, description: 'Only these proofs (default: all).' };
}
/** Replay jobs (as /v1/tenants/{tenant_id}/replays). */
const REPLAY_TOOLS: ToolSpec[] = [
  {
    name: 'start_replay', title: 'Start a replay job', group: 'write:replays', scope: 'write:replays',
    description: 'Delivers again, in the background, every delivery whose latest attempt falls in [from, to) and ended (delivered, or failed for good), optionally of one destination, final status or event type; each as a new delivery linked to the original (replay_of). `to` may not be later than now. Answers the running job.',
    input: { body: 'ReplayCreate', properties: { idempotency_key: idempotencyKey } }, output: 'ReplayJob', annotations: { readOnlyHint: false, destructiveHint: false },
    run: (d, c) => rest(d, c, 'POST', tenantPath(c, '/replays'), { body: bodyOf(c.args) }),
  },
  {
    name: 'get_replay', title: 'Replay job progress', group: 'read', scope: 'read:replays',
    description: 'One replay job: matched, replayed, delivered, failed, its status and, when it failed, why (`error`) (as GET /v1/tenants/{tenant_id}/replays/{replay_id}).',
    input: { properties: { replay_id: id('The replay job (rpl_...).') }, required: ['replay_id'] }, output: 'ReplayJob', annotations: { readOnlyHint: true },
    run: (d, c) => rest(d, c, 'GET', tenantPath(c, `/replays/${enc(String(c.args.replay_id))}`)),
  },
  {
    name: 'list_replays', title: 'Replay jobs of the tenant', group: 'read', scope: 'read:replays',
    description: 'The tenant\'s replay jobs, oldest first, finished ones included (as GET /v1/tenants/{tenant_id}/replays).',
    input: { properties: { limit, cursor } }, output: 'ReplayJobList', annotations: { readOnlyHint: true },
    run: (d, c) => rest(d, c, 'GET', tenantPath(c, '/replays'), { query: { limit: c.args.limit, cursor: c.args.cursor } }),
  },
  {
    name: 'cancel_replay', title: 'Cancel a replay job', group: 'write:replays', scope: 'write:replays',
    description: 'Stops a running replay job from queuing more deliveries; those already queued still run, and its counts stay as they were at the cancel. A finished job is refused (409).',
    input: { properties: { replay_id: id('The replay job (rpl_...).'), idempotency_key: idempotencyKey }, required: ['replay_id'] }, output: 'ReplayJob', annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
    run: (d, c) => rest(d, c, 'DELETE', tenantPath(c, `/replays/${enc(String(c.args.replay_id))}`)),
  },
];


const ifMatch: Json = { type: 'string', minLength: 1, description: 'Sent as the If-Match header: the ETag the change is based on (`"<n>"`, or `*`); another current version refuses the change (412).' };
const destinationId = id('The destination (dst_...).');
/** PATCH of one destination as the caller, with If-Match when given. */
const patchDestination = (d: ToolDeps, c: ToolContext, body: Json) =>
  rest(d, c, 'PATCH', tenantPath(c, `/destinations/${enc(String(c.args.destination_id))}`), { body, headers: typeof c.args.if_match === 'string' ? { 'if-match': c.args.if_match } : {} });

/** Reading destinations and the changes operators make to them, through the REST routes. */
const DESTINATION_CHANGE_TOOLS: ToolSpec[] = [
  {
    name: 'list_destinations', title: 'Destinations of the tenant', group: 'read', scope: 'read:destinations',
    description: 'The tenant\'s destinations, oldest first, with status, subscription and masked credentials; never a signing secret (as GET /v1/tenants/{tenant_id}/destinations).',
    input: { properties: { limit, cursor } }, output: 'DestinationList', annotations: { readOnlyHint: true },
    run: (d, c) => rest(d, c, 'GET', tenantPath(c, '/destinations'), { query: { limit: c.args.limit, cursor: c.args.cursor } }),
  },
  {
    name: 'get_destination', title: 'A destination', group: 'read', scope: 'read:destinations',
    description: 'One destination as GET /v1/tenants/{tenant_id}/destinations/{destination_id} shows it.',
    input: { properties: { destination_id: destinationId }, required: ['destination_id'] }, output: 'Destination', annotations: { readOnlyHint: true },
    run: (d, c) => rest(d, c, 'GET', tenantPath(c, `/destinations/${enc(String(c.args.destination_id))}`)),
  },
  {
    name: 'update_destination', title: 'Change a destination', group: 'write:destinations', scope: 'write:destinations',
    description: 'A JSON merge patch of the destination: the members given replace the stored ones, null resets one to its default, the rest stay (name, type, url, config, transformation, retry_schedule_ms, auth, enabled, rate_limit_per_s, ordered, event_types, filter).',
    input: { body: 'DestinationPatch', properties: { destination_id: destinationId, if_match: ifMatch, idempotency_key: idempotencyKey }, required: ['destination_id'] }, output: 'Destination', annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    run: (d, c) => patchDestination(d, c, bodyOf(c.args, 'destination_id', 'if_match')),
  },
  {
    name: 'pause_destination', title: 'Pause a destination', group: 'write:destinations', scope: 'write:destinations',
    description: 'Switches the destination off (status paused, enabled false) until it is resumed.',
    input: { properties: { destination_id: destinationId, if_match: ifMatch, idempotency_key: idempotencyKey }, required: ['destination_id'] }, output: 'Destination', annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    run: (d, c) => patchDestination(d, c, { enabled: false }),
  },
  {
    name: 'resume_destination', title: 'Resume a destination', group: 'write:destinations', scope: 'write:destinations',
    description: 'Switches the destination on again (status active), also one the service disabled after 410 Gone.',
    input: { properties: { destination_id: destinationId, if_match: ifMatch, idempotency_key: idempotencyKey }, required: ['destination_id'] }, output: 'Destination', annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    run: (d, c) => patchDestination(d, c, { enabled: true }),
  },
  {
    name: 'rotate_destination_secret', title: 'Rotate a destination\'s signing secret', group: 'write:destinations', scope: 'write:destinations',
    description: 'A new signing secret, shown in this answer only; the old one keeps signing beside it for overlap_seconds (default one day).',
    input: { body: 'SecretRotation', properties: { destination_id: destinationId, if_match: ifMatch, idempotency_key: idempotencyKey }, required: ['destination_id'] }, output: 'SecretRotated', annotations: { readOnlyHint: false, destructiveHint: true },
    run: (d, c) => rest(d, c, 'POST', tenantPath(c, `/destinations/${enc(String(c.args.destination_id))}/rotate-secret`), { body: bodyOf(c.args, 'destination_id', 'if_match'), headers: typeof c.args.if_match === 'string' ? { 'if-match': c.args.if_match } : {} }),
  },
  {
    name: 'list_destination_types', title: 'Destination types and their config schemas', group: 'read', scope: null,
    description: 'Every destination type (webhook, kafka, amqp, nats, mqtt) with its URL schemes, the JSON Schema of its config, the auth types it takes and what counts as delivered (as GET /v1/destination-types).',
    input: { properties: {} }, output: 'DestinationTypeList', annotations: { readOnlyHint: true },
    run: (d, c) => rest(d, c, 'GET', '/v1/destination-types'),
  },
  {
    name: 'test_destination_transformation', title: 'Run a destination\'s transformation on a payload', group: 'write:destinations', scope: 'write:destinations',
    description: 'Runs the destination\'s transformation (or the `transformation` given, without saving it) in the sandbox on a saved payload (`payload_id`) or a given `body`, and shows what an attempt would send (body, its SHA-256, headers, method, path), that it would drop the delivery, or why it would fail. Nothing is sent.',
    input: { body: 'TransformationTest', properties: { destination_id: destinationId, idempotency_key: idempotencyKey }, required: ['destination_id'] }, output: 'TransformationTestResult', annotations: { readOnlyHint: true },
    run: (d, c) => rest(d, c, 'POST', tenantPath(c, `/destinations/${enc(String(c.args.destination_id))}/transformation/test`), { body: bodyOf(c.args, 'destination_id') }),
  },
  {
    name: 'list_destination_changes', title: 'History of a destination', group: 'read', scope: 'read:destinations',
    description: 'Every change of the destination, newest first: who (an API key, or the delivery stage when a 410 Gone disabled it, with the delivery as cause), when, the action and each member before and after; credentials masked, signing secrets never.',
    input: { properties: { destination_id: destinationId, limit, cursor }, required: ['destination_id'] }, output: 'DestinationChangeList', annotations: { readOnlyHint: true },
    run: (d, c) => rest(d, c, 'GET', tenantPath(c, `/destinations/${enc(String(c.args.destination_id))}/changes`), { query: { limit: c.args.limit, cursor: c.args.cursor } }),
  },
];

export const TOOLS: ToolSpec[] = [
  {
    name: 'get_capabilities', title: 'Capabilities and their status', group: 'read', scope: 'read:operations',
    description: 'The runtime and trust capabilities of the service, each with the status of the live proofs behind it.',
    input: {}, output: 'Capabilities', annotations: { readOnlyHint: true },
    run: (d, c) => d.operations.capabilities(c.key.tenant_id),
  },
  {
    name: 'get_readiness', title: 'Readiness across domains', group: 'read', scope: 'read:operations',
    description: 'Whether the service is ready, by domain (ingestion, processing, delivery, evidence, query, control), with the failing signals of each and a count of proofs by status.',
    input: {}, output: 'Readiness', annotations: { readOnlyHint: true },
    run: (d, c) => d.operations.readiness(c.key.tenant_id),
  },
  {
    name: 'list_runtime_proofs', title: 'Runtime convergence proofs', group: 'read', scope: 'read:operations',
    description: 'PROOF-001 to PROOF-010, each measured now: id, title, status (pass, fail, unknown), the observed values and when they were measured.',
    input: { properties: { ids: proofIds(RUNTIME_PROOFS) } }, output: 'ProofList', annotations: { readOnlyHint: true },
    run: async (d, c) => proofList(await d.operations.runtimeProofs(c.key.tenant_id), c.args.ids),
  },
  {
    name: 'list_trust_proofs', title: 'Trust lifecycle proofs', group: 'read', scope: 'read:operations',
    description: 'TRUST-001 to TRUST-010, each measured now (several by probing the running API): id, title, status, observed values, time of measurement.',
    input: { properties: { ids: proofIds(TRUST_PROOFS) } }, output: 'ProofList', annotations: { readOnlyHint: true },
    run: async (d, c) => proofList(await d.operations.trustProofs(c.key.tenant_id), c.args.ids),
  },
  {
    name: 'list_non_claims', title: 'What the service does not claim', group: 'read', scope: null,
    description: 'Explicit statements of what the service does not guarantee, by category.',
    input: { properties: { category: { type: 'string', enum: [...new Set(NON_CLAIMS.map((n) => n.category))] } } }, output: 'NonClaimList', annotations: { readOnlyHint: true },
    run: async (_d, c) => ({
      non_claims: NON_CLAIMS.filter((n) => c.args.category === undefined || n.category === c.args.category),
      categories: [...new Set(NON_CLAIMS.map((n) => n.category))],
    }),
  },
  {
    name: 'list_integrity_evidence_refs', title: 'Signed checkpoints of the evidence log', group: 'read', scope: 'read:evidence',
    description: 'Integrity receipts: the signed checkpoints of the evidence log, newest first, with tree size, root hash and the Ed25519 signature of the log key.',
    input: { properties: { limit, cursor } }, output: 'IntegrityRefList', annotations: { readOnlyHint: true },
    run: async (d, c) => {
      const { page, next_cursor } = await checkpointPage(d.evidence, c.args.limit === undefined ? undefined : String(c.args.limit), c.args.cursor);
      return {
        origin: d.evidenceLog.origin,
        verifier_key: d.evidenceLog.verifierKey,
        refs: page.map((r) => ({ tree_size: r.tree_size, root_hash: r.root_hash, ...receiptOf(r.checkpoint), signed_note: r.checkpoint, sealed_at: r.sealed_at })),
        next_cursor,
      };
    },
  },
  {
    name: 'get_planes', title: 'Operational planes', group: 'read', scope: 'read:operations',
    description: 'The ingestion, processing, delivery, evidence, query and control planes, each with its status and the signals behind it (as GET /v1/mcp/planes).',
    input: {}, output: 'Planes', annotations: { readOnlyHint: true },
    run: (d, c) => rest(d, c, 'GET', '/v1/mcp/planes'),
  },
  {
    name: 'get_delivery_status', title: 'Delivery status and outcome', group: 'read', scope: 'read:deliveries',
    description: 'The status and outcome of one delivery: its attempts, state transitions and evidence status (as GET /v1/mcp/deliveries/{id}/status).',
    input: { properties: { delivery_id: id('The delivery (dlv_...).') }, required: ['delivery_id'] }, output: 'DeliveryStatusReport', annotations: { readOnlyHint: true },
    run: (d, c) => rest(d, c, 'GET', `/v1/mcp/deliveries/${enc(String(c.args.delivery_id))}/status`),
  },
  {
    name: 'get_delivery_evidence', title: 'Evidence of a delivery', group: 'read', scope: 'read:evidence',
    description: 'The delivery attempt\'s leaf in the evidence log with its RFC 9162 inclusion proof and signed checkpoint, or pending (as GET /v1/tenants/{tenant_id}/evidence/{delivery_id}).',
    input: { properties: { delivery_id: id('The delivery (dlv_...).'), attempt: { type: 'integer', minimum: 1 }, tree_size: { type: 'integer', minimum: 1 } }, required: ['delivery_id'] },
    output: 'DeliveryEvidence', annotations: { readOnlyHint: true },
    run: (d, c) => rest(d, c, 'GET', tenantPath(c, `/evidence/${enc(String(c.args.delivery_id))}`), { query: { attempt: c.args.attempt, tree_size: c.args.tree_size } }),
  },
  {
    name: 'get_evidence', title: 'Evidence by endpoint or resource', group: 'read', scope: 'read:evidence',
    description: 'Evidence by identifier: a delivery gives its proof; an event, destination or ingester (endpoint) gives its recent delivery attempts with their evidence status (as GET /v1/mcp/evidence/{id}).',
    input: { properties: { id: id('A delivery, event, destination or ingester id.') }, required: ['id'] }, output: 'ResourceEvidence', annotations: { readOnlyHint: true },
    run: (d, c) => rest(d, c, 'GET', `/v1/mcp/evidence/${enc(String(c.args.id))}`),
  },
  {
    name: 'list_resource_logs', title: 'Logs of a resource', group: 'read', scope: 'read:logs',
    description: 'Log lines that name the resource (event, delivery, destination, ingester or correlation id), newest first (as GET /v1/mcp/logs/{id}).',
    input: { properties: { id: id('The resource id.'), level: { type: 'string', enum: ['debug', 'info', 'warn', 'error'] }, limit, cursor }, required: ['id'] }, output: 'LogList', annotations: { readOnlyHint: true },
    run: (d, c) => rest(d, c, 'GET', `/v1/mcp/logs/${enc(String(c.args.id))}`, { query: { level: c.args.level, limit: c.args.limit, cursor: c.args.cursor } }),
  },
  {
    name: 'list_deliveries', title: 'Delivery attempts', group: 'read', scope: 'read:deliveries',
    description: 'Delivery attempts, newest first, each with its event type; searched by status, destination, event type, attempt time (from inclusive, to exclusive), response code or class (503, 5xx) and text in the response body start or the request body (as GET /v1/tenants/{tenant_id}/deliveries). A next_cursor works only with the same filters.',
    input: { properties: { status: { type: 'string', enum: ['delivered', 'retrying', 'failed', 'dropped'] }, ...SEARCH_INPUT, limit, cursor } }, output: 'DeliveryList', annotations: { readOnlyHint: true },
    run: (d, c) => rest(d, c, 'GET', tenantPath(c, '/deliveries'), { query: { status: c.args.status, ...Object.fromEntries(Object.keys(SEARCH_INPUT).map((k) => [k, c.args[k]])), limit: c.args.limit, cursor: c.args.cursor } }),
  },
  {
    name: 'get_consistency_proof', title: 'Consistency proof between checkpoints', group: 'read', scope: 'read:evidence',
    description: 'An RFC 9162 consistency proof from the checkpoint of tree size `from` to that of `to` (default: the newest).',
    input: { properties: { from: { type: 'integer', minimum: 1 }, to: { type: 'integer', minimum: 1 } }, required: ['from'] }, output: 'ConsistencyProof', annotations: { readOnlyHint: true },
    run: (d, c) => rest(d, c, 'GET', tenantPath(c, '/evidence-log/consistency'), { query: { from: c.args.from, to: c.args.to } }),
  },
  // writes: each in the group of its write scope, through the REST route it mirrors
  {
    name: 'create_destination', title: 'Create a destination', group: 'write:destinations', scope: 'write:destinations',
    description: 'Creates a destination (a webhook, or a kafka, amqp, nats or mqtt broker: list_destination_types gives each type\'s config schema); its signing secret is in this answer only.',
    input: { body: 'DestinationCreate', properties: { idempotency_key: idempotencyKey } }, output: 'DestinationCreated', annotations: { readOnlyHint: false, destructiveHint: false },
    run: (d, c) => rest(d, c, 'POST', tenantPath(c, '/destinations'), { body: bodyOf(c.args) }),
  },
  {
    name: 'delete_destination', title: 'Delete a destination', group: 'write:destinations', scope: 'write:destinations',
    description: 'Deletes a destination and takes it out of every delivery flow.',
    input: { properties: { destination_id: id('The destination (dst_...).'), idempotency_key: idempotencyKey }, required: ['destination_id'] }, output: 'Deleted', annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    run: deleteRun('/destinations', 'destination_id'),
  },
  ...DESTINATION_CHANGE_TOOLS,
  {
    name: 'create_ingester', title: 'Create an ingester (endpoint)', group: 'write:ingesters', scope: 'write:ingesters',
    description: 'Creates an ingester with its provider verification, filters and optionally a delivery flow to destinations; the answer has its Hook URL.',
    input: { body: 'IngesterCreate', properties: { idempotency_key: idempotencyKey } }, output: 'Ingester', annotations: { readOnlyHint: false, destructiveHint: false },
    run: (d, c) => rest(d, c, 'POST', tenantPath(c, '/ingesters'), { body: bodyOf(c.args) }),
  },
  {
    name: 'update_ingester', title: 'Update an ingester', group: 'write:ingesters', scope: 'write:ingesters',
    description: 'Replaces the name and, when given, the provider, config, filters, ordered and destinations of an ingester.',
    input: { body: 'IngesterUpdate', properties: { ingester_id: id('The ingester (ing_...).'), idempotency_key: idempotencyKey }, required: ['ingester_id'] }, output: 'Ingester', annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    run: (d, c) => rest(d, c, 'PUT', tenantPath(c, `/ingesters/${enc(String(c.args.ingester_id))}`), { body: bodyOf(c.args, 'ingester_id') }),
  },
  {
    name: 'delete_ingester', title: 'Delete an ingester', group: 'write:ingesters', scope: 'write:ingesters',
    description: 'Deletes an ingester and its delivery flows; its Hook URL answers 404 afterwards.',
    input: { properties: { ingester_id: id('The ingester (ing_...).'), idempotency_key: idempotencyKey }, required: ['ingester_id'] }, output: 'Deleted', annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    run: deleteRun('/ingesters', 'ingester_id'),
  },
  {
    name: 'create_delivery_flow', title: 'Create a delivery flow', group: 'write:flows', scope: 'write:flows',
    description: 'Routes the events of an ingester to destinations.',
    input: { body: 'DeliveryFlowCreate', properties: { idempotency_key: idempotencyKey } }, output: 'DeliveryFlow', annotations: { readOnlyHint: false, destructiveHint: false },
    run: (d, c) => rest(d, c, 'POST', tenantPath(c, '/delivery-flows'), { body: bodyOf(c.args) }),
  },
  {
    name: 'delete_delivery_flow', title: 'Delete a delivery flow', group: 'write:flows', scope: 'write:flows',
    description: 'Deletes a delivery flow.',
    input: { properties: { flow_id: id('The flow (flw_...).'), idempotency_key: idempotencyKey }, required: ['flow_id'] }, output: 'Deleted', annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    run: deleteRun('/delivery-flows', 'flow_id'),
  },
  {
    name: 'retry_event', title: 'Retry the failed deliveries of an event', group: 'write:events', scope: 'write:events',
    description: 'Queues every dead delivery of the event again as a new delivery, each dead delivery once.',
    input: { properties: { event_id: id('The event (evt_...).'), idempotency_key: idempotencyKey }, required: ['event_id'] }, output: 'RetryResult', annotations: { readOnlyHint: false, destructiveHint: false },
    run: (d, c) => rest(d, c, 'POST', tenantPath(c, `/events/${enc(String(c.args.event_id))}/retry`)),
  },
  {
    name: 'list_api_keys', title: 'API keys of the tenant', group: 'read', scope: 'read:keys',
    description: 'The tenant\'s API keys, oldest first, revoked and expired ones included, with status and last use; never a secret (as GET /v1/tenants/{tenant_id}/api-keys).',
    input: { properties: { limit, cursor } }, output: 'ApiKeyList', annotations: { readOnlyHint: true },
    run: (d, c) => rest(d, c, 'GET', tenantPath(c, '/api-keys'), { query: { limit: c.args.limit, cursor: c.args.cursor } }),
  },
  {
    name: 'create_api_key', title: 'Create an API key', group: 'write:keys', scope: 'write:keys',
    description: 'Issues an API key with at most the scopes, resources and lifetime of the calling key; the plain key is in this answer only.',
    input: { body: 'ApiKeyCreate', properties: { idempotency_key: idempotencyKey } }, output: 'ApiKeyCreated', annotations: { readOnlyHint: false, destructiveHint: false },
    run: (d, c) => rest(d, c, 'POST', tenantPath(c, '/api-keys'), { body: bodyOf(c.args) }),
  },
  {
    name: 'revoke_api_key', title: 'Revoke an API key', group: 'write:keys', scope: 'write:keys',
    description: 'Revokes an API key for good: every API process refuses it within about a second; it stays listed with revoked_at. A key may revoke itself.',
    input: { properties: { key_id: id('The API key (key_...).'), idempotency_key: idempotencyKey }, required: ['key_id'] }, output: 'ApiKey', annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    run: (d, c) => rest(d, c, 'POST', tenantPath(c, `/api-keys/${enc(String(c.args.key_id))}/revoke`)),
  },
  {
    name: 'create_saved_payload', title: 'Save a payload', group: 'write:payloads', scope: 'write:payloads',
    description: 'Keeps a named JSON object, e.g. to send test events.',
    input: { body: 'SavedPayloadCreate', properties: { idempotency_key: idempotencyKey } }, output: 'SavedPayload', annotations: { readOnlyHint: false, destructiveHint: false },
    run: (d, c) => rest(d, c, 'POST', tenantPath(c, '/saved-payloads'), { body: bodyOf(c.args) }),
  },
  ...REPLAY_TOOLS,
  ...eventTypeTools({ rest, tenantPath, bodyOf, deleteRun, id, idempotencyKey, limit, cursor }),
  ...dashboardTools({ rest, tenantPath, id }),
  ...deadLetterTools({ rest, tenantPath, id, idempotencyKey, limit, cursor }),
  ...exportTools({ tenantPath, problem: (status, body) => new ToolProblem(status, body as Json) }),
  ...analyticsTools({ rest, tenantPath }),
  ...tenantTools({ rest, tenantPath, bodyOf, id, idempotencyKey, limit, cursor }),
];

function proofList(proofs: Awaited<ReturnType<Operations['runtimeProofs']>>, ids: unknown): Json {
  const wanted = Array.isArray(ids) && ids.length > 0 ? new Set(ids as string[]) : undefined;
  const chosen = wanted ? proofs.filter((p) => wanted.has(p.id)) : proofs;
  const count = (s: string) => chosen.filter((p) => p.status === s).length;
  return { proofs: chosen, summary: { pass: count('pass'), fail: count('fail'), unknown: count('unknown') }, measured_at: new Date().toISOString() };
}

