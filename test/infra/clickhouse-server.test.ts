import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { ClickHouseError, createClient, type ClickHouseClient } from '@clickhouse/client';
import { startLocalClickHouse, type LocalClickHouse } from '../../infra/clickhouse/local-clickhouse';
import { listDeliveries } from '../../platform/clickhouse/deliveries-list';
import { migrate } from '../../platform/clickhouse/migrate';
import { openClickHouse } from '../../platform/clickhouse/client';
import { startReceiver, type Receiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';
import { uniqueSuffix } from '../support/ids';

const USER = 'hookline';
const PASSWORD = randomBytes(12).toString('hex');

/** The client as the service opens it against a server (platform/clickhouse/client.ts). */
function clientOf(url: string, password = PASSWORD): ClickHouseClient {
  return openClickHouse({ url, user: USER, password, dataDir: '' });
}

function delivery(tenant: string, i: number, extra: Record<string, unknown> = {}) {
  return {
    tenant_id: tenant,
    delivery_id: `dlv_${String(i).padStart(3, '0')}`,
    attempt_number: 1,
    event_id: `evt_${i}`,
    destination_id: i % 2 === 0 ? 'dst_even' : 'dst_odd',
    correlation_id: `c-${i}`,
    status: i % 3 === 0 ? 'failed' : 'delivered',
    response_code: i % 3 === 0 ? null : 200,
    // the service sends ISO text; date_time_input_format=best_effort reads it
    attempted_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
    duration_ms: i,
    error_message: i % 3 === 0 ? "receiver said 'no'\tand\nmore" : null,
    body_sha256: 'ab'.repeat(32),
    ...extra,
  };
}

const COLUMNS: [string, ...string[]] = ['tenant_id', 'delivery_id', 'attempt_number', 'event_id', 'destination_id', 'correlation_id', 'status', 'response_code', 'attempted_at', 'duration_ms', 'error_message', 'body_sha256'];

describe('the ClickHouse HTTP interface over the embedded engine', () => {
  let dir: string;
  let server: LocalClickHouse;
  let port: number;
  let client: ClickHouseClient;
  const database = `chs_${uniqueSuffix()}`;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(process.env.HOOKLINE_TEST_DIR ?? tmpdir(), 'clickhouse-'));
    server = await startLocalClickHouse(dir, { user: USER, password: PASSWORD });
    port = Number(new URL(server.url).port);
    client = clientOf(server.url);
  });
  afterAll(async () => {
    await client?.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers /ping and a SELECT ping through the client', async () => {
    expect(await (await fetch(`${server.url}/ping`)).text()).toBe('Ok.\n');
    expect(await client.ping()).toEqual({ success: true });
    expect(await client.ping({ select: true })).toEqual({ success: true });
  });

  it('runs the migrations of the codebase, once', async () => {
    const ran = await migrate(client, database);
    expect(ran.length).toBeGreaterThan(0);
    expect(await migrate(client, database)).toEqual([]);
    const rs = await client.query({ query: 'SELECT name FROM system.tables WHERE database = {db:String} ORDER BY name', query_params: { db: database }, format: 'JSONEachRow' });
    const tables = (await rs.json<{ name: string }>()).map((r) => r.name);
    expect(tables).toEqual(expect.arrayContaining(['deliveries', 'events', 'schema_migrations']));
  });

  it('inserts JSONEachRow rows with columns and reads them with query parameters', async () => {
    const tenant = 'tenant-a';
    const rows = Array.from({ length: 12 }, (_, i) => delivery(tenant, i + 1));
    const inserted = await client.insert({ table: `${database}.deliveries`, values: rows, format: 'JSONEachRow', columns: COLUMNS });
    expect(inserted.executed).toBe(true);
    // the rows themselves: the analytics views are filled by a rollup, not on insert (migration 016)
    expect(Number(inserted.summary?.written_rows)).toBe(12);
    const stored = await client.query({ query: `SELECT count() AS n FROM ${database}.deliveries WHERE tenant_id = {t:String}`, query_params: { t: tenant }, format: 'JSONEachRow' });
    expect(await stored.json()).toEqual([{ n: 12 }]);
    // a stream with no rows is an empty body: nothing written, no error
    await expect(client.insert({ table: `${database}.deliveries`, values: Readable.from([], { objectMode: true }), format: 'JSONEachRow' })).resolves.toMatchObject({ executed: true });

    // the API's own list: String, DateTime64(3), UInt32 and Array(String) parameters, newest first
    const page = await listDeliveries(client, database, { tenant, status: null, before: null, destinationIds: null }, 5);
    expect(page.map((r) => r.delivery_id)).toEqual(['dlv_012', 'dlv_011', 'dlv_010', 'dlv_009', 'dlv_008']);
    const last = page[page.length - 1]!;
    const next = await listDeliveries(client, database, { tenant, status: 'delivered', before: { at: last.attempted_at_text, id: last.delivery_id, n: last.attempt_number }, destinationIds: ['dst_odd', "it's\\"] }, 10);
    expect(next.map((r) => r.delivery_id)).toEqual(['dlv_007', 'dlv_005', 'dlv_001']);

    const failed = await client.query({
      query: `SELECT delivery_id, response_code, error_message, attempted_at FROM ${database}.deliveries WHERE tenant_id = {t:String} AND status = {s:String} ORDER BY delivery_id LIMIT 1`,
      query_params: { t: tenant, s: 'failed' },
      format: 'JSON',
    });
    const json = await failed.json<{ delivery_id: string; response_code: number | null; error_message: string; attempted_at: string }>();
    expect(json.meta?.map((m) => m.type)).toEqual(['String', 'Nullable(Int32)', 'Nullable(String)', "DateTime64(3, 'UTC')"]);
    expect(json.data).toEqual([{ delivery_id: 'dlv_003', response_code: null, error_message: "receiver said 'no'\tand\nmore", attempted_at: '2026-01-01 00:00:03.000' }]);
    expect(json.rows).toBe(1);
  });

  it('keeps settings and parameters to the query that sent them', async () => {
    const withSetting = await client.query({ query: "SELECT getSetting('join_use_nulls') AS v", format: 'JSONEachRow', clickhouse_settings: { join_use_nulls: 1 } });
    expect(await withSetting.json()).toEqual([{ v: true }]);
    const without = await client.query({ query: "SELECT getSetting('join_use_nulls') AS v", format: 'JSONEachRow' });
    expect(await without.json()).toEqual([{ v: false }]);
    await client.query({ query: 'SELECT {x:String}', query_params: { x: 'a' }, format: 'JSONEachRow' });
    await expect(client.query({ query: 'SELECT {x:String}', format: 'JSONEachRow' })).rejects.toMatchObject({ code: '456', type: 'UNKNOWN_QUERY_PARAMETER' });
  });

  it('surfaces a failed query as the ClickHouseError of a server', async () => {
    const err = await client.query({ query: `SELECT * FROM ${database}.no_such_table`, format: 'JSONEachRow' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ClickHouseError);
    expect(err).toMatchObject({ code: '60', type: 'UNKNOWN_TABLE' });
    expect((err as Error).message).toContain('no_such_table');
    await expect(client.command({ query: 'SELEC 1' })).rejects.toMatchObject({ code: '62', type: 'SYNTAX_ERROR' });
    const badRow = await client.insert({ table: `${database}.deliveries`, values: [{ attempt_number: 'not a number' }], format: 'JSONEachRow', columns: ['attempt_number'] }).catch((e: unknown) => e);
    expect(badRow).toBeInstanceOf(ClickHouseError);
    expect((badRow as ClickHouseError).message).toContain('attempt_number');
    const res = await fetch(`${server.url}/?query=${encodeURIComponent('SELECT throwIf(1)')}`, { headers: { authorization: `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}` } });
    expect(res.status).toBe(500);
    expect(res.headers.get('x-clickhouse-exception-code')).toBe('395');
    expect(await res.text()).toMatch(/^Code: 395\. DB::Exception: .*\(FUNCTION_THROW_IF_VALUE_IS_NON_ZERO\) \(version [\d.]+\)\n$/s);
  });

  it('refuses a wrong password or another user, naming neither password', async () => {
    const wrong = clientOf(server.url, 'not-the-password');
    try {
      const err = await wrong.query({ query: 'SELECT 1', format: 'JSONEachRow' }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: '516', type: 'AUTHENTICATION_FAILED' });
      expect((err as Error).message).not.toContain('not-the-password');
      expect((await wrong.ping()).success).toBe(true); // /ping needs no credentials, as on a server
      expect((await wrong.ping({ select: true })).success).toBe(false);
    } finally {
      await wrong.close();
    }
    const other = createClient({ url: server.url, username: 'default', password: PASSWORD });
    try {
      await expect(other.command({ query: 'SELECT 1' })).rejects.toMatchObject({ code: '516' });
    } finally {
      await other.close();
    }
    expect(readFileSync(path.join(dir, 'server.log'), 'utf8')).not.toContain(PASSWORD);
  });

  it('takes gzip request bodies and answers gzip when asked', async () => {
    const zipped = createClient({ url: server.url, username: USER, password: PASSWORD, compression: { request: true, response: true } });
    try {
      await zipped.insert({ table: `${database}.deliveries`, values: [delivery('tenant-z', 1)], format: 'JSONEachRow', columns: COLUMNS });
      const rs = await zipped.query({ query: `SELECT event_id FROM ${database}.deliveries WHERE tenant_id = {t:String}`, query_params: { t: 'tenant-z' }, format: 'JSONEachRow' });
      expect(await rs.json()).toEqual([{ event_id: 'evt_1' }]);
    } finally {
      await zipped.close();
    }
  });

  it('serves two clients at once', async () => {
    const second = clientOf(server.url);
    try {
      await client.command({ query: `CREATE TABLE ${database}.counts (client String, n UInt32) ENGINE = MergeTree ORDER BY (client, n)` });
      const work = (c: ClickHouseClient, name: string) =>
        Promise.all(
          Array.from({ length: 10 }, async (_, i) => {
            await c.insert({ table: `${database}.counts`, values: [{ client: name, n: i }], format: 'JSONEachRow' });
            const rs = await c.query({ query: `SELECT count() AS c FROM ${database}.counts WHERE client = {name:String}`, query_params: { name }, format: 'JSONEachRow' });
            return Number((await rs.json<{ c: string }>())[0]!.c);
          }),
        );
      const [a, b] = await Promise.all([work(client, 'a'), work(second, 'b')]);
      expect(Math.max(...a)).toBe(10);
      expect(Math.max(...b)).toBe(10);
      const rs = await second.query({ query: `SELECT client, count() AS c FROM ${database}.counts GROUP BY client ORDER BY client`, format: 'JSONEachRow' });
      // a 64-bit count is a JSON number: output_format_json_quote_64bit_integers is 0 by default in this
      // engine's version, as on a server of that version (older servers quote them)
      expect(await rs.json()).toEqual([{ client: 'a', c: 10 }, { client: 'b', c: 10 }]);
    } finally {
      await second.close();
    }
  });

  it('keeps tables and rows across a stop and a start on the same data and port', async () => {
    await client.command({ query: `CREATE TABLE ${database}.kept (k String) ENGINE = MergeTree ORDER BY k` });
    await client.insert({ table: `${database}.kept`, values: [{ k: 'before-restart' }], format: 'JSONEachRow' });
    await server.stop();
    expect((await client.ping()).success).toBe(false);
    server = await startLocalClickHouse(dir, { port, user: USER, password: PASSWORD });
    expect(server.url).toBe(`http://127.0.0.1:${port}`);
    // the same client carries on: its next request opens a new connection
    const rs = await client.query({ query: `SELECT k FROM ${database}.kept`, format: 'JSONEachRow' });
    expect(await rs.json()).toEqual([{ k: 'before-restart' }]);
    const count = await client.query({ query: `SELECT count() AS c FROM ${database}.deliveries WHERE tenant_id = 'tenant-a'`, format: 'JSONEachRow' });
    expect(await count.json()).toEqual([{ c: 12 }]);
  });
});

