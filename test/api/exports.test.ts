import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import express from 'express';
import { sendExport } from '../../api/routes/exports';
import { REPO_ROOT } from '../support/process';
import { destinationWithIngester, sendEvent } from '../support/flow';
import { startReceiver, type Receiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';

/**
 * GET .../exports/{deliveries,events,logs} against the running service, with deliveries made
 * through Hook URLs to real receivers: each format of each kind read back (Parquet by hyparquet,
 * CSV by a parser here) and compared member by member with the API's JSON for the same rows;
 * a cursor walk while rows are being added; the filters; the bounds and refusals; isolation;
 * and an answer cut short mid-stream.
 */

type Json = Record<string, any>;
type Kind = 'deliveries' | 'events' | 'logs';

/** Parquet bytes as rows, read by hyparquet in a child process (an ES module that jest's CommonJS runtime cannot load); times as RFC 3339. */
function readParquet(bytes: Buffer): Promise<Json[]> {
  const dir = mkdtempSync(path.join(tmpdir(), 'parquet-'));
  const file = path.join(dir, 'page.parquet');
  writeFileSync(file, bytes);
  const script = `import { readFileSync } from 'node:fs';
    import { parquetReadObjects } from 'hyparquet';
    const b = readFileSync(process.argv[1]);
    const rows = await parquetReadObjects({ file: b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) });
    process.stdout.write(JSON.stringify(rows, (k, v) => (typeof v === 'bigint' ? Number(v) : v)));`;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', script, file], { cwd: REPO_ROOT, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      rmSync(dir, { recursive: true, force: true });
      if (err) return reject(new Error(`${err.message}\n${stderr}`));
      resolve(JSON.parse(stdout) as Json[]);
    });
  });
}

/** RFC 4180 text as records of fields (quoted fields may hold commas, quotes and line breaks). */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let field = '';
  let record: string[] = [];
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (field += '"'), i++;
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') record.push(field), (field = '');
    else if (c === '\n') record.push(field), records.push(record), (record = []), (field = '');
    else field += c;
  }
  if (field !== '' || record.length > 0) record.push(field), records.push(record);
  return records;
}

const NUMBERS = new Set(['response_code', 'attempt_number', 'body_bytes']);
const BOOLEANS = new Set(['body_truncated', 'body_verified', 'body_expired']);
/** CSV records (header first) as rows typed as the JSON rows are: empty fields null. */
function csvRows(text: string): Json[] {
  const [header, ...records] = parseCsv(text);
  return records.map((r) => Object.fromEntries(header!.map((name, i) => {
    const v = r[i]!;
    if (v === '') return [name, null];
    if (NUMBERS.has(name)) return [name, Number(v)];
    if (BOOLEANS.has(name)) return [name, v === 'true'];
    return [name, v];
  })));
}

const ndjsonRows = (text: string): Json[] => text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Json);

