import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { Engine, type EngineResult } from './engine';
import { asClickHouseException, authenticationFailed, emptyQuery, httpStatusOf, type ClickHouseException } from './errors';
import { parseInlineInsert } from './inline-insert';
import { parseRequest, statementOf, type ClickHouseRequest } from './request';

/**
 * The ClickHouse HTTP interface over the embedded engine, so that processes that cannot share
 * chdb in-process (it binds one data directory per process) share one through
 * @clickhouse/client, unchanged, as they would a ClickHouse server.
 *
 * Serves `GET /ping` and queries on `/` (GET or POST; query in the `query` parameter and/or the
 * body; settings, `param_*`, `database`, `query_id`, `default_format` as URL parameters).
 * Not served: sessions, roles, external data, native compression, progress headers, streaming
 * of partial results (a result is sent once complete).
 */
export interface ClickHouseHttpServer {
  url: string;
  close(): Promise<void>;
}

export interface ClickHouseHttpServerOptions {
  dataDir: string;
  /** The one user accepted; default `default`. */
  user?: string;
  password?: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: any free port. */
  port?: number;
}

/** How long close() lets in-flight queries finish before cutting their connections. */
const CLOSE_GRACE_MS = 10_000;

export async function startClickHouseHttpServer(options: ClickHouseHttpServerOptions): Promise<ClickHouseHttpServer> {
  const engine = new Engine(options.dataDir);
  // named in every error and response, as a server names its own
  const described = await engine.run({ statement: 'SELECT version(), timezone()', database: undefined, settings: new Map(), params: new Map(), format: 'TabSeparated' });
  const [version = 'unknown', timezone = 'UTC'] = described.bytes.toString('utf8').trim().split('\t');
  const accepts = credentialCheck(options.user ?? 'default', options.password ?? '');
  const server = createServer((req, res) => {
    void handle(req, res, { engine, accepts, version, timezone });
  });
  // longer than the client's idle socket TTL (2.5 s by default), as on a real server
  server.keepAliveTimeout = 10_000;
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    async close() {
      await closeServer(server);
      await engine.close();
    },
  };
}

interface Context {
  engine: Engine;
  accepts(user: string, password: string): boolean;
  version: string;
  timezone: string;
}

async function handle(req: IncomingMessage, res: ServerResponse, ctx: Context): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (url.pathname === '/ping' && (req.method === 'GET' || req.method === 'HEAD')) {
    req.resume();
    return send(res, 200, { 'Content-Type': 'text/html; charset=UTF-8' }, Buffer.from('Ok.\n'), undefined);
  }
  if (url.pathname !== '/') {
    req.resume();
    return send(res, 404, { 'Content-Type': 'text/plain; charset=UTF-8' }, Buffer.from(`There is no handle ${url.pathname}\n`), undefined);
  }
  let queryId = '';
  let encoding: ClickHouseRequest['responseEncoding'];
  try {
    const body = await readBody(req);
    const request = parseRequest(url, req.method ?? 'GET', req.headers, body);
    queryId = request.queryId;
    encoding = request.responseEncoding;
    if (!ctx.accepts(request.user, request.password)) throw authenticationFailed(request.user);
    const result = await runQuery(ctx.engine, request);
    const summary = summaryOf(result, isInsert(request));
    send(res, 200, {
      'Content-Type': contentTypeOf(formatOf(request)),
      'X-ClickHouse-Query-Id': queryId,
      'X-ClickHouse-Format': formatOf(request),
      'X-ClickHouse-Timezone': ctx.timezone,
      'X-ClickHouse-Summary': JSON.stringify(summary),
    }, result.bytes, encoding);
  } catch (err) {
    const e: ClickHouseException = asClickHouseException(err);
    send(res, httpStatusOf(e), {
      'Content-Type': 'text/plain; charset=UTF-8',
      'X-ClickHouse-Exception-Code': String(e.code),
      ...(queryId ? { 'X-ClickHouse-Query-Id': queryId } : {}),
      'X-ClickHouse-Timezone': ctx.timezone,
    }, Buffer.from(e.text(ctx.version)), encoding);
  }
}

async function runQuery(engine: Engine, request: ClickHouseRequest): Promise<EngineResult> {
  const statement = statementOf(request);
  if (statement.trim().length === 0) throw emptyQuery();
  // an INSERT ... FORMAT X whose rows would follow in the body, and the body is empty: nothing to
  // write (the engine would refuse "No data to insert", a server writes nothing)
  if (request.query !== undefined && isInsert(request) && /\bFORMAT\s+\w+\s*$/i.test(request.query) && request.body.trim().length === 0) {
    return { bytes: Buffer.alloc(0), rowsRead: 0, bytesRead: 0, elapsedNs: 0 };
  }
  const inline = request.query !== undefined && request.params.size === 0 ? parseInlineInsert(request.query, request.database) : undefined;
  if (inline) return engine.insert(inline, Buffer.from(request.body, 'utf8'), request.settings);
  return engine.run({ statement, database: request.database, settings: request.settings, params: request.params, format: request.defaultFormat });
}

function isInsert(request: ClickHouseRequest): boolean {
  return /^\s*INSERT\b/i.test(request.query ?? request.body);
}

/** The format the result is in: a trailing FORMAT clause of a query, else default_format. */
function formatOf(request: ClickHouseRequest): string {
  if (isInsert(request)) return request.defaultFormat;
  return /\bFORMAT\s+([A-Za-z0-9_]+)\s*;?\s*$/i.exec(statementOf(request))?.[1] ?? request.defaultFormat;
}

function contentTypeOf(format: string): string {
  if (/^JSON/i.test(format)) return 'application/json; charset=UTF-8';
  if (/^(TSV|TabSeparated)/i.test(format)) return 'text/tab-separated-values; charset=UTF-8';
  if (/^CSV/i.test(format)) return 'text/csv; charset=UTF-8; header=absent';
  return 'text/plain; charset=UTF-8';
}

/** X-ClickHouse-Summary: counters as strings, as the server sends them. */
function summaryOf(r: EngineResult, insert: boolean): Record<string, string> {
  const rows = String(r.rowsRead);
  const bytes = String(r.bytesRead);
  return {
    read_rows: rows,
    read_bytes: bytes,
    written_rows: insert ? rows : '0',
    written_bytes: insert ? bytes : '0',
    total_rows_to_read: '0',
    result_rows: insert ? '0' : rows,
    result_bytes: insert ? '0' : String(r.bytes.length),
    elapsed_ns: String(r.elapsedNs),
  };
}

/** Equal-time comparison of digests, so neither the user nor the password leaks through timing. */
function credentialCheck(user: string, password: string): (user: string, password: string) => boolean {
  const digest = (u: string, p: string) => createHash('sha256').update(`${u.length}:${u}:${p}`).digest();
  const expected = digest(user, password);
  return (u, p) => timingSafeEqual(digest(u, p), expected);
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

function send(res: ServerResponse, status: number, headers: Record<string, string>, body: Buffer, encoding: ClickHouseRequest['responseEncoding']): void {
  const payload = encoding === 'gzip' ? zlib.gzipSync(body) : encoding === 'deflate' ? zlib.deflateSync(body) : encoding === 'br' ? zlib.brotliCompressSync(body) : body;
  // the client may have gone; there is no one left to tell
  res.once('error', () => undefined);
  res.writeHead(status, { ...headers, ...(encoding ? { 'Content-Encoding': encoding } : {}), 'Content-Length': String(payload.length) });
  res.end(payload);
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    const force = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
    server.close(() => {
      clearTimeout(force);
      resolve();
    });
    server.closeIdleConnections();
  });
}
