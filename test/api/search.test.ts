import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { runScript } from '../support/process';
import { startReceiver, type Receiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';

/**
 * Searching delivery attempts: real deliveries to receivers that answer with distinct status
 * codes and bodies, then every filter of GET .../deliveries alone and combined, paging with
 * filters, the refusals, the start of the response body in the attempt view, and the same
 * search through MCP (SDK client) and the CLI (child process).
 */

type Json = Record<string, any>;

/** How the receivers answer: by the `kind` of the event body they are sent. */
function answerOf(body: Buffer): { status: number; body: string } {
  const event = JSON.parse(body.toString('utf8')) as { kind: string; n: number };
  switch (event.kind) {
    case 'boom':
      return { status: 503, body: `Upstream EXPLODED ref-${event.n}` };
    case 'trouble':
      return { status: 500, body: 'Internal Trouble' };
    case 'gone':
      return { status: 404, body: 'no such hook' };
    case 'long':
      // 5000 bytes whose 4096th byte is inside a two-byte character
      return { status: 200, body: `${'a'.repeat(4095)}é${'b'.repeat(4903)}` };
    default:
      return { status: 200, body: `accepted order ${event.n}` };
  }
}

describe('deliveries search', () => {
  let svc: TestService;
  let receiverA: Receiver;
  let receiverB: Receiver;
  let destA = '';
  let destB = '';
  let destC = '';
  /** Every attempt of the test tenant, newest first, as the unfiltered list shows them. */
  let all: Json[] = [];
  const base = () => `/v1/tenants/${svc.tenantId}/deliveries`;
  const list = async (query: string, key?: string) => svc.api('GET', `${base()}?${query}`, undefined, key ? { key } : {});
  const ids = (items: Json[]) => items.map((d) => `${d.id}/${d.attempt_number}`);
  const withN = (n: number) => (d: Json) => d.n === n;
  const byEvent = (kind: string) => (d: Json) => d.kind === kind;

  async function flow(name: string, url: string): Promise<{ dest: string; hook: string }> {
    const dest = await svc.api('POST', `/v1/tenants/${svc.tenantId}/destinations`, { name, url, retry_schedule_ms: [0] });
    expect(dest.status).toBe(201);
    const ing = await svc.api('POST', `/v1/tenants/${svc.tenantId}/ingesters`, { name: `${name} in`, provider: 'none', config: { event_type_field: 'type' }, destination_ids: [dest.body.id] });
    expect(ing.status).toBe(201);
    return { dest: dest.body.id as string, hook: `${svc.url}/v1/hooks/${ing.body.id}` };
  }

  async function send(hook: string, body: Json): Promise<string> {
    const res = await fetch(hook, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(res.status).toBe(202);
    return ((await res.json()) as { event_id: string }).event_id;
  }

  /** Event id -> the body it was sent with, to read the results by. */
  const sentBodies = new Map<string, Json>();

  beforeAll(async () => {
    [svc, receiverA, receiverB] = await Promise.all([startTestService({ RATE_LIMITS: 'default=10000/60s' }), startReceiver(), startReceiver()]);
    for (const r of [receiverA, receiverB]) r.respondBy((req) => answerOf(req.body));
    // nobody listens at C: its attempts get no answer
    const closed = await startReceiver();
    await closed.close();
    const a = await flow('search A', receiverA.url);
    const b = await flow('search B', receiverB.url);
    const c = await flow('search C', closed.url);
    [destA, destB, destC] = [a.dest, b.dest, c.dest];
    const sent: [string, Json][] = [
      [a.hook, { type: 'order.paid', kind: 'ok', n: 1 }],
      [a.hook, { type: 'order.paid', kind: 'ok', n: 2 }],
      [a.hook, { type: 'order.failed', kind: 'boom', n: 3 }],
      [a.hook, { type: 'order.failed', kind: 'boom', n: 4 }],
      [a.hook, { type: 'invoice.sent', kind: 'gone', n: 5, note: 'Needle-In-Request' }],
      [b.hook, { type: 'order.paid', kind: 'ok', n: 6, note: 'discount 50%_off' }],
      [b.hook, { type: 'order.paid', kind: 'long', n: 7 }],
      [b.hook, { type: 'invoice.sent', kind: 'trouble', n: 8 }],
      [c.hook, { type: 'order.paid', kind: 'nobody', n: 9 }],
    ];
    for (const [hook, body] of sent) sentBodies.set(await send(hook, body), body);
    all = await eventually('every attempt in the list', async () => {
      const res = await list('limit=200');
      return res.status === 200 && res.body.deliveries.length === sent.length ? (res.body.deliveries as Json[]) : undefined;
    });
    for (const d of all) Object.assign(d, { kind: sentBodies.get(d.event_id)!.kind, n: sentBodies.get(d.event_id)!.n });
  }, 60_000);

  afterAll(async () => {
    await Promise.all([svc?.stop(), receiverA?.close(), receiverB?.close()]);
  });

  it('lists each attempt with its event type, newest first', () => {
    expect(all.map((d) => d.kind).sort()).toEqual(['boom', 'boom', 'gone', 'long', 'nobody', 'ok', 'ok', 'ok', 'trouble']);
    const sorted = [...all].sort((x, y) => (x.attempted_at < y.attempted_at ? 1 : x.attempted_at > y.attempted_at ? -1 : 0));
    expect(all.map((d) => d.attempted_at)).toEqual(sorted.map((d) => d.attempted_at));
    expect(all.find(byEvent('gone'))).toMatchObject({ destination_id: destA, event_type: 'invoice.sent', status: 'failed', response_code: 404 });
    expect(all.find(byEvent('nobody'))).toMatchObject({ destination_id: destC, event_type: 'order.paid', status: 'failed', response_code: null });
  });

  it('filters by each parameter alone', async () => {
    const expectFilter = async (query: string, keep: (d: Json) => boolean) => {
      const res = await list(query);
      expect({ query, status: res.status }).toEqual({ query, status: 200 });
      expect(ids(res.body.deliveries)).toEqual(ids(all.filter(keep)));
      expect(res.body.deliveries.length).toBeGreaterThan(0);
      expect(res.body.deliveries.length).toBeLessThan(all.length);
    };
    await expectFilter('status=failed', (d) => d.status === 'failed');
    await expectFilter(`destination_id=${destB}`, (d) => d.destination_id === destB);
    await expectFilter('event_type=invoice.sent', (d) => d.event_type === 'invoice.sent');
    await expectFilter('response_code=5xx', (d) => d.response_code >= 500 && d.response_code < 600);
    await expectFilter('response_code=503', (d) => d.response_code === 503);
    await expectFilter('response_code=2XX', (d) => d.response_code >= 200 && d.response_code < 300);
    // from inclusive, to exclusive: the times of the 3rd and 7th newest attempts
    const from = all[6]!.attempted_at as string;
    const to = all[2]!.attempted_at as string;
    await expectFilter(`from=${from}`, (d) => d.attempted_at >= from);
    await expectFilter(`to=${to}`, (d) => d.attempted_at < to);
    await expectFilter(`from=${from}&to=${to}`, (d) => d.attempted_at >= from && d.attempted_at < to);
    // an offset names the same instant
    const shifted = new Date(Date.parse(from) + 2 * 3_600_000).toISOString().replace('Z', '+02:00');
    await expectFilter(`from=${encodeURIComponent(shifted)}`, (d) => d.attempted_at >= from);
    // the key filter stays: a key limited to A finds nothing of B
    const limited = await svc.newKey(['read:deliveries'], { resourceIds: [destA] });
    expect((await list(`destination_id=${destB}`, limited)).body.deliveries).toEqual([]);
    expect(ids((await list('response_code=5xx', limited)).body.deliveries)).toEqual(ids(all.filter(byEvent('boom'))));
  });

  it('finds text in the response body start or the request body, ignoring case', async () => {
    const text = async (q: string) => ids((await list(`q=${encodeURIComponent(q)}`)).body.deliveries);
    expect(await text('exploded')).toEqual(ids(all.filter(byEvent('boom'))));
    expect(await text('EXPLODED REF-4')).toEqual(ids(all.filter(withN(4))));
    expect(await text('needle-in-request')).toEqual(ids(all.filter(byEvent('gone'))));
    expect(await text('accepted order')).toEqual(ids(all.filter(byEvent('ok'))));
    // "order." is in the type inside the request bodies of the order events only
    expect(await text('ORDER.')).toEqual(ids(all.filter((d) => d.event_type !== 'invoice.sent')));
    // LIKE's own characters are text
    expect(await text('50%_off')).toEqual(ids(all.filter((d) => d.kind === 'ok' && d.destination_id === destB)));
    expect(await text('%')).toEqual(ids(all.filter((d) => d.kind === 'ok' && d.destination_id === destB)));
    expect(await text('no such text anywhere')).toEqual([]);
    // past the first 4 KiB of the answer nothing is kept
    expect(await text('bbbb')).toEqual([]);
  });

  it('combines filters', async () => {
    const res = await list(`status=failed&destination_id=${destA}&response_code=5xx&event_type=order.failed&q=ref-3`);
    expect(ids(res.body.deliveries)).toEqual(ids(all.filter(withN(3))));
    expect(ids((await list(`destination_id=${destB}&event_type=invoice.sent&response_code=500`)).body.deliveries)).toEqual(ids(all.filter(byEvent('trouble'))));
    expect((await list(`destination_id=${destB}&event_type=order.failed`)).body.deliveries).toEqual([]);
    const to = all[all.length - 1]!.attempted_at as string;
    expect((await list(`to=${to}&event_type=order.paid`)).body.deliveries).toEqual([]);
  });

  it('pages through filtered results with cursors bound to their filters', async () => {
    const walk = async (query: string) => {
      const seen: Json[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res = await list(`${query}&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        expect(res.status).toBe(200);
        expect(res.body.deliveries.length).toBeLessThanOrEqual(2);
        seen.push(...res.body.deliveries);
        cursor = res.body.next_cursor;
        pages++;
      } while (cursor && pages < 10);
      return { seen, pages };
    };
    const paid = await walk('event_type=order.paid');
    expect(ids(paid.seen)).toEqual(ids(all.filter((d) => d.event_type === 'order.paid')));
    expect(paid.pages).toBe(3);
    const failing = await walk('status=failed&response_code=5xx');
    expect(ids(failing.seen)).toEqual(ids(all.filter((d) => d.status === 'failed' && d.response_code >= 500)));
    // "order" is in both bodies of the ok attempts (request and answer): each comes once
    const texts = await walk('q=order');
    expect(ids(texts.seen)).toEqual(ids(all.filter((d) => d.event_type !== 'invoice.sent')));

    const first = await list('event_type=order.paid&limit=2');
    const cursor = first.body.next_cursor as string;
    const other = await list(`event_type=order.failed&limit=2&cursor=${cursor}`);
    expect(other.status).toBe(400);
    expect(other.body.errors).toEqual([{ field: 'cursor', message: 'does not match the filters of this request' }]);
    expect((await list(`event_type=order.paid&q=x&limit=2&cursor=${cursor}`)).status).toBe(400);
    expect((await list(`limit=2&cursor=${cursor}`)).status).toBe(400);
  });

  it('refuses bad values with 400 naming each parameter', async () => {
    const fields = async (query: string) => {
      const res = await list(query);
      expect({ query, status: res.status, type: res.body.type }).toEqual({ query, status: 400, type: `${svc.config.errorBase}/errors/validation-error` });
      return (res.body.errors as { field: string }[]).map((e) => e.field);
    };
    expect(await fields('from=yesterday')).toEqual(['from']);
    expect(await fields('to=2026-02-30T00:00:00Z')).toEqual(['to']);
    expect(await fields('from=2026-01-02')).toEqual(['from']);
    expect(await fields('from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z')).toEqual(['to']);
    expect(await fields('response_code=6xx')).toEqual(['response_code']);
    expect(await fields('response_code=20')).toEqual(['response_code']);
    expect(await fields('response_code=5x')).toEqual(['response_code']);
    expect(await fields('q=')).toEqual(['q']);
    expect(await fields(`q=${'a'.repeat(201)}`)).toEqual(['q']);
    expect(await fields('event_type=')).toEqual(['event_type']);
    expect(await fields(`destination_id=${destA}&destination_id=${destB}`)).toEqual(['destination_id']);
    expect(await fields('from=x&response_code=abc&q=')).toEqual(['from', 'response_code', 'q']);
    // status keeps its documented answer, and other parameters are ignored as on every list
    expect((await list('status=lost')).status).toBe(422);
    expect((await list('colour=blue')).status).toBe(200);
    // the longest text is accepted
    expect((await list(`q=${'q'.repeat(200)}`)).body.deliveries).toEqual([]);
  });

  it('shows the start of each answer in the attempt view and the MCP status', async () => {
    const view = async (kind: string) => {
      const res = await svc.api('GET', `${base()}/${all.find(byEvent(kind))!.id}`);
      expect(res.status).toBe(200);
      return res.body.attempts[0] as Json;
    };
    const boom = all.find(byEvent('boom'))!;
    expect((await view('boom')).response_body).toBe(`Upstream EXPLODED ref-${boom.n}`);
    expect((await view('ok')).response_body).toMatch(/^accepted order \d$/);
    expect((await view('nobody')).response_body).toBeNull();
    // 4096 bytes kept; the cut character becomes U+FFFD
    expect((await view('long')).response_body).toBe(`${'a'.repeat(4095)}\ufffd`);
    const status = await svc.api('GET', `/v1/mcp/deliveries/${all.find(byEvent('gone'))!.id}/status`);
    expect(status.body.last_attempt).toMatchObject({ response_code: 404, response_body: 'no such hook' });
  });

  it('searches through the MCP list_deliveries tool', async () => {
    const client = new Client({ name: 'hookline-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/v1/mcp`), { requestInit: { headers: { authorization: `Bearer ${svc.apiKey}` } } }));
    try {
      const result = (await client.callTool({ name: 'list_deliveries', arguments: { response_code: '5xx', q: 'exploded', destination_id: destA, limit: 1 } })) as { isError?: boolean; structuredContent?: Json };
      expect(result.isError).toBeFalsy();
      const boom = all.filter(byEvent('boom'));
      expect(ids(result.structuredContent!.deliveries)).toEqual(ids(boom.slice(0, 1)));
      const next = (await client.callTool({ name: 'list_deliveries', arguments: { response_code: '5xx', q: 'exploded', destination_id: destA, limit: 1, cursor: result.structuredContent!.next_cursor } })) as { structuredContent?: Json };
      expect(ids(next.structuredContent!.deliveries)).toEqual(ids(boom.slice(1, 2)));
      const typed = (await client.callTool({ name: 'list_deliveries', arguments: { event_type: 'invoice.sent', from: all[all.length - 1]!.attempted_at } })) as { structuredContent?: Json };
      expect(ids(typed.structuredContent!.deliveries)).toEqual(ids(all.filter((d) => d.event_type === 'invoice.sent')));
      const refused = (await client.callTool({ name: 'list_deliveries', arguments: { response_code: '7xx' } })) as { isError?: boolean };
      expect(refused.isError).toBe(true);
    } finally {
      await client.close();
    }
  });

  it('searches through the CLI, and shows a delivery with the trace id of each attempt', async () => {
    const env = { ...process.env, HOOKLINE_API_KEY: svc.apiKey, HOOKLINE_API_URL: svc.url, HOOKLINE_TENANT: svc.tenantId };
    const filters = ['--status', 'failed', '--destination', destA, '--event-type', 'order.failed', '--from', all[all.length - 1]!.attempted_at, '--to', '2100-01-01T00:00:00Z', '--text', 'EXPLODED'];
    const r = await runScript('cli/main.ts', ['search', ...filters, '--http-status', '5xx', '--limit', '1'], env);
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split('\n')).toHaveLength(1);
    const page = JSON.parse(r.stdout) as Json;
    expect(ids(page.deliveries)).toEqual(ids(all.filter(byEvent('boom')).slice(0, 1)));
    expect(typeof page.next_cursor).toBe('string');
    // each attempt with its trace id: the one its destination was sent in `traceparent`
    const first = page.deliveries[0] as Json;
    const n = all.find((d) => d.id === first.id)!.n as number;
    const sentWith = receiverA.requests.find((q) => (JSON.parse(q.body.toString('utf8')) as Json).n === n)!;
    expect(first.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(first.trace_id).toBe(String(sentWith.headers.traceparent).slice(3, 35));
    // and the delivery with every attempt, where one follows a trace from
    const shown = await runScript('cli/main.ts', ['deliveries', 'get', first.id], env);
    expect(shown.code).toBe(0);
    expect(shown.stdout.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: first.id, status: 'failed', trace_id: first.trace_id, attempts: [{ attempt_number: 1, response_code: 503, trace_id: first.trace_id }] });
    const usage = await runScript('cli/main.ts', ['deliveries', 'get'], env);
    expect(usage.code).toBe(1);
    expect(usage.stderr).toMatch(/deliveries get <delivery id>/);
    // the cursor goes back as it came; with other filters the API refuses it, in one line
    const bad = await runScript('cli/main.ts', ['search', ...filters, '--http-status', '503', '--limit', '1', '--cursor', String(page.next_cursor)], env);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toBe('');
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).toMatch(/^400 validation-error: .*cursor: does not match the filters of this request/);
  }, 90_000);
});