describe('exports', () => {
  let svc: TestService;
  let okReceiver: Receiver;
  let badReceiver: Receiver;
  let destA = '';
  let destB = '';
  let hookA = '';
  let hookB = '';
  const base = () => `/v1/tenants/${svc.tenantId}`;

  async function flow(name: string, url: string): Promise<{ dest: string; hook: string }> {
    const made = await destinationWithIngester(svc, name, url, { retry_schedule_ms: [0] }, { config: { event_type_field: 'type' } });
    return { dest: made.destinationId, hook: made.hookUrl };
  }
  const send = (hook: string, body: Json): Promise<string> => sendEvent(hook, body);

  /** One export request: status, headers and the raw bytes. */
  async function exportOf(kind: Kind, query = '', options: { key?: string; accept?: string; tenant?: string } = {}) {
    const headers: Record<string, string> = { authorization: `Bearer ${options.key ?? svc.apiKey}` };
    if (options.accept) headers.accept = options.accept;
    const res = await fetch(`${svc.url}/v1/tenants/${options.tenant ?? svc.tenantId}/exports/${kind}${query ? `?${query}` : ''}`, { headers });
    const bytes = Buffer.from(await res.arrayBuffer());
    return { status: res.status, headers: res.headers, bytes, text: bytes.toString('utf8'), json: () => JSON.parse(bytes.toString('utf8')) as Json };
  }

  /** The rows of an export in `format`, parsed. */
  async function rowsOf(kind: Kind, format: 'ndjson' | 'csv' | 'parquet', query = '', key?: string): Promise<Json[]> {
    const a = await exportOf(kind, `format=${format}${query ? `&${query}` : ''}`, key ? { key } : {});
    expect({ kind, format, status: a.status, text: a.status === 200 ? '' : a.text }).toEqual({ kind, format, status: 200, text: '' });
    if (format === 'ndjson') return ndjsonRows(a.text);
    if (format === 'csv') return csvRows(a.text);
    return a.bytes.length === 0 ? [] : readParquet(a.bytes);
  }

  /** What the API's JSON shows of the same rows, oldest first, as an export row has them. */
  async function apiRows(kind: Kind, query = ''): Promise<Json[]> {
    if (kind === 'deliveries') {
      const list = (await svc.api('GET', `${base()}/deliveries?limit=200${query ? `&${query}` : ''}`)).body.deliveries as Json[];
      return list.reverse().map((d) => ({ error_message: null, ...d }));
    }
    if (kind === 'logs') {
      const list = (await svc.api('GET', `${base()}/logs?limit=200${query ? `&${query}` : ''}`)).body.logs as Json[];
      return list.reverse().map((l) => ({ ...l, fields: JSON.stringify(l.fields) }));
    }
    const ids = (await rowsOf('events', 'ndjson', query)).map((e) => e.id as string);
    return Promise.all(ids.map(async (id) => (await svc.api('GET', `${base()}/events/${id}`)).body as Json));
  }

  /** Export rows with `fields` of log lines as parsed JSON, so that key order inside it does not matter. */
  const comparable = (rows: Json[]) => rows.map((r) => ('fields' in r ? { ...r, fields: JSON.parse(r.fields as string) } : r));

  beforeAll(async () => {
    [svc, okReceiver, badReceiver] = await Promise.all([startTestService({ RATE_LIMITS: 'default=10000/60s' }), startReceiver(), startReceiver()]);
    badReceiver.respondBy(() => ({ status: 500, body: 'Trouble, "quoted", with a comma' }));
    const a = await flow('export A', okReceiver.url);
    const b = await flow('export B', badReceiver.url);
    [destA, destB, hookA, hookB] = [a.dest, b.dest, a.hook, b.hook];
    for (let n = 1; n <= 5; n++) await send(hookA, { type: 'order.paid', n, note: n === 2 ? 'line\nbreak, "quote" é ✓' : `order ${n}` });
    for (let n = 6; n <= 8; n++) await send(hookB, { type: n === 8 ? 'invoice.sent' : 'order.paid', n });
    await eventually('every attempt recorded', async () => {
      const res = await svc.api('GET', `${base()}/deliveries?limit=200`);
      return res.body.deliveries?.length === 8 ? true : undefined;
    });
    await eventually('log lines of the deliveries', async () => ((await svc.api('GET', `${base()}/logs?limit=200`)).body.logs?.length > 0 ? true : undefined));
  }, 90_000);

  afterAll(async () => {
    await Promise.all([svc?.stop(), okReceiver?.close(), badReceiver?.close()]);
  });

  it.each(['deliveries', 'events', 'logs'] as Kind[])('%s: NDJSON, CSV and Parquet carry the rows of the API JSON, member by member, oldest first', async (kind) => {
    const expected = await apiRows(kind);
    expect(expected.length).toBeGreaterThan(kind === 'logs' ? 0 : 7);
    for (const format of ['ndjson', 'csv', 'parquet'] as const) {
      const rows = await rowsOf(kind, format);
      // the order and the member names are the API's; Parquet carries times as timestamps (here read back as RFC 3339)
      expect({ format, rows: comparable(rows).map((r) => Object.keys(r).sort()) }).toEqual({ format, rows: comparable(expected).map((r) => Object.keys(r).sort()) });
      expect({ format, rows: comparable(rows) }).toEqual({ format, rows: comparable(expected) });
    }
  });

  it('answers with the media type, a file name without the tenant, and the media type the Accept header prefers', async () => {
    const csv = await exportOf('deliveries', 'format=csv');
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8; header=present');
    expect(csv.headers.get('content-disposition')).toMatch(/^attachment; filename="deliveries-\d{8}T\d{6}Z\.csv"$/);
    expect(csv.headers.get('content-disposition')).not.toContain(svc.tenantId);
    expect(csv.headers.get('content-length')).toBeNull();
    expect(csv.text.split('\n')[0]).toBe('"id","event_id","destination_id","status","response_code","attempt_number","attempted_at","body_sha256","error_message","event_type","trace_id"');
    const parquet = await exportOf('events', '', { accept: 'text/html;q=0.9, application/vnd.apache.parquet' });
    expect(parquet.headers.get('content-type')).toBe('application/vnd.apache.parquet');
    expect(parquet.bytes.subarray(0, 4).toString()).toBe('PAR1');
    expect(parquet.headers.get('content-disposition')).toMatch(/^attachment; filename="events-\d{8}T\d{6}Z\.parquet"$/);
    const ndjson = await exportOf('logs', '', { accept: 'application/json' });
    expect(ndjson.headers.get('content-type')).toBe('application/x-ndjson; charset=utf-8');
    // format wins over Accept
    expect((await exportOf('logs', 'format=csv', { accept: 'application/x-ndjson' })).headers.get('content-type')).toMatch(/^text\/csv/);
  });

  it('walks pages by cursor: the same rows as one export, none twice, none lost, rows added meanwhile on a later page', async () => {
    const first = await exportOf('deliveries', 'format=ndjson&limit=3');
    expect(ndjsonRows(first.text)).toHaveLength(3);
    const cursor = first.headers.get('hookline-next-cursor')!;
    expect(cursor).toBeTruthy();
    expect(first.headers.get('link')).toBe(`</v1/tenants/${svc.tenantId}/exports/deliveries?limit=3&format=ndjson&cursor=${cursor}>; rel="next"`);
    // rows recorded while the walk goes on
    for (let n = 9; n <= 10; n++) await send(hookA, { type: 'order.paid', n });
    await eventually('the new attempts', async () => ((await svc.api('GET', `${base()}/deliveries?limit=200`)).body.deliveries.length === 10 ? true : undefined));
    const walked = [...ndjsonRows(first.text)];
    let link: string | null = first.headers.get('link');
    let pages = 1;
    while (link) {
      const next = /^<([^>]+)>; rel="next"$/.exec(link)![1]!;
      const res = await fetch(`${svc.url}${next}`, { headers: { authorization: `Bearer ${svc.apiKey}` } });
      expect(res.status).toBe(200);
      walked.push(...ndjsonRows(await res.text()));
      link = res.headers.get('link');
      expect(res.headers.get('hookline-next-cursor') === null).toBe(link === null);
      pages++;
    }
    expect(pages).toBe(4);
    const whole = ndjsonRows((await exportOf('deliveries', 'format=ndjson')).text);
    expect(whole).toHaveLength(10);
    const key = (r: Json) => `${r.id}/${r.attempt_number}`;
    expect(walked.map(key)).toEqual(whole.map(key));
    expect(new Set(walked.map(key)).size).toBe(10);
    // the format may change between pages, the filters may not
    const csvPage = await exportOf('deliveries', `format=csv&limit=3&cursor=${cursor}`);
    expect(csvRows(csvPage.text).map(key)).toEqual(whole.slice(3, 6).map(key));
    const other = await exportOf('deliveries', `status=failed&limit=3&cursor=${cursor}`);
    expect(other.status).toBe(400);
    expect(other.json().errors).toEqual([{ field: 'cursor', message: 'does not match the filters of this request' }]);
    // a cursor of one kind is no cursor of another
    expect((await exportOf('logs', `cursor=${cursor}`)).status).toBe(400);
    expect((await exportOf('deliveries', 'cursor=bm90IGEgY3Vyc29y')).json().errors).toEqual([{ field: 'cursor', message: 'is not a valid cursor' }]);
  });

  it('applies the filters of the lists', async () => {
    const expectSame = async (kind: Kind, query: string, keep: (r: Json) => boolean) => {
      const rows = await rowsOf(kind, 'ndjson', query);
      const all = await rowsOf(kind, 'ndjson');
      expect({ query, rows }).toEqual({ query, rows: all.filter(keep) });
      expect(rows.length).toBeGreaterThan(0);
      expect(rows.length).toBeLessThan(all.length);
    };
    await expectSame('deliveries', 'status=failed', (r) => r.status === 'failed');
    await expectSame('deliveries', `destination_id=${destA}`, (r) => r.destination_id === destA);
    await expectSame('deliveries', 'response_code=5xx', (r) => r.response_code >= 500);
    await expectSame('deliveries', 'event_type=invoice.sent', (r) => r.event_type === 'invoice.sent');
    await expectSame('deliveries', 'q=BREAK', isNote);
    await expectSame('deliveries', 'q=trouble', (r) => r.destination_id === destB);
    await expectSame('events', 'event_type=invoice.sent', (r) => r.event_type === 'invoice.sent');
    const all = await rowsOf('deliveries', 'ndjson');
    const from = all[3]!.attempted_at as string;
    const to = all[7]!.attempted_at as string;
    await expectSame('deliveries', `from=${from}&to=${to}`, (r) => r.attempted_at >= from && r.attempted_at < to);
    const events = await rowsOf('events', 'ndjson');
    await expectSame('events', `from=${events[2]!.received_at}`, (r) => r.received_at >= events[2]!.received_at);
    await expectSame('logs', 'level=warn', (r) => r.level === 'warn' || r.level === 'error');
    // the same as the lists answer
    expect((await rowsOf('deliveries', 'ndjson', 'status=failed&response_code=500')).map((r) => r.id)).toEqual((await apiRows('deliveries', 'status=failed&response_code=500')).map((r) => r.id));
  });
  /** The attempt of the event whose body has the note with quotes and a line break. */
  let notedEvent = '';
  const isNote = (r: Json) => r.event_id === notedEvent;
  beforeAll(async () => {
    const events = await eventually('the events', async () => {
      const rows = ndjsonRows((await exportOf('events', 'format=ndjson')).text);
      return rows.length >= 8 ? rows : undefined;
    });
    notedEvent = String(events.find((e) => String(e.body).includes('line\\nbreak'))!.id);
  });

  it('bounds the page and refuses bad values with 400 naming the parameter (an unknown status or level 422)', async () => {
    const fields = async (kind: Kind, query: string) => {
      const a = await exportOf(kind, query);
      expect({ query, status: a.status, type: a.json().type }).toEqual({ query, status: 400, type: `${svc.config.errorBase}/errors/validation-error` });
      return (a.json().errors as { field: string }[]).map((e) => e.field);
    };
    expect(await fields('deliveries', 'limit=0')).toEqual(['limit']);
    expect(await fields('deliveries', 'limit=100001')).toEqual(['limit']);
    expect(await fields('events', 'limit=10001')).toEqual(['limit']);
    expect(await fields('logs', 'limit=ten')).toEqual(['limit']);
    expect(await fields('deliveries', 'format=xml')).toEqual(['format']);
    expect(await fields('events', 'status=failed&q=x')).toEqual(['status', 'q']);
    expect(await fields('logs', 'event_type=x')).toEqual(['event_type']);
    expect(await fields('deliveries', 'from=yesterday')).toEqual(['from']);
    expect((await exportOf('deliveries', 'limit=100000')).status).toBe(200);
    expect((await exportOf('deliveries', 'status=lost')).status).toBe(422);
    expect((await exportOf('logs', 'level=loud')).status).toBe(422);
    // a page holds `limit` rows
    expect(ndjsonRows((await exportOf('events', 'limit=2')).text)).toHaveLength(2);
  });

  it('keeps tenants apart: another tenant\'s path is 404, a key limited to a destination exports only its rows, scopes per kind', async () => {
    const other = await svc.newKey(['read:deliveries', 'read:events', 'read:logs'], { tenantId: `other-${svc.tenantId}` });
    for (const kind of ['deliveries', 'events', 'logs'] as Kind[]) {
      expect((await exportOf(kind, '', { tenant: `other-${svc.tenantId}` })).status).toBe(404);
      // the other tenant's own export holds nothing of this one
      const own = await exportOf(kind, '', { key: other, tenant: `other-${svc.tenantId}` });
      expect({ kind, status: own.status, text: own.text }).toEqual({ kind, status: 200, text: '' });
    }
    const limited = await svc.newKey(['read:deliveries', 'read:events', 'read:logs'], { resourceIds: [destB] });
    const all = await rowsOf('deliveries', 'ndjson');
    const mine = await rowsOf('deliveries', 'parquet', '', limited);
    expect(mine.map((r) => r.id)).toEqual(all.filter((r) => r.destination_id === destB).map((r) => r.id));
    expect(mine).toHaveLength(3);
    const events = await rowsOf('events', 'csv', '', limited);
    expect(events.map((e) => e.id).sort()).toEqual([...new Set(mine.map((r) => r.event_id as string))].sort());
    const lines = await rowsOf('logs', 'ndjson', '', limited);
    expect(lines.every((l) => l.destination_id === destB || (l.ingester_id !== null && l.destination_id === null && l.ingester_id !== undefined))).toBe(true);
    expect(lines.some((l) => l.destination_id === destA)).toBe(false);
    const deliveriesOnly = await svc.newKey(['read:deliveries']);
    expect((await exportOf('events', '', { key: deliveriesOnly })).status).toBe(403);
    expect((await exportOf('logs', '', { key: deliveriesOnly })).status).toBe(403);
    expect((await exportOf('deliveries', '', { key: deliveriesOnly })).status).toBe(200);
  });

  it('an answer cut short after its headers ends without its last chunk: the client sees a failed transfer', async () => {
    const app = express();
    app.get('/', async (_req, res) => {
      let sent = 0;
      const rows = new Readable({
        read() {
          if (sent++ < 3) this.push(`{"n":${sent}}\n`);
          else this.destroy(new Error('Code: 241. DB::Exception: memory limit exceeded'));
        },
      });
      res.setHeader('content-type', 'application/x-ndjson');
      await sendExport(res, rows, () => undefined);
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
      expect(res.status).toBe(200);
      await expect(res.text()).rejects.toThrow();
    } finally {
      server.close();
    }
  });
});
