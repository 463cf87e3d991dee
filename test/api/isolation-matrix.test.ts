import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ID_PREFIX, newId } from '../../core/ids';
import { SCOPES } from '../../core/scopes';
import { ensureTenant, issueApiKey } from '../../platform/config-store/tenants';
import { runScript } from '../support/process';
import { startReceiver, type Receiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';
import { waitForStates } from '../support/flow';

/**
 * Tenant A, holding a key with every scope, walks every REST operation of the OpenAPI document,
 * every MCP tool, resource and prompt, and the CLI commands that take ids, aimed at tenant B's
 * objects; A's portal session (its cookie, no key) walks every REST operation again. Nothing of B may be reached (never a success) and nothing of B may be seen: no B
 * identifier, name, URL or secret in any status line, header or body. The walk is driven by the
 * document and the tools list, so an operation added later is walked without an edit here; an
 * id parameter the walk cannot fill fails the test loudly.
 */

type Json = Record<string, any>;

type OctokitWebhooksMethods = typeof import('@octokit/webhooks-methods', { with: { 'resolution-mode': 'import' } });
const { sign } = require(join(__dirname, '../../node_modules/@octokit/webhooks-methods/dist-node/index.js')) as OctokitWebhooksMethods;

const METHODS = ['get', 'head', 'post', 'put', 'patch', 'delete'] as const;
const PREFIX_KIND = Object.fromEntries(Object.entries(ID_PREFIX).map(([kind, prefix]) => [prefix, kind])) as Record<string, keyof typeof ID_PREFIX>;

/** B's objects by kind of id (a kind may hold several, e.g. a delivered and a dead delivery). */
type Owned = Partial<Record<keyof typeof ID_PREFIX, string[]>>;

/** The id kind a parameter or member names: `destination_id` → destination, `payload_id` → savedPayload. */
function kindOfName(name: string): keyof typeof ID_PREFIX | 'any' | undefined {
  const base = name.replace(/_ids?$/, '');
  if (base === 'id' || name === 'id') return 'any';
  const aliases: Record<string, keyof typeof ID_PREFIX> = { payload: 'savedPayload', saved_payload: 'savedPayload', key: 'apiKey', api_key: 'apiKey', flow: 'flow', delivery_flow: 'flow', replay: 'replayJob' };
  if (aliases[base]) return aliases[base];
  const camel = base.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
  if (camel in ID_PREFIX) return camel as keyof typeof ID_PREFIX;
  return undefined;
}

async function connect(url: string, key: string): Promise<Client> {
  const client = new Client({ name: 'hookline-isolation', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/v1/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  return client;
}

describe('tenant isolation matrix', () => {
  let svc: TestService;
  let ok: Receiver;
  let failing: Receiver;
  let keyA: string;
  let keyB: string;
  const tenantB = () => `${svc.tenantId}-b`;
  const tag = `iso${Date.now().toString(36)}`;
  const b: Owned = {};
  /** Every string of B that A must never see. */
  const secretsOfB: string[] = [];
  let deliveredB = '';
  let deadB = '';
  let failingDestinationB = '';
  const doc: Json = {};
  const exercised = new Set<string>();

  const idsOfB = (kind: keyof typeof ID_PREFIX | 'any'): string[] => (kind === 'any' ? Object.values(b).flat() : (b[kind] ?? []));
  const forbidden = (): string[] => [tenantB(), ...Object.values(b).flat(), ...secretsOfB];

  /** The same text with each of B's ids replaced by an id of the same kind that nobody owns. */
  const twins = new Map<string, string>();
  function unknownTwin(text: string): string {
    let out = text;
    for (const id of Object.values(b).flat()) {
      if (!out.includes(id)) continue;
      if (!twins.has(id)) twins.set(id, newId(PREFIX_KIND[id.slice(0, 3)]!));
      out = out.split(id).join(twins.get(id)!);
    }
    return out;
  }
  /** An answer without what differs from call to call (request ids, times) and with B's ids as their twins. */
  const comparable = (text: string) => unknownTwin(text).replace(/req_[0-9a-z]{26}/g, 'req').replace(/"[a-z_]*(_at|since|measured)[a-z_]*":"[^"]*"/g, '"t"');

  /** Fails when an answer names anything of B that the request itself did not name. */
  function expectNoLeak(where: string, request: string, answer: string): void {
    const leaked = forbidden().filter((s) => s.length > 0 && !request.includes(s) && answer.includes(s));
    if (leaked.length > 0) throw new Error(`${where} discloses ${leaked.join(', ')} of tenant B:\n${answer.slice(0, 2000)}`);
  }

  /** How the walk's requests authenticate: A's API key, or A's portal session (cookie and header). */
  let credential: { key: string } | { cookie: string } = { key: '' };
  let portalCookieA = '';
  async function raw(method: string, path: string, body?: unknown) {
    const headers: Record<string, string> = 'key' in credential ? { authorization: `Bearer ${credential.key || keyA}` } : { cookie: `hookline_portal=${credential.cookie}`, 'x-hookline-portal': '1' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${svc.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    const head = [...res.headers.entries()].map(([k, v]) => `${k}: ${v}`).join('\n');
    return { status: res.status, text, all: `${res.status} ${res.statusText}\n${head}\n\n${text}` };
  }

  beforeAll(async () => {
    [svc, ok, failing] = await Promise.all([
      // a breaker opens after two failed attempts and stays open for the whole walk
      startTestService({ LOG_LEVEL: 'warn', RATE_LIMITS: 'default=100000/60s', RETRY_TIERS: '100ms', BREAKER_MIN_ATTEMPTS: '2', BREAKER_ERROR_PERCENT: '1', BREAKER_RESET_MS: '600000', PROOF_GRACE_MS: '1000' }),
      startReceiver(),
      startReceiver(),
    ]);
    failing.respondWith(500);
    keyA = svc.apiKey;
    await ensureTenant(svc.service.store, tenantB());
    const issuedB = await issueApiKey(svc.service.store, tenantB(), [...SCOPES]);
    keyB = issuedB.api_key;
    b.apiKey = [issuedB.key_id];
    secretsOfB.push(keyB);
    // a key of B stored without its hash: the trust proof that looks for such keys must not name it to A
    const stored = svc.service.store.get('api_key', tenantB(), issuedB.key_id)!;
    const unhashed = { ...stored, id: newId('apiKey'), secret_sha256: 'not-a-hash' };
    await svc.service.store.put(unhashed);
    b.apiKey.push(unhashed.id);
    const asB = (method: string, path: string, body?: unknown) => svc.api(method, `/v1/tenants/${tenantB()}${path}`, body, { key: keyB });

    // tenant B: one object of every kind
    const ingesterSecret = `${tag}-ingester-secret-b-7Qz9`;
    const good = await asB('POST', '/destinations', { name: `${tag} B good`, url: `${ok.url}/${tag}-b-good` });
    const bad = await asB('POST', '/destinations', { name: `${tag} B failing`, url: `${failing.url}/${tag}-b-failing`, retry_schedule_ms: [0] });
    expect([good.status, bad.status]).toEqual([201, 201]);
    failingDestinationB = bad.body.id;
    const ingester = await asB('POST', '/ingesters', { name: `${tag} B ingester`, provider: 'github', config: { signing_secret: ingesterSecret }, destination_ids: [good.body.id, bad.body.id] });
    expect(ingester.status).toBe(201);
    const flow = await asB('POST', '/delivery-flows', { name: `${tag} B flow`, ingester_id: ingester.body.id, destination_ids: [bad.body.id] });
    expect(flow.status).toBe(201);
    const payload = await asB('POST', '/saved-payloads', { name: `${tag} B payload`, payload: { secret_marker: `${tag}-payload-b` } });
    expect(payload.status).toBe(201);
    b.destination = [good.body.id, bad.body.id];
    b.ingester = [ingester.body.id];
    b.flow = [flow.body.id];
    b.savedPayload = [payload.body.id];
    const eventType = await asB('POST', '/event-types', { name: `${tag}.b.type`, description: `${tag}-event-type-b`, schema: { title: `${tag}-schema-b` } });
    expect(eventType.status).toBe(201);
    b.eventType = [eventType.body.id];
    // a replay job of B (a range with nothing in it: it completes at once, and stays readable)
    const replay = await asB('POST', '/replays', { from: '2020-01-01T00:00:00Z', to: '2020-01-02T00:00:00Z' });
    expect(replay.status).toBe(202);
    b.replayJob = [replay.body.id];
    secretsOfB.push(`${tag}.b.type`, `${tag}-event-type-b`, `${tag}-schema-b`);
    secretsOfB.push(`${tag} B good`, `${tag} B failing`, `${tag} B ingester`, `${tag} B flow`, `${tag} B payload`, `${tag}-payload-b`, `${tag}-b-good`, `${tag}-b-failing`, ingesterSecret, good.body.signing_secret, bad.body.signing_secret);
    const shown = await asB('GET', `/ingesters/${ingester.body.id}`);
    secretsOfB.push(String(shown.body.config.signing_secret));

    // deliveries: each webhook goes to the good destination (delivered) and the failing one (dead);
    // the first one dies before the next ones give the failing destination's breaker its attempts
    const events: string[] = [];
    const send = async (i: number) => {
      const body = JSON.stringify({ action: 'opened', marker: `${tag}-event-b`, n: i });
      const res = await fetch(`${svc.url}/v1/hooks/${ingester.body.id}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-github-event': 'issues', 'x-github-delivery': `${tag}-gh-${i}`, 'x-hub-signature-256': await sign(ingesterSecret, body) },
        body,
      });
      expect(res.status).toBe(202);
      events.push(((await res.json()) as Json).event_id);
    };
    await send(0);
    const rows = await waitForStates(svc, events[0]!, ['delivered', 'dlq_queued'], 60_000);
    await send(1);
    await send(2);
    b.event = events;
    secretsOfB.push(`${tag}-event-b`, `${tag}-gh-0`);
    deliveredB = rows.find((r) => r.state === 'delivered')!.delivery_id;
    deadB = rows.find((r) => r.state === 'dlq_queued')!.delivery_id;
    b.delivery = [deliveredB, deadB];
    const status = await svc.api('GET', `/v1/mcp/deliveries/${deliveredB}/status`, undefined, { key: keyB });
    expect(status.status).toBe(200);
    for (const t of JSON.stringify(status.body).match(/cor_[0-9a-z]{26}/g) ?? []) (b.correlation ??= []).push(t);
    await eventually('evidence of B', async () => {
      const e = await asB('GET', `/evidence/${deliveredB}`);
      return e.status === 200 && e.body.status === 'confirmed' ? e : undefined;
    }, 60_000);
    const logs = await eventually('log lines of B', async () => {
      const l = await svc.api('GET', `/v1/mcp/logs/${bad.body.id}`, undefined, { key: keyB });
      return l.status === 200 && l.body.logs.length > 0 ? l : undefined;
    }, 60_000);
    for (const t of JSON.stringify(logs.body).match(/(log|req|cor)_[0-9a-z]{26}/g) ?? []) {
      const kind = PREFIX_KIND[t.slice(0, 3)]!;
      if (!(b[kind] ?? []).includes(t)) (b[kind] ??= []).push(t);
    }
    // B's breaker is open and on the board, where the proofs read it
    const clientB = await connect(svc.url, keyB);
    try {
      await eventually('B breaker open', async () => {
        const r = (await clientB.callTool({ name: 'list_runtime_proofs', arguments: { ids: ['PROOF-003'] } })) as { content: { text: string }[] };
        const text = r.content[0]?.text ?? '';
        return text.includes(failingDestinationB) ? text : undefined;
      }, 60_000);
    } finally {
      await clientB.close();
    }

    // a dead letter of B: its ingester's stored filters no longer compile (a lookahead, as an older
    // version could store it), so the filter stage sets the event aside
    const lettered = await asB('POST', '/ingesters', { name: `${tag} B lettered`, provider: 'github', config: { signing_secret: ingesterSecret }, filters: [{ type: 'header', name: 'x-tag', op: 'matches', pattern: '^t' }] });
    expect(lettered.status).toBe(201);
    b.ingester.push(lettered.body.id);
    await svc.service.store.put({ ...svc.service.store.get('ingester', tenantB(), lettered.body.id)!, filters: [{ type: 'header', name: 'x-tag', op: 'matches', pattern: '^t(?=a)' }] });
    const letteredBody = JSON.stringify({ action: 'opened', marker: `${tag}-dead-letter-b` });
    const letteredRes = await fetch(`${svc.url}/v1/hooks/${lettered.body.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-tag': 'ta', 'x-github-event': 'issues', 'x-github-delivery': `${tag}-gh-lettered`, 'x-hub-signature-256': await sign(ingesterSecret, letteredBody) },
      body: letteredBody,
    });
    expect(letteredRes.status).toBe(202);
    const letteredEvent = ((await letteredRes.json()) as Json).event_id as string;
    b.event.push(letteredEvent);
    const letterB = await eventually('the dead letter of B', async () => ((await asB('GET', '/dead-letters')).body.dead_letters as Json[]).find((l) => l.event_id === letteredEvent), 60_000);
    b.deadLetter = [letterB.id];
    secretsOfB.push(`${tag} B lettered`, `${tag}-dead-letter-b`, `${tag}-gh-lettered`);

    // a portal session of B, whose link code A must never see
    const sessionB = await asB('POST', '/portal-sessions', {});
    expect(sessionB.status).toBe(201);
    b.portalSession = [sessionB.body.id];
    secretsOfB.push(String(sessionB.body.url).split('#portal=')[1]!);

    // tenant A: its own objects beside, and a portal session with every scope a portal may hold
    const own = await svc.api('POST', `/v1/tenants/${svc.tenantId}/destinations`, { name: 'A own', url: `${ok.url}/a` });
    expect(own.status).toBe(201);
    const portalScopes = ['read:destinations', 'write:destinations', 'read:flows', 'read:deliveries', 'read:events', 'write:events', 'read:evidence', 'read:logs', 'read:payloads', 'write:payloads', 'read:operations', 'read:event-types', 'write:event-types', 'read:replays', 'write:replays', 'read:stats'];
    const sessionA = await svc.api('POST', `/v1/tenants/${svc.tenantId}/portal-sessions`, { scopes: portalScopes });
    expect(sessionA.status).toBe(201);
    const opened = await fetch(`${svc.url}/v1/portal/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: String(sessionA.body.url).split('#portal=')[1] }) });
    expect(opened.status).toBe(200);
    portalCookieA = /hookline_portal=([^;]+)/.exec(opened.headers.get('set-cookie') ?? '')![1]!;
    Object.assign(doc, (await svc.api('GET', '/v1/openapi.json')).body);
  }, 180_000);

  afterAll(async () => {
    await Promise.all([svc?.stop(), ok?.close(), failing?.close()]);
  });

  /** A JSON value for a schema: id members name B's objects, everything else is plausible. */
  function valueFor(schemaIn: Json | undefined, name: string, deref: (s: Json) => Json): unknown {
    const schema = schemaIn ? deref(schemaIn) : {};
    const kind = kindOfName(name);
    if (kind && schema.type !== 'object') {
      const id = idsOfB(kind)[0];
      if (!id) throw new Error(`no object of tenant B for member ${name}`);
      return /_ids$/.test(name) || schema.type === 'array' ? [id] : id;
    }
    if (schema.const !== undefined) return schema.const;
    if (Array.isArray(schema.enum)) return schema.enum[0];
    const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== 'null') : schema.type;
    const variants = schema.oneOf ?? schema.anyOf;
    if (!type && Array.isArray(variants)) return valueFor(variants[0], name, deref);
    switch (type) {
      case 'object': {
        const out: Json = {};
        for (const [k, v] of Object.entries((schema.properties ?? {}) as Json)) {
          // members the service sets (shown by a GET, ignored in a body) are no input to walk
          if ((v as Json)?.readOnly === true) continue;
          if ((schema.required ?? []).includes(k) || kindOfName(k)) out[k] = valueFor(v, k, deref);
        }
        return out;
      }
      case 'array':
        return (schema.minItems ?? 0) > 0 ? [valueFor(schema.items, name, deref)] : [];
      case 'integer':
      case 'number':
        return schema.minimum ?? 1;
      case 'boolean':
        return true;
      case 'string':
        return schema.format === 'uri' || name === 'url' ? `${ok.url}/a-write` : name === 'provider' ? 'github' : `a-${name}`;
      default:
        return {};
    }
  }

  it('REST: every operation of the document refuses B and discloses nothing of B', async () => {
    credential = { key: keyA };
    await walkRest();
  }, 120_000);

  it("REST in A's portal session: every operation refuses B and discloses nothing of B", async () => {
    credential = { cookie: portalCookieA };
    // the session works: A's own tenant answers
    expect((await raw('GET', `/v1/tenants/${svc.tenantId}/destinations`)).status).toBe(200);
    await walkRest();
  }, 120_000);

  async function walkRest(): Promise<void> {
    const deref = (s: Json): Json => {
      let out = s;
      while (out && typeof out.$ref === 'string') out = out.$ref.replace(/^#\//, '').split('/').reduce((o: Json, k: string) => o[k], doc);
      return out;
    };
    const paths = doc.paths as Json;
    expect(Object.keys(paths).length).toBeGreaterThan(10);
    for (const [template, item] of Object.entries(paths)) {
      for (const method of METHODS) {
        const op = item[method] as Json | undefined;
        if (!op) continue;
        const opName = `${method.toUpperCase()} ${template}`;
        // the MCP transport itself is walked through the SDK client below
        if (template === '/v1/mcp' && method !== 'get') continue;
        // signing out would end the session the walk goes on with; the key's walk covers it
        if ('cookie' in credential && template === '/v1/portal/session') continue;
        const params = [...((item.parameters ?? []) as Json[]), ...((op.parameters ?? []) as Json[])].map(deref);
        const pathParams = params.filter((p) => p.in === 'path').map((p) => String(p.name));
        // every combination: tenant A's and B's tenant path, each B object of the named kind
        let variants: { path: string; namesB: boolean }[] = [{ path: template, namesB: false }];
        for (const p of pathParams) {
          const next: typeof variants = [];
          for (const v of variants) {
            const fills: { value: string; isB: boolean }[] =
              p === 'tenant_id'
                ? [{ value: svc.tenantId, isB: false }, { value: tenantB(), isB: true }]
                : (() => {
                    const kind = kindOfName(p);
                    if (!kind) throw new Error(`${opName}: the walk cannot fill path parameter {${p}}`);
                    const ids = idsOfB(kind);
                    if (ids.length === 0) throw new Error(`${opName}: tenant B has no object for {${p}}`);
                    return ids.map((value) => ({ value, isB: true }));
                  })();
            for (const f of fills) next.push({ path: v.path.replace(`{${p}}`, encodeURIComponent(f.value)), namesB: v.namesB || f.isB });
          }
          variants = next;
        }
        const queryIds = params.filter((p) => p.in === 'query' && kindOfName(String(p.name)));
        const bodySchema = op.requestBody ? deref(op.requestBody).content?.['application/json']?.schema : undefined;
        const body = bodySchema ? valueFor(bodySchema, 'body', deref) : undefined;
        const bodyNamesB = body !== undefined && forbidden().some((s) => JSON.stringify(body).includes(s));
        const isPublic = Array.isArray(op.security) && op.security.length === 0;
        for (const v of variants) {
          const attempts = [v.path, ...queryIds.map((q) => `${v.path}?${q.name}=${encodeURIComponent(idsOfB(kindOfName(String(q.name))!)[0]!)}`)];
          for (const path of attempts) {
            const res = await raw(method.toUpperCase(), path, body);
            const where = `${opName} as ${path}`;
            expectNoLeak(where, `${path} ${JSON.stringify(body ?? '')}`, res.all);
            // the public ingress accepts webhooks for any Hook URL by design; it only must not tell anything
            if (isPublic) continue;
            // the operators' routes: no tenant's credential passes, whichever tenant the path names
            if (op['x-operator'] === true) {
              if (res.status < 400) throw new Error(`${where}: ${res.status}, a success with a tenant's credential`);
              continue;
            }
            if (path.includes(`/tenants/${encodeURIComponent(tenantB())}`)) {
              if (res.status !== 404) throw new Error(`${where}: ${res.status} instead of 404\n${res.text.slice(0, 500)}`);
              continue;
            }
            if (!v.namesB && !bodyNamesB && !path.includes('?')) continue;
            // B's object answers exactly as an object that does not exist; a write naming it never succeeds
            const twinBody = body === undefined ? undefined : (JSON.parse(unknownTwin(JSON.stringify(body))) as unknown);
            const twin = await raw(method.toUpperCase(), unknownTwin(path), twinBody);
            if (twin.status !== res.status || (res.status < 300 && comparable(res.text) !== comparable(twin.text))) {
              throw new Error(`${where}: B's object answers ${res.status} ${res.text.slice(0, 300)}\nan unknown one ${twin.status} ${twin.text.slice(0, 300)}`);
            }
            if (bodyNamesB && method !== 'get' && res.status < 400) throw new Error(`${where} with B's ids in the body: ${res.status}, a success`);
          }
        }
        exercised.add(opName);
      }
    }
  }

  it('MCP: every tool, resource and prompt refuses B and discloses nothing of B', async () => {
    const client = await connect(svc.url, keyA);
    try {
      const { tools } = await client.listTools();
      expect(tools.length).toBeGreaterThan(10);
      for (const tool of tools) {
        const schema = tool.inputSchema as Json;
        const idMembers = Object.keys(schema.properties ?? {}).filter((k) => kindOfName(k));
        const base = valueFor(schema, tool.name, (s) => s) as Json;
        // each B object of each kind in the id members; a tool without ids runs once as it is
        const variants: Json[] = idMembers.length === 0 ? [base] : idMembers.flatMap((m) => idsOfB(kindOfName(m)!).map((id) => ({ ...base, [m]: /_ids$/.test(m) ? [id] : id })));
        for (const args of variants) {
          const result = (await client.callTool({ name: tool.name, arguments: args })) as { isError?: boolean; content: unknown };
          const answer = JSON.stringify(result);
          expectNoLeak(`tool ${tool.name}`, JSON.stringify(args), answer);
          if (idMembers.length === 0) continue;
          const twin = (await client.callTool({ name: tool.name, arguments: JSON.parse(unknownTwin(JSON.stringify(args))) as Json })) as { isError?: boolean; content: unknown };
          const same = Boolean(twin.isError) === Boolean(result.isError) && (Boolean(result.isError) || comparable(answer) === comparable(JSON.stringify(twin)));
          if (!same) throw new Error(`tool ${tool.name} with B's ids ${JSON.stringify(args)} answers ${answer.slice(0, 300)}\nwith unknown ids ${JSON.stringify(twin).slice(0, 300)}`);
          if (result.isError) expect(JSON.stringify(twin).match(/\\"status\\":(\d+)/)?.[1]).toBe(answer.match(/\\"status\\":(\d+)/)?.[1]);
          else if (tool.annotations?.readOnlyHint === false) throw new Error(`tool ${tool.name} changed something with B's ids ${JSON.stringify(args)}`);
        }
        exercised.add(`tool ${tool.name}`);
      }
      const caps = client.getServerCapabilities() ?? {};
      if (caps.resources) {
        for (const r of (await client.listResources()).resources) {
          expectNoLeak(`resource ${r.uri}`, '', JSON.stringify(await client.readResource({ uri: r.uri })));
        }
      }
      if (caps.prompts) {
        for (const p of (await client.listPrompts()).prompts) expectNoLeak(`prompt ${p.name}`, '', JSON.stringify(p));
      }
    } finally {
      await client.close();
    }
  }, 120_000);

  it('CLI: evidence verify with A\'s key reaches no delivery of B', async () => {
    for (const tenant of [svc.tenantId, tenantB()]) {
      for (const delivery of [deliveredB, deadB]) {
        const r = await runScript('cli/main.ts', ['evidence', 'verify', delivery, '--tenant', tenant, '--api-url', svc.url, '--state', join(svc.config.dataDir, 'iso-state.json')], { ...process.env, HOOKLINE_API_KEY: keyA });
        expect(r.code).not.toBe(0);
        expectNoLeak(`cli evidence verify ${delivery} --tenant ${tenant}`, `${delivery} ${tenant}`, `${r.stdout}\n${r.stderr}`);
      }
    }
  }, 120_000);

  it('analytics: A\'s figures, grouped every way, count nothing of B and name nothing of B', async () => {
    const range = `from=${new Date(Date.now() - 86_400_000).toISOString()}&bucket=minute`;
    for (const groupBy of ['destination', 'event_type', 'ingester', 'response_code']) {
      const res = await raw('GET', `/v1/tenants/${svc.tenantId}/analytics?${range}&group_by=${groupBy}`);
      expect(res.status).toBe(200);
      expectNoLeak(`analytics group_by=${groupBy}`, '', res.all);
    }
    // B's attempts are in B's figures only
    const own = (await svc.api('GET', `/v1/tenants/${tenantB()}/analytics?${range}`, undefined, { key: keyB })).body;
    expect(own.totals.attempts).toBeGreaterThan(0);
    const mine = JSON.parse((await raw('GET', `/v1/tenants/${svc.tenantId}/analytics?${range}&destination_id=${encodeURIComponent(failingDestinationB)}`)).text) as Json;
    expect(mine.totals.attempts).toBe(0);
  });

  it('exports: A\'s rows of every kind, uncompressed (the Parquet walk above cannot be read for names), hold nothing of B; B\'s hold its own', async () => {
    for (const kind of ['deliveries', 'events', 'logs']) {
      const queries = kind === 'deliveries' ? ['format=ndjson', `format=csv&destination_id=${encodeURIComponent(failingDestinationB)}`] : ['format=ndjson', 'format=csv'];
      for (const query of queries) {
        const res = await raw('GET', `/v1/tenants/${svc.tenantId}/exports/${kind}?${query}`);
        expect({ kind, query, status: res.status }).toEqual({ kind, query, status: 200 });
        expectNoLeak(`export ${kind} ${query}`, query, res.all);
      }
      const own = await svc.api('GET', `/v1/tenants/${tenantB()}/exports/${kind}?format=ndjson`, undefined, { key: keyB });
      expect({ kind, status: own.status }).toEqual({ kind, status: 200 });
      expect(String(typeof own.body === 'string' ? own.body : JSON.stringify(own.body)).length).toBeGreaterThan(0);
    }
  });

  it('metrics, when the service has them, name nothing of B', async () => {
    const res = await raw('GET', '/metrics');
    if (res.status === 200) expectNoLeak('GET /metrics', '', res.all);
    else expect(res.status).toBe(404);
  });

  it('walked every operation of the document and every tool', async () => {
    const client = await connect(svc.url, keyA);
    try {
      const expected = [
        ...Object.entries(doc.paths as Json).flatMap(([t, item]) => METHODS.filter((m) => item[m] && !(t === '/v1/mcp' && m !== 'get')).map((m) => `${m.toUpperCase()} ${t}`)),
        ...(await client.listTools()).tools.map((t) => `tool ${t.name}`),
      ];
      expect(expected.filter((e) => !exercised.has(e))).toEqual([]);
    } finally {
      await client.close();
    }
  });
});
