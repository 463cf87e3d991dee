import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { RUNTIME_PROOFS, TRUST_PROOFS } from '../../core/proof-catalogue';
import { NON_CLAIMS } from '../../core/non-claims';
import { SCOPES } from '../../core/scopes';
import { TOOLS } from '../../api/mcp/tools';
import { startReceiver, type Receiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';
import { waitForStates } from '../support/flow';
import { expectProblem } from '../support/problem';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../api/app';
import { Logger } from '../../core/log';
import { healthProbe } from '../../service/health';
import { buildInfo } from '../../service/service';

/**
 * The MCP endpoint through the SDK's own client over Streamable HTTP: every tool listed, called
 * and its structured result checked against the output schema it advertises; tool groups,
 * scopes and keys as the REST API has them; the /v1/mcp REST routes beside it.
 */

type Json = Record<string, any>;

// the package exports only an `import` condition; its built file is loaded by path (see test/unit/providers.test.ts)
type OctokitWebhooksMethods = typeof import('@octokit/webhooks-methods', { with: { 'resolution-mode': 'import' } });
const { sign } = require(join(__dirname, '../../node_modules/@octokit/webhooks-methods/dist-node/index.js')) as OctokitWebhooksMethods;

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);

async function connect(url: string, key: string | null): Promise<Client> {
  const client = new Client({ name: 'hookline-test', version: '1.0.0' });
  const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/v1/mcp`), { requestInit: { headers } }));
  return client;
}

/** One raw JSON-RPC POST, to see the HTTP answer itself. */
async function rpc(url: string, key: string | null, message: Json): Promise<{ status: number; headers: Headers; body: any }> {
  const res = await fetch(`${url}/v1/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(message),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

describe('MCP endpoint', () => {
  let svc: TestService;
  let receiver: Receiver;
  let client: Client;
  let tools: Tool[];
  const ingesterSecret = 'mcp-github-secret-0123456789';
  let destinationId: string;
  let ingesterId: string;
  let eventId: string;
  let deliveryId: string;
  let flowId: string;
  /** The same service state behind an API configured with write:payloads disabled and https-only destinations. */
  let disabledUrl: string;
  let disabledServer: http.Server;
  /** Tools whose success was checked against their output schema. */
  const succeeded = new Set<string>();
  const base = () => `/v1/tenants/${svc.tenantId}`;

  const call = async (name: string, args: Json = {}) => {
    const result = await client.callTool({ name, arguments: args });
    return result as { isError?: boolean; structuredContent?: Json; content: { type: string; text: string }[] };
  };
  /** Calls a tool that must succeed, and checks its structured result against the tool's own output schema. */
  const ok = async (name: string, args: Json = {}): Promise<Json> => {
    const result = await call(name, args);
    if (result.isError) throw new Error(`${name} failed: ${result.content[0]?.text}`);
    const tool = tools.find((t) => t.name === name)!;
    const validate = ajv.compile(tool.outputSchema!);
    if (!validate(result.structuredContent)) throw new Error(`${name}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(result.structuredContent).slice(0, 2000)}`);
    expect(JSON.parse(result.content[0]!.text)).toEqual(result.structuredContent);
    succeeded.add(name);
    return result.structuredContent as Json;
  };
  const problemOf = (result: { isError?: boolean; content: { text: string }[] }) => {
    expect(result.isError).toBe(true);
    return JSON.parse(result.content[0]!.text) as Json;
  };

  beforeAll(async () => {
    [svc, receiver] = await Promise.all([
      startTestService({ LOG_LEVEL: 'warn', PROOF_GRACE_MS: '2000', RATE_LIMITS: 'default=100000/60s', RETRY_TIERS: '100ms' }),
      startReceiver(),
    ]);
    client = await connect(svc.url, svc.apiKey);
    tools = (await client.listTools()).tools;
    const own = svc.service.apiServices!;
    const services = { ...own, disabledWriteGroups: ['write:payloads' as const], destinationHttpsOnly: true, operations: { ...own.operations, httpsOnly: true } };
    const app = createApp({ errorBase: () => svc.config.errorBase, log: new Logger('error'), probe: healthProbe({}), build: buildInfo(), services: () => services, selfUrl: () => disabledUrl });
    disabledServer = http.createServer(app);
    await new Promise<void>((resolve) => disabledServer.listen(0, '127.0.0.1', () => resolve()));
    disabledUrl = `http://127.0.0.1:${(disabledServer.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    disabledServer?.closeAllConnections();
    await new Promise((resolve) => disabledServer?.close(resolve));
    await client?.close();
    await Promise.all([svc?.stop(), receiver?.close()]);
  });

  it('lists every enabled tool with input and output schemas, and leaves out a disabled write group', async () => {
    const tenants = TOOLS.filter((t) => (t.audience ?? 'tenant') !== 'operator');
    expect(tools.map((t) => t.name).sort()).toEqual(tenants.map((t) => t.name).sort());
    const limited = await connect(disabledUrl, svc.apiKey);
    try {
      const names = (await limited.listTools()).tools.map((t) => t.name).sort();
      expect(names).toEqual(tenants.filter((t) => t.group !== 'write:payloads').map((t) => t.name).sort());
      expect(names).not.toContain('create_saved_payload');
    } finally {
      await limited.close();
    }
    for (const name of ['get_capabilities', 'get_readiness', 'list_runtime_proofs', 'list_trust_proofs', 'list_non_claims', 'list_integrity_evidence_refs']) {
      expect(tools.map((t) => t.name)).toContain(name);
    }
    for (const tool of tools) {
      expect(tool.inputSchema.type).toBe('object');
      expect(tool.outputSchema?.type).toBe('object');
      // every schema compiles on its own: no reference leads outside it
      expect(() => ajv.compile(tool.inputSchema)).not.toThrow();
      expect(() => ajv.compile(tool.outputSchema!)).not.toThrow();
      expect(typeof tool.annotations?.readOnlyHint).toBe('boolean');
    }
  });

  it('write tools create through the REST rules, with idempotency keys', async () => {
    const created = await ok('create_destination', { name: 'mcp receiver', url: receiver.url, idempotency_key: 'mcp-dest-1' });
    destinationId = created.id;
    expect(created.signing_secret).toMatch(/^whsec_/);
    // the same key and arguments: the first answer again, no second destination
    expect((await ok('create_destination', { name: 'mcp receiver', url: receiver.url, idempotency_key: 'mcp-dest-1' })).id).toBe(destinationId);
    const conflict = problemOf(await call('create_destination', { name: 'mcp receiver', url: receiver.url }));
    expect(conflict).toMatchObject({ status: 409, type: `${svc.config.errorBase}/errors/conflict` });
    const invalid = problemOf(await call('create_destination', { name: 'no url' }));
    expect(invalid).toMatchObject({ status: 400, type: `${svc.config.errorBase}/errors/validation-error` });
    expect(invalid.errors).toEqual([{ field: 'url', message: expect.any(String) }]);

    const ingester = await ok('create_ingester', { name: 'mcp github', provider: 'github', config: { signing_secret: ingesterSecret }, destination_ids: [destinationId] });
    ingesterId = ingester.id;
    expect(JSON.stringify(ingester)).not.toContain(ingesterSecret);
    const updated = await ok('update_ingester', { ingester_id: ingesterId, name: 'mcp github renamed' });
    expect(updated.name).toBe('mcp github renamed');

    // credentials through MCP: accepted, answered masked, kept for TRUST-006 to look for
    const token = `mcp-token-${destinationId.slice(-8)}`;
    const withAuth = await ok('create_destination', { name: 'mcp with credentials', url: receiver.url, auth: { type: 'bearer', token } });
    expect(withAuth.auth).toEqual({ type: 'bearer', token: `****${token.slice(-4)}` });
    expect(JSON.stringify(withAuth)).not.toContain(token);
    const spare = await ok('create_destination', { name: 'mcp spare', url: receiver.url });
    const flow = await ok('create_delivery_flow', { name: 'mcp spare flow', ingester_id: ingesterId, destination_ids: [spare.id] });
    flowId = flow.id;
    expect(await ok('delete_delivery_flow', { flow_id: flowId })).toEqual({ deleted: true, id: flowId });
    expect(await ok('delete_destination', { destination_id: spare.id })).toEqual({ deleted: true, id: spare.id });
    const spareIngester = await ok('create_ingester', { name: 'mcp spare ingester', provider: 'github', config: { signing_secret: 'x'.repeat(20) } });
    expect(await ok('delete_ingester', { ingester_id: spareIngester.id })).toEqual({ deleted: true, id: spareIngester.id });
    expect(problemOf(await call('delete_ingester', { ingester_id: spareIngester.id }))).toMatchObject({ status: 404 });
  });

  it('read tools mirror the REST evidence surface for a delivered webhook', async () => {
    const body = JSON.stringify({ action: 'opened', n: 1 });
    const res = await fetch(`${svc.url}/v1/hooks/${ingesterId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-github-event': 'issues', 'x-github-delivery': 'd-1', 'x-hub-signature-256': await sign(ingesterSecret, body) },
      body,
    });
    expect(res.status).toBe(202);
    eventId = ((await res.json()) as Json).event_id;
    const rows = await waitForStates(svc, eventId, ['delivered', 'acked'], 60_000);
    deliveryId = rows.find((r) => r.state === 'delivered')!.delivery_id;

    const status = await ok('get_delivery_status', { delivery_id: deliveryId });
    expect(status).toMatchObject({ delivery_id: deliveryId, event_id: eventId, destination_id: destinationId, status: 'delivered', outcome: 'delivered', final: true, attempts: 1, evidence: { status: 'confirmed' } });
    expect(status.transitions.map((t: Json) => t.state)).toEqual(expect.arrayContaining(['received', 'validated', 'filtered', 'delivered', 'acked']));
    const rest = await svc.api('GET', `/v1/mcp/deliveries/${deliveryId}/status`);
    expect(rest.body).toEqual(status);

    const evidence = await ok('get_delivery_evidence', { delivery_id: deliveryId });
    expect(evidence).toMatchObject({ delivery_id: deliveryId, status: 'confirmed' });
    expect(evidence).toEqual((await svc.api('GET', `${base()}/evidence/${deliveryId}`)).body);
    const byDelivery = await ok('get_evidence', { id: deliveryId });
    expect(byDelivery).toEqual({ id: deliveryId, kind: 'delivery', delivery_evidence: evidence });
    for (const [id, kind] of [[eventId, 'event'], [destinationId, 'destination'], [ingesterId, 'ingester']] as const) {
      const r = await ok('get_evidence', { id });
      expect(r).toMatchObject({ id, kind, summary: { deliveries: 1, attempts: 1, confirmed: 1, pending: 0 } });
      expect(r.attempts[0]).toMatchObject({ delivery_id: deliveryId, evidence_status: 'confirmed', leaf_index: evidence.leaf_index, leaf_hash: evidence.leaf_hash });
      expect((await svc.api('GET', `/v1/mcp/evidence/${id}`)).body).toEqual(r);
    }
    expect(problemOf(await call('get_evidence', { id: 'flw_01j9zx5w3k8f6t2q4r7m1n0bcd' }))).toMatchObject({ status: 400 });
    // what the dashboard reads: the event as received, the stats, the caller's identity
    expect(await ok('get_event', { event_id: eventId })).toEqual((await svc.api('GET', `${base()}/events/${eventId}`)).body);
    expect((await ok('get_tenant_stats', { window: '15m' })).totals.delivered).toBeGreaterThanOrEqual(1);
    const analytics = await ok('get_analytics', { group_by: 'destination', bucket: 'minute' });
    expect(analytics.groups.find((g: Json) => g.key === destinationId)?.totals.delivered).toBeGreaterThanOrEqual(1);
    expect(analytics.totals).toEqual((await svc.api('GET', `${base()}/analytics?group_by=destination&bucket=minute`)).body.totals);
    expect(problemOf(await call('get_analytics', { from: '2026-01-01T00:00:00Z', to: '2026-12-01T00:00:00Z', bucket: 'day' }))).toMatchObject({ status: 400 });
    expect(await ok('get_identity')).toMatchObject({ tenant_id: svc.tenantId, scopes: expect.arrayContaining(['read:stats']) });
    expect(problemOf(await call('get_evidence', { id: 'evt_01j9zx5w3k8f6t2q4r7m1n0bcd' }))).toMatchObject({ status: 404 });
    expect(problemOf(await call('get_delivery_status', { delivery_id: 'dlv_01j9zx5w3k8f6t2q4r7m1n0bcd' }))).toMatchObject({ status: 404 });

    // an unsigned webhook fails verification: a warning about the ingester
    const unsigned = await fetch(`${svc.url}/v1/hooks/${ingesterId}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"unsigned":true}' });
    expect(unsigned.status).toBe(202);
    const logs = await eventually('log lines of the ingester', async () => {
      const l = await ok('list_resource_logs', { id: ingesterId, level: 'warn' });
      return l.logs.length > 0 ? l : undefined;
    });
    expect(logs.logs.every((l: Json) => l.ingester_id === ingesterId && ['warn', 'error'].includes(l.level))).toBe(true);
    expect((await svc.api('GET', `/v1/mcp/logs/${ingesterId}?level=warn`)).body).toEqual(logs);
    expect((await ok('list_resource_logs', { id: destinationId, level: 'error' })).logs).toEqual([]);
    expect(problemOf(await call('list_resource_logs', { id: deliveryId, level: 'loud' }))).toMatchObject({ status: 400 });

    const deliveries = await ok('list_deliveries', { status: 'delivered', limit: 10 });
    expect(deliveries.deliveries.map((d: Json) => d.id)).toContain(deliveryId);
    const refs = await ok('list_integrity_evidence_refs', { limit: 2 });
    expect(refs.refs.length).toBeGreaterThan(0);
    expect(refs.verifier_key).toBe(svc.service.evidenceLog!.verifierKey);
    expect(refs.refs[0].signature).toMatchObject({ key_name: svc.service.evidenceLog!.origin, key_id: svc.service.evidenceLog!.keyId, algorithm: 'ed25519' });
    expect(refs.refs[0].tree_size).toBeGreaterThan(evidence.leaf_index);
    if (refs.next_cursor) expect((await ok('list_integrity_evidence_refs', { cursor: refs.next_cursor })).refs[0].tree_size).toBeLessThan(refs.refs[refs.refs.length - 1].tree_size);
    const consistency = await ok('get_consistency_proof', { from: evidence.tree_size });
    expect(consistency.from.tree_size).toBe(evidence.tree_size);

    // nothing failed for this event: nothing to retry
    expect(problemOf(await call('retry_event', { event_id: eventId }))).toMatchObject({ status: 409 });
  }, 90_000);

  it('retry_event queues a dead delivery again; create_saved_payload keeps a payload', async () => {
    const failing = await startReceiver();
    try {
      failing.respondWith(500);
      const dest = await ok('create_destination', { name: 'mcp failing', url: failing.url, retry_schedule_ms: [0] });
      const ing = await ok('create_ingester', { name: 'mcp failing in', provider: 'none', destination_ids: [dest.id] });
      const res = await fetch(`${svc.url}/v1/hooks/${ing.id}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":2}' });
      const deadEvent = ((await res.json()) as Json).event_id as string;
      await waitForStates(svc, deadEvent, ['dlq_queued'], 60_000);
      failing.respondWith(200);
      const retried = await ok('retry_event', { event_id: deadEvent, idempotency_key: 'mcp-retry-1' });
      expect(retried).toMatchObject({ status: 'queued' });
      await failing.waitForRequests(2);
      // an ingester without verification would fail TRUST-008 below: it has done its part
      await ok('delete_ingester', { ingester_id: ing.id });
    } finally {
      await failing.close();
    }
    const saved = await ok('create_saved_payload', { name: 'mcp payload', payload: { order: 7 } });
    expect(saved).toMatchObject({ name: 'mcp payload', payload: { order: 7 } });
  }, 90_000);

  it('export_rows answers a page of an export as NDJSON text with the cursor of the rest, as the REST export does', async () => {
    // three attempts of its own, and whatever the tests before stored: more than a page of two
    const receiving = await startReceiver();
    try {
      const dest = await ok('create_destination', { name: 'mcp export', url: receiving.url });
      const ing = await ok('create_ingester', { name: 'mcp export in', provider: 'none', destination_ids: [dest.id] });
      for (let i = 0; i < 3; i++) await fetch(`${svc.url}/v1/hooks/${ing.id}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: `{"export":${i}}` });
      await receiving.waitForRequests(3);
      // an ingester without verification would fail TRUST-008 below
      await ok('delete_ingester', { ingester_id: ing.id });
    } finally {
      await receiving.close();
    }
    const rest = await eventually('three attempts stored', async () => {
      const r = await fetch(`${svc.url}${base()}/exports/deliveries?format=ndjson&limit=2`, { headers: { authorization: `Bearer ${svc.apiKey}` } });
      return r.headers.get('hookline-next-cursor') ? r : undefined;
    });
    const text = await rest.text();
    const first = await ok('export_rows', { kind: 'deliveries', limit: 2 });
    expect(first).toEqual({ kind: 'deliveries', rows: 2, ndjson: text, next_cursor: rest.headers.get('hookline-next-cursor') });
    const next = await ok('export_rows', { kind: 'deliveries', limit: 1, cursor: first.next_cursor });
    expect(JSON.parse(next.ndjson.trim())).toEqual(JSON.parse((await (await fetch(`${svc.url}${base()}/exports/deliveries?limit=1&cursor=${first.next_cursor}`, { headers: { authorization: `Bearer ${svc.apiKey}` } })).text()).trim()));
    expect((await ok('export_rows', { kind: 'logs', level: 'error', from: '2100-01-01T00:00:00Z' })).ndjson).toBe('');
    expect(problemOf(await call('export_rows', { kind: 'events', status: 'failed' }))).toMatchObject({ status: 400, errors: [{ field: 'status' }] });
    expect((await call('export_rows', { kind: 'deliveries', limit: 1001 })).isError).toBe(true);
  });

  it('list_dead_letters, get_dead_letter and replay_dead_letter: a record the filter stage set aside, put back once its filters compile', async () => {
    const receiving = await startReceiver();
    try {
      const dest = await ok('create_destination', { name: 'mcp dead letters', url: receiving.url });
      const ing = await ok('create_ingester', { name: 'mcp dead letters in', provider: 'none', destination_ids: [dest.id], filters: [{ type: 'header', name: 'x-tag', op: 'matches', pattern: '^t' }] });
      // a lookahead, stored the way an older version could store it: the filter stage sets the event aside
      const stored = svc.service.store.get('ingester', svc.tenantId, ing.id)!;
      await svc.service.store.put({ ...stored, filters: [{ type: 'header', name: 'x-tag', op: 'matches', pattern: '^t(?=a)' }] });
      const res = await fetch(`${svc.url}/v1/hooks/${ing.id}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-tag': 'ta' }, body: '{"n":3}' });
      const event = ((await res.json()) as Json).event_id as string;
      const letter = await eventually('the dead letter listed', async () => (await ok('list_dead_letters', { stage: 'filter', limit: 50 })).dead_letters.find((l: Json) => l.event_id === event));
      expect(letter).toMatchObject({ stage: 'filter', reason: expect.stringMatching(/^filter not evaluated: the ingester's filters are invalid/), resource_id: ing.id, replayed_at: null });
      expect((await svc.api('GET', `${base()}/dead-letters?stage=filter&limit=50`)).body.dead_letters).toContainEqual(letter);
      expect((await ok('list_dead_letters', { stage: 'deliver' })).dead_letters).toEqual([]);
      expect(await ok('get_dead_letter', { dead_letter_id: letter.id })).toEqual((await svc.api('GET', `${base()}/dead-letters/${letter.id}`)).body);

      await ok('update_ingester', { ingester_id: ing.id, name: 'mcp dead letters in', filters: [{ type: 'header', name: 'x-tag', op: 'matches', pattern: '^t' }] });
      const replayed = await ok('replay_dead_letter', { dead_letter_id: letter.id, idempotency_key: 'mcp-dead-letter-1' });
      expect(replayed).toMatchObject({ status: 'replayed', dead_letter_id: letter.id, stage: 'filter', event_id: event, written: { topic: svc.service.topics.received } });
      // the same key and arguments: the first answer again; without it, a second replay is refused
      expect(await ok('replay_dead_letter', { dead_letter_id: letter.id, idempotency_key: 'mcp-dead-letter-1' })).toEqual(replayed);
      expect(problemOf(await call('replay_dead_letter', { dead_letter_id: letter.id }))).toMatchObject({ status: 409 });
      const [request] = await receiving.waitForRequests(1);
      expect(request!.body.toString()).toBe('{"n":3}');
      await waitForStates(svc, event, ['replayed', 'delivered', 'acked'], 60_000);
      // an ingester without verification would fail TRUST-008 below: it has done its part
      await ok('delete_ingester', { ingester_id: ing.id });
    } finally {
      await receiving.close();
    }
  }, 90_000);

  it('create_api_key shows the plain key once; list_api_keys never; revoke_api_key stops it', async () => {
    const created = await ok('create_api_key', { name: 'mcp key', scopes: ['read:keys', 'write:keys'], idempotency_key: 'mcp-key-1' });
    expect(created).toMatchObject({ name: 'mcp key', status: 'active', revoked_at: null, api_key: expect.stringMatching(/^hlk_/) });
    const secret = String(created.api_key);
    const listed = await ok('list_api_keys', { limit: 200 });
    const text = JSON.stringify(listed);
    expect(text).not.toContain(secret);
    expect(text).not.toContain('secret_sha256');
    expect(listed.api_keys.find((k: Json) => k.id === created.id)).toMatchObject({ name: 'mcp key', status: 'active' });
    // a key cannot grant what it does not hold
    const own = await connect(svc.url, secret);
    try {
      const refused = problemOf((await own.callTool({ name: 'create_api_key', arguments: { name: 'wider', scopes: ['read:deliveries'] } })) as { isError?: boolean; content: { text: string }[] });
      expect(refused).toMatchObject({ status: 403, required_scope: 'read:deliveries' });
      // the key revokes itself; after that it opens nothing
      const revoked = (await own.callTool({ name: 'revoke_api_key', arguments: { key_id: created.id } })) as { structuredContent?: Json };
      expect(revoked.structuredContent).toMatchObject({ id: created.id, status: 'revoked', revoked_at: expect.any(String) });
    } finally {
      await own.close().catch(() => undefined);
    }
    expect((await rpc(svc.url, secret, { jsonrpc: '2.0', id: 1, method: 'tools/list' })).status).toBe(401);
    expect(await ok('revoke_api_key', { key_id: created.id })).toMatchObject({ status: 'revoked' });
    expect(problemOf(await call('revoke_api_key', { key_id: 'key_01j9zx5w3k8f6t2q4r7m1n0bcd' }))).toMatchObject({ status: 404 });
  });

  it('runtime and trust proofs are live checks with their values and times', async () => {
    const runtime = await ok('list_runtime_proofs');
    expect(runtime.proofs.map((p: Json) => p.id)).toEqual(RUNTIME_PROOFS.map((p) => p.id));
    const trust = await ok('list_trust_proofs');
    expect(trust.proofs.map((p: Json) => p.id)).toEqual(TRUST_PROOFS.map((p) => p.id));
    const started = Date.now() - 60_000;
    for (const p of [...runtime.proofs, ...trust.proofs]) expect(Date.parse(p.measured_at)).toBeGreaterThan(started);
    const byId = (list: Json[]) => Object.fromEntries(list.map((p) => [p.id, p]));

    // a healthy service with everything delivered: each of these holds
    const healthy = await eventually('runtime proofs passing', async () => {
      const r = byId((await ok('list_runtime_proofs')).proofs);
      return ['PROOF-001', 'PROOF-002', 'PROOF-003', 'PROOF-004', 'PROOF-005', 'PROOF-006', 'PROOF-007', 'PROOF-008', 'PROOF-009'].every((id) => r[id].status === 'pass') ? r : undefined;
    }, 60_000);
    expect(healthy['PROOF-001'].observed).toMatchObject({ unaccounted_events: 0, delivered_without_ack: 0 });
    expect(healthy['PROOF-001'].observed.routed).toBeGreaterThanOrEqual(1);
    expect(healthy['PROOF-005'].observed.consistent ?? true).toBe(true);
    expect(healthy['PROOF-006'].observed.missing).toEqual([]);
    // filter and route run inside validate's group, which has no others
    expect(Object.keys(healthy['PROOF-002'].observed.stages)).toEqual(['validate', 'deliver', 'evidence-sequencer']);
    expect(['pass', 'unknown']).toContain(healthy['PROOF-010'].status);
    const filtered = await ok('list_runtime_proofs', { ids: ['PROOF-007'] });
    expect(filtered.proofs.map((p: Json) => p.id)).toEqual(['PROOF-007']);

    const t = byId(trust.proofs);
    for (const id of ['TRUST-001', 'TRUST-002', 'TRUST-003', 'TRUST-004', 'TRUST-005', 'TRUST-006', 'TRUST-008', 'TRUST-009', 'TRUST-010']) {
      expect({ id, status: t[id].status, observed: t[id].observed }).toMatchObject({ id, status: 'pass' });
    }
    expect(t['TRUST-002'].observed).toMatchObject({ no_key: { status: 401 }, read_without_scope: { status: 403, required_scope: 'read:destinations' }, other_tenant: { status: 404 } });
    expect(t['TRUST-005'].observed.probes.every((p: Json) => p.refused)).toBe(true);
    expect(t['TRUST-006'].observed).toMatchObject({ secrets_in_responses: 0, log_lines_with_secrets: 0 });
    expect(t['TRUST-006'].observed.secrets).toBeGreaterThanOrEqual(2);
    // http destinations and no https-only policy: reported, not hidden
    expect(t['TRUST-007']).toMatchObject({ status: 'fail', observed: { policy: expect.stringContaining('http allowed') } });
    expect(t['TRUST-007'].observed.not_https).toContain(destinationId);
  }, 90_000);

  it('capabilities, readiness, non-claims and planes', async () => {
    const capabilities = await ok('get_capabilities');
    expect(capabilities.capabilities.find((c: Json) => c.id === 'transport-policy')).toMatchObject({ kind: 'trust', status: 'fail' });
    expect(capabilities.capabilities.find((c: Json) => c.id === 'evidence-log')).toMatchObject({ kind: 'runtime', status: 'pass' });
    const readiness = await ok('get_readiness');
    expect(readiness.domains.map((d: Json) => d.name)).toEqual(['ingestion', 'processing', 'delivery', 'evidence', 'query', 'control']);
    expect(readiness.proofs.pass + readiness.proofs.fail + readiness.proofs.unknown).toBe(20);
    expect(readiness.domains.find((d: Json) => d.name === 'control')).toMatchObject({ status: 'pass', failing: [] });

    const all = await ok('list_non_claims');
    expect(all.non_claims).toEqual(NON_CLAIMS);
    expect(all.non_claims.map((n: Json) => n.statement).join(' ')).toMatch(/exactly-once/);
    const ordering = await ok('list_non_claims', { category: 'ordering' });
    expect(ordering.non_claims.every((n: Json) => n.category === 'ordering')).toBe(true);
    expect(problemOf(await call('list_non_claims', { category: 'weather' }))).toMatchObject({ status: 400 });

    const planes = await ok('get_planes');
    expect(planes.planes.map((p: Json) => p.name)).toEqual(['ingestion', 'processing', 'delivery', 'evidence', 'query', 'control']);
    for (const plane of planes.planes) expect(plane.signals.length).toBeGreaterThan(0);
    expect(planes.planes.find((p: Json) => p.name === 'query').status).toBe('pass');
    const rest = await svc.api('GET', '/v1/mcp/planes');
    expect(rest.status).toBe(200);
    expect(rest.body.planes.map((p: Json) => p.name)).toEqual(planes.planes.map((p: Json) => p.name));
  }, 60_000);

  it('destination tools read, change, pause, resume and rotate a destination, and list its history', async () => {
    const created = await ok('create_destination', { name: 'mcp changes', url: receiver.url });
    const id = String(created.id);
    expect((await ok('list_destinations', { limit: 200 })).destinations.map((d: Json) => d.id)).toContain(id);
    expect(await ok('get_destination', { destination_id: id })).toMatchObject({ id, status: 'active', enabled: true });
    const etag = (await svc.api('GET', `${base()}/destinations/${id}`)).headers.get('etag')!;
    const updated = await ok('update_destination', { destination_id: id, if_match: etag, name: 'mcp changed', rate_limit_per_s: 7, event_types: ['order.*'] });
    expect(updated).toMatchObject({ name: 'mcp changed', rate_limit_per_s: 7, event_types: ['order.*'] });
    // the same version again is stale now
    expect(problemOf(await call('update_destination', { destination_id: id, if_match: etag, rate_limit_per_s: 8 }))).toMatchObject({ status: 412 });
    expect(problemOf(await call('update_destination', { destination_id: id, rate_limit_per_s: 0 }))).toMatchObject({ status: 400 });
    expect(await ok('update_destination', { destination_id: id, rate_limit_per_s: null })).toMatchObject({ rate_limit_per_s: null });
    expect(await ok('pause_destination', { destination_id: id })).toMatchObject({ status: 'paused', enabled: false });
    expect(await ok('resume_destination', { destination_id: id })).toMatchObject({ status: 'active', enabled: true });
    const rotated = await ok('rotate_destination_secret', { destination_id: id, overlap_seconds: 0 });
    expect(rotated).toMatchObject({ id, signing_secret: expect.stringMatching(/^whsec_/), previous_secret_expires_at: null });
    const history = await ok('list_destination_changes', { destination_id: id, limit: 10 });
    expect(history.changes.map((c: Json) => c.action)).toEqual(['secret_rotated', 'resumed', 'paused', 'updated', 'updated', 'created']);
    expect(JSON.stringify(history)).not.toContain(String(rotated.signing_secret));
  });
  it('destination types and a transformation\'s dry run, through their tools', async () => {
    const types = await ok('list_destination_types', {});
    expect(types.destination_types.map((t: Json) => t.type)).toEqual(['webhook', 'kafka', 'amqp', 'nats', 'mqtt']);
    const created = await ok('create_destination', { name: 'mcp amqp', type: 'amqp', url: 'amqp://127.0.0.1:9', config: { exchange: 'events', routing_key: 'orders' } });
    expect(created).toMatchObject({ type: 'amqp', config: { exchange: 'events', routing_key: 'orders' } });
    const run = await ok('test_destination_transformation', { destination_id: created.id, body: { total: 2 }, transformation: 'function transform(e) { return { body: { total: e.body.total * 10 } }; }' });
    expect(run).toMatchObject({ outcome: 'send', body: '{"total":20}', body_sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const failed = await ok('test_destination_transformation', { destination_id: created.id, body: {}, transformation: 'function transform(e) { throw new Error("nope"); }' });
    expect(failed).toMatchObject({ outcome: 'fail', error: expect.stringMatching(/transform threw: Error: nope/) });
  });
  it('ordered is set, shown and changed through the destination and ingester tools', async () => {
    const created = await ok('create_destination', { name: 'mcp ordered', url: receiver.url, ordered: true });
    const id = String(created.id);
    expect(created.ordered).toBe(true);
    expect(await ok('get_destination', { destination_id: id })).toMatchObject({ ordered: true });
    expect(await ok('update_destination', { destination_id: id, ordered: false })).toMatchObject({ ordered: false });
    expect(problemOf(await call('update_destination', { destination_id: id, ordered: 'yes' }))).toMatchObject({ status: 400 });
    const ingester = await ok('create_ingester', { name: 'mcp ordered in', provider: 'none', ordered: true, destination_ids: [id] });
    expect(ingester.ordered).toBe(true);
    expect(await ok('update_ingester', { ingester_id: ingester.id, name: 'mcp ordered in', ordered: false })).toMatchObject({ ordered: false });
    // left out of an update, it stays
    expect(await ok('update_ingester', { ingester_id: ingester.id, name: 'mcp ordered renamed' })).toMatchObject({ ordered: false, name: 'mcp ordered renamed' });
    expect((await svc.api('GET', `${base()}/ingesters/${String(ingester.id)}`)).body.ordered).toBe(false);
  });
  it('start_replay, get_replay, list_replays and cancel_replay drive replay jobs through the REST rules', async () => {
    const range = { from: '2020-01-01T00:00:00Z', to: '2020-01-02T00:00:00Z' };
    // cancelled while running (a runner picks a new job up within a second: a lost race is tried again)
    let cancelled: Json | undefined;
    for (let i = 0; i < 3 && cancelled === undefined; i++) {
      const started = await ok('start_replay', range);
      expect(started).toMatchObject({ id: expect.stringMatching(/^rpl_/), status: 'running', matched: 0 });
      // a job finished before the cancel answers 409: start another
      cancelled = await ok('cancel_replay', { replay_id: started.id }).catch(() => undefined);
    }
    expect(cancelled).toMatchObject({ status: 'cancelled' });
    expect(problemOf(await call('cancel_replay', { replay_id: cancelled!.id }))).toMatchObject({ status: 409 });
    expect(await ok('get_replay', { replay_id: cancelled!.id })).toMatchObject({ id: cancelled!.id, status: 'cancelled' });
    expect(problemOf(await call('get_replay', { replay_id: 'rpl_01j9zx5w3k8f6t2q4r7m1n0bcd' }))).toMatchObject({ status: 404 });
    expect((await ok('list_replays', { limit: 200 })).replays.map((j: Json) => j.id)).toContain(cancelled!.id);
    expect(problemOf(await call('start_replay', { from: range.to, to: range.from }))).toMatchObject({ status: 422 });
  }, 30_000);
  it('event type tools keep the catalogue through the REST rules', async () => {
    const schema = { type: 'object', properties: { amount: { type: 'integer' } } };
    const created = await ok('create_event_type', { name: 'mcp.invoice.paid', description: 'Paid.', schema, idempotency_key: 'mcp-etp-1' });
    expect(created).toMatchObject({ id: expect.stringMatching(/^etp_/), name: 'mcp.invoice.paid', description: 'Paid.', schema });
    expect((await ok('create_event_type', { name: 'mcp.invoice.paid', description: 'Paid.', schema, idempotency_key: 'mcp-etp-1' })).id).toBe(created.id);
    expect(problemOf(await call('create_event_type', { name: 'MCP.invoice.paid' }))).toMatchObject({ status: 409 });
    expect(problemOf(await call('create_event_type', { name: 'mcp.bad', schema: { type: 'nope' } }))).toMatchObject({ status: 422, errors: [{ field: 'schema.type' }] });
    const listed = await ok('list_event_types', { limit: 200 });
    expect(listed.event_types.map((t: Json) => t.id)).toContain(created.id);
    expect(await ok('get_event_type', { event_type_id: created.id })).toEqual(created);
    const updated = await ok('update_event_type', { event_type_id: created.id, description: 'Paid in full.' });
    expect(updated).toMatchObject({ name: 'mcp.invoice.paid', description: 'Paid in full.', schema: null });
    expect((await svc.api('GET', `${base()}/event-types/${created.id}`)).body).toEqual(updated);
    expect(problemOf(await call('update_event_type', { event_type_id: created.id, name: 'mcp.renamed' }))).toMatchObject({ status: 422 });
    expect(await ok('delete_event_type', { event_type_id: created.id })).toEqual({ deleted: true, id: created.id });
    expect(problemOf(await call('get_event_type', { event_type_id: created.id }))).toMatchObject({ status: 404 });
  });

  it('tenant and portal tools: an operator manages tenants and their portal links; a tenant sends a test event', async () => {
    const operatorKey = await svc.operatorKey();
    const op = await connect(svc.url, operatorKey);
    try {
      const opTools = (await op.listTools()).tools;
      expect(opTools.map((t) => t.name).sort()).toEqual(TOOLS.filter((t) => t.audience === 'operator' || t.audience === 'both').map((t) => t.name).sort());
      const okAs = async (name: string, args: Json): Promise<Json> => {
        const result = (await op.callTool({ name, arguments: args })) as { isError?: boolean; structuredContent?: Json; content: { text: string }[] };
        if (result.isError) throw new Error(`${name} failed: ${result.content[0]?.text}`);
        const validate = ajv.compile(opTools.find((t) => t.name === name)!.outputSchema!);
        if (!validate(result.structuredContent)) throw new Error(`${name}: ${ajv.errorsText(validate.errors)}`);
        succeeded.add(name);
        return result.structuredContent as Json;
      };
      const id = `mcp-${svc.tenantId}`.slice(0, 63);
      expect(await okAs('create_tenant', { id, name: 'Made by MCP', idempotency_key: 'mcp-tenant-1' })).toMatchObject({ id, state: 'active' });
      expect((await okAs('list_tenants', { limit: 200 })).tenants.map((t: Json) => t.id)).toContain(id);
      expect(await okAs('update_tenant', { tenant_id: id, state: 'suspended' })).toMatchObject({ state: 'suspended' });
      expect(await okAs('get_tenant', { tenant_id: id })).toMatchObject({ state: 'suspended', name: 'Made by MCP' });
      const link = await okAs('create_portal_session', { tenant_id: id, scopes: ['read:deliveries'] });
      expect(link.url).toContain('#portal=hlc_');
      expect((await okAs('list_portal_sessions', { tenant_id: id })).portal_sessions.map((p: Json) => p.id)).toEqual([link.id]);
      expect(await okAs('revoke_portal_session', { tenant_id: id, portal_session_id: link.id })).toEqual({ deleted: true, id: link.id });
      expect(await okAs('delete_tenant', { tenant_id: id })).toEqual({ deleted: true, id });
    } finally {
      await op.close();
    }
    // a tenant's key: its own portal links and test events, never the operators' tools
    const own = await ok('create_portal_session', { scopes: ['read:destinations'] });
    expect(own.tenant_id).toBe(svc.tenantId);
    expect((await ok('list_portal_sessions')).portal_sessions.map((p: Json) => p.id)).toContain(own.id);
    expect(await ok('revoke_portal_session', { portal_session_id: own.id })).toEqual({ deleted: true, id: own.id });
    const sent = await ok('send_test_event', { destination_id: destinationId, payload: { from: 'mcp' } });
    expect(sent).toMatchObject({ destination_id: destinationId, status: 'queued', delivery_id: expect.stringMatching(/^dlv_/) });
    const refused = await rpc(svc.url, svc.apiKey, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_tenants', arguments: {} } });
    expect(refused.status).toBe(403);
  });

  it('called every tool successfully, each result valid under its output schema', () => {
    expect([...succeeded].sort()).toEqual(TOOLS.map((t) => t.name).sort());
  });

  it('refuses a disabled write group, a missing scope and a missing key before the transport', async () => {
    const disabled = await rpc(disabledUrl, svc.apiKey, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'create_saved_payload', arguments: { name: 'x', payload: {} } } });
    expect(disabled.status).toBe(403);
    expect(disabled.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(disabled.body).toMatchObject({ type: `${svc.config.errorBase}/errors/write-tool-disabled`, tool_group: 'write:payloads' });
    const disabledClient = await connect(disabledUrl, svc.apiKey);
    try {
      await expect(disabledClient.callTool({ name: 'create_saved_payload', arguments: { name: 'x', payload: {} } })).rejects.toThrow(/403/);
      // https only: an http destination is refused, and TRUST-007 names the policy and the http ones left
      const refused = await disabledClient.callTool({ name: 'create_destination', arguments: { name: 'plain http', url: 'http://127.0.0.1:9/x' } });
      expect(problemOf(refused as any)).toMatchObject({ status: 400, errors: [{ field: 'url', message: expect.stringMatching(/https/) }] });
      const trust = (await disabledClient.callTool({ name: 'list_trust_proofs', arguments: { ids: ['TRUST-007'] } })).structuredContent as Json;
      expect(trust.proofs[0]).toMatchObject({ status: 'fail', observed: { policy: 'https only' } });
      expect(trust.proofs[0].observed.not_https.length).toBeGreaterThan(0);
    } finally {
      await disabledClient.close();
    }

    const readOnly = await svc.newKey(SCOPES.filter((s) => s.startsWith('read:') && s !== 'read:operations'));
    const limited = await connect(svc.url, readOnly);
    try {
      const names = (await limited.listTools()).tools.map((t) => t.name);
      expect(names).not.toContain('get_capabilities');
      expect(names).not.toContain('create_destination');
      expect(names).toContain('list_non_claims');
      expect(names).toContain('get_delivery_status');
    } finally {
      await limited.close();
    }
    const scope = await rpc(svc.url, readOnly, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'create_destination', arguments: { name: 'x', url: receiver.url } } });
    expect(scope.status).toBe(403);
    expect(scope.body).toMatchObject({ type: `${svc.config.errorBase}/errors/insufficient-scope`, required_scope: 'write:destinations' });

    const anonymous = await rpc(svc.url, null, { jsonrpc: '2.0', id: 3, method: 'tools/list' });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
    await expect(connect(svc.url, 'hlk_not-a-key')).rejects.toThrow(/401/);
    const get = await fetch(`${svc.url}/v1/mcp`, { headers: { authorization: `Bearer ${svc.apiKey}`, accept: 'text/event-stream' } });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
  });

  it('answers what the transport refuses as problem documents, not JSON-RPC errors', async () => {
    const post = async (headers: Record<string, string>, body: string) => {
      const res = await fetch(`${svc.url}/v1/mcp`, { method: 'POST', headers: { authorization: `Bearer ${svc.apiKey}`, 'content-type': 'application/json', ...headers }, body });
      const text = await res.text();
      return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
    };
    const list = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    for (const accept of ['application/json', 'text/event-stream', '*/*', 'text/html']) {
      expectProblem(await post({ accept }, list), 406, 'not-acceptable', svc.config.errorBase);
    }
    expectProblem(await post({}, list), 406, 'not-acceptable', svc.config.errorBase);
    const both = { accept: 'application/json, text/event-stream' };
    const invalid = await post(both, JSON.stringify({ id: 1, method: 'tools/list' }));
    expectProblem(invalid, 400, 'validation-error', svc.config.errorBase);
    expect(invalid.body.errors).toEqual([{ field: 'body', message: expect.stringMatching(/JSON-RPC/) }]);
    const version = await post({ ...both, 'mcp-protocol-version': '1999-01-01' }, list);
    expectProblem(version, 400, 'validation-error', svc.config.errorBase);
    expect(version.body.errors[0].field).toBe('MCP-Protocol-Version');
    expectProblem(await post({ ...both, 'content-type': 'application/merge-patch+json' }, list), 415, 'unsupported-media-type', svc.config.errorBase);
    // and what it takes still answers as before
    const ok = await post(both, list);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toMatch(/^application\/json/);
    expect(ok.body.result.tools.length).toBeGreaterThan(0);
  });

  it('a key sees only its own tenant on the evidence surface', async () => {
    const other = await svc.newKey([...SCOPES], { tenantId: `${svc.tenantId}-other` });
    expect((await svc.api('GET', `/v1/mcp/deliveries/${deliveryId}/status`, undefined, { key: other })).status).toBe(404);
    expect((await svc.api('GET', `/v1/mcp/evidence/${deliveryId}`, undefined, { key: other })).status).toBe(404);
    expect((await svc.api('GET', `/v1/mcp/evidence/${destinationId}`, undefined, { key: other })).status).toBe(404);
    expect((await svc.api('GET', `/v1/mcp/logs/${deliveryId}`, undefined, { key: other })).body.logs).toEqual([]);
    const otherClient = await connect(svc.url, other);
    try {
      const result = await otherClient.callTool({ name: 'get_delivery_status', arguments: { delivery_id: deliveryId } });
      expect(result.isError).toBe(true);
      expect(JSON.parse((result.content as { text: string }[])[0]!.text)).toMatchObject({ status: 404 });
    } finally {
      await otherClient.close();
    }
    const limitedKey = await svc.newKey([...SCOPES], { resourceIds: ['dst_01j9zx5w3k8f6t2q4r7m1n0bcd'] });
    const denied = await svc.api('GET', `/v1/mcp/evidence/${destinationId}`, undefined, { key: limitedKey });
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ resource_id: destinationId });
    const endpoints = await fetch(`${disabledUrl}/v1/mcp/endpoints`, { headers: { authorization: `Bearer ${svc.apiKey}` } }).then((r) => r.json() as Promise<Json>);
    expect(endpoints.mcp.tools.find((t: Json) => t.name === 'create_saved_payload')).toMatchObject({ group: 'write:payloads', enabled: false });
    expect(endpoints.mcp.tools.find((t: Json) => t.name === 'create_destination')).toMatchObject({ group: 'write:destinations', enabled: true });
    expect(endpoints.endpoints.map((e: Json) => `${e.method} ${e.path}`)).toEqual(expect.arrayContaining(['GET /v1/mcp/health', 'GET /v1/mcp/planes', 'GET /v1/mcp/logs/{id}']));
  });
});