describe('the service with CLICKHOUSE_URL at the local ClickHouse server', () => {
  let dir: string;
  let server: LocalClickHouse;
  let svc: TestService;
  let receiver: Receiver;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(process.env.HOOKLINE_TEST_DIR ?? tmpdir(), 'clickhouse-'));
    server = await startLocalClickHouse(dir, { user: USER, password: PASSWORD });
    [svc, receiver] = await Promise.all([startTestService({ CLICKHOUSE_URL: server.url, CLICKHOUSE_USER: USER, CLICKHOUSE_PASSWORD: PASSWORD }), startReceiver()]);
  }, 120_000);
  afterAll(async () => {
    await Promise.all([svc?.stop(), receiver?.close()]);
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('delivers an event and lists its delivery from the server', async () => {
    expect(svc.config.clickhouseUrl).toBe(server.url);
    const dest = await svc.api('POST', `/v1/tenants/${svc.tenantId}/destinations`, { name: 'receiver', url: receiver.url });
    expect(dest.status).toBe(201);
    const secret = 'server-test-secret';
    const ing = await svc.api('POST', `/v1/tenants/${svc.tenantId}/ingesters`, {
      name: 'orders',
      provider: 'generic',
      config: { signing_secret: secret, header: 'x-signature', algorithm: 'sha256', encoding: 'hex', prefix: 'sha256=' },
      destination_ids: [dest.body.id],
    });
    expect(ing.status).toBe(201);
    const body = Buffer.from('{"order":42}');
    const res = await fetch(ing.body.hook_url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-signature': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}` },
      body,
    });
    expect(res.status).toBe(202);
    const { event_id } = (await res.json()) as { event_id: string };
    const [got] = await receiver.waitForRequests(1);
    expect(got!.body.equals(body)).toBe(true);

    const listed = await eventually('the delivery row, read through the API', async () => {
      const r = await svc.api('GET', `/v1/tenants/${svc.tenantId}/deliveries`);
      expect(r.status).toBe(200);
      return r.body.deliveries.length > 0 ? r.body : undefined;
    });
    expect(listed.deliveries[0]).toMatchObject({ event_id, destination_id: dest.body.id, status: 'delivered', response_code: 200, attempt_number: 1 });

    // the row is in the server's data, where any other process reads it
    const other = clientOf(server.url);
    try {
      const rs = await other.query({
        query: `SELECT status FROM ${svc.config.clickhouseDatabase}.deliveries WHERE event_id = {id:String}`,
        query_params: { id: event_id },
        format: 'JSONEachRow',
      });
      expect(await rs.json()).toEqual([{ status: 'delivered' }]);
    } finally {
      await other.close();
    }
  });
});
