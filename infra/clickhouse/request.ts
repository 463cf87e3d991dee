import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import zlib from 'node:zlib';
import { badArguments, notImplemented } from './errors';

/**
 * One query as the ClickHouse HTTP interface receives it: URL parameters (the query, its id,
 * the database, settings, `param_*` values), credentials, and a body holding the statement,
 * the rest of it, or the rows of an INSERT.
 */
export interface ClickHouseRequest {
  /** The `query` URL parameter (or multipart part); the body follows it on a new line. */
  query: string | undefined;
  body: string;
  queryId: string;
  /** Unset: `default`. */
  database: string | undefined;
  /** The output format of a statement without a FORMAT clause. */
  defaultFormat: string;
  /** Settings for this query only, as the URL gave them. */
  settings: Map<string, string>;
  /** `{name:Type}` values in the interface's text form, as @clickhouse/client formats them. */
  params: Map<string, string>;
  user: string;
  password: string;
  /** enable_http_compression=1 and an Accept-Encoding this server can produce. */
  responseEncoding: 'gzip' | 'deflate' | 'br' | undefined;
}

/** The statement the engine runs: the URL part, then the body, as the server concatenates them. */
export function statementOf(r: ClickHouseRequest): string {
  if (r.query === undefined) return r.body;
  return r.body.length > 0 ? `${r.query}\n${r.body}` : r.query;
}

// URL parameters of the HTTP layer itself, never engine settings
const INTERFACE_PARAMS = new Set(['query', 'query_id', 'database', 'default_format', 'user', 'password', 'quota_key', 'session_timeout', 'session_check', 'buffer_size']);
// settings that only steer the HTTP response; the embedded engine rejects them as unknown
const HTTP_ONLY_SETTINGS = new Set([
  'wait_end_of_query', 'send_progress_in_http_headers', 'http_response_buffer_size', 'http_headers_progress_interval_ms',
  'http_send_progress_interval_ms', 'enable_http_compression', 'http_zlib_compression_level', 'http_response_compression_method',
  'http_native_compression_disable_checksumming_on_decompress',
]);
// state this server does not keep: refused rather than silently ignored
const UNSUPPORTED_PARAMS: Record<string, string> = {
  session_id: 'sessions (session_id) are not supported by this server',
  role: 'roles are not supported by this server',
  compress: 'native compression (compress=1) is not supported by this server; use enable_http_compression',
  decompress: 'native compression (decompress=1) is not supported by this server; use Content-Encoding',
};

export function parseRequest(url: URL, method: string, headers: IncomingHttpHeaders, rawBody: Buffer): ClickHouseRequest {
  const settings = new Map<string, string>();
  const params = new Map<string, string>();
  for (const [key, value] of url.searchParams) {
    if (key.startsWith('param_')) {
      params.set(key.slice('param_'.length), value);
      continue;
    }
    const refusal = UNSUPPORTED_PARAMS[key];
    if (refusal !== undefined) {
      if (value !== '' && value !== '0') throw notImplemented(refusal);
    } else if (!INTERFACE_PARAMS.has(key) && !HTTP_ONLY_SETTINGS.has(key)) settings.set(key, value);
  }
  // a GET may not write, as on a real server
  if (method === 'GET' && !settings.has('readonly')) settings.set('readonly', '2');
  let query = url.searchParams.get('query') ?? undefined;
  let body = decode(rawBody, headers['content-encoding']).toString('utf8');
  const boundary = /^multipart\/form-data;.*boundary=("?)([^";]+)\1/i.exec(headers['content-type'] ?? '')?.[2];
  if (boundary) {
    body = '';
    for (const [name, value] of multipartParts(rawBody.toString('utf8'), boundary)) {
      if (name === 'query') query = value;
      else if (name.startsWith('param_')) params.set(name.slice('param_'.length), value);
      else throw notImplemented(`external data (multipart part "${name}") is not supported by this server`);
    }
  }
  return {
    query,
    body,
    queryId: url.searchParams.get('query_id') || randomUUID(),
    database: url.searchParams.get('database') || undefined,
    defaultFormat: url.searchParams.get('default_format') || 'TabSeparated',
    settings,
    params,
    ...credentialsOf(url, headers),
    responseEncoding: url.searchParams.get('enable_http_compression') === '1' ? acceptedEncoding(headers['accept-encoding']) : undefined,
  };
}

/** Basic auth, else the X-ClickHouse-User/Key headers, else `user`/`password` parameters; none: `default`. */
function credentialsOf(url: URL, headers: IncomingHttpHeaders): { user: string; password: string } {
  const auth = headers.authorization;
  if (auth?.startsWith('Basic ')) {
    const decoded = Buffer.from(auth.slice('Basic '.length), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon < 0 ? { user: decoded, password: '' } : { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  if (auth) throw badArguments('only Basic authentication is supported by this server');
  const user = headers['x-clickhouse-user'];
  if (typeof user === 'string') return { user, password: String(headers['x-clickhouse-key'] ?? '') };
  return { user: url.searchParams.get('user') ?? 'default', password: url.searchParams.get('password') ?? '' };
}

function decode(body: Buffer, encoding: string | undefined): Buffer {
  switch (encoding?.toLowerCase()) {
    case undefined:
    case '':
    case 'identity':
      return body;
    case 'gzip':
      return zlib.gunzipSync(body);
    case 'deflate':
      return zlib.inflateSync(body);
    case 'br':
      return zlib.brotliDecompressSync(body);
    default:
      throw notImplemented(`Content-Encoding ${encoding} is not supported by this server`);
  }
}

function acceptedEncoding(accept: string | undefined): ClickHouseRequest['responseEncoding'] {
  const offered = (accept ?? '').split(',').map((s) => s.split(';')[0]!.trim().toLowerCase());
  return (['gzip', 'deflate', 'br'] as const).find((e) => offered.includes(e));
}

/** Name and value of each part of a multipart/form-data body, as @clickhouse/client builds it. */
function multipartParts(body: string, boundary: string): Array<[string, string]> {
  const parts: Array<[string, string]> = [];
  for (const chunk of body.split(`--${boundary}`).slice(1)) {
    if (chunk.startsWith('--')) break;
    const headerEnd = chunk.indexOf('\r\n\r\n');
    if (headerEnd < 0) throw badArguments('malformed multipart/form-data body');
    const name = /name="([^"]*)"/i.exec(chunk.slice(0, headerEnd))?.[1];
    if (name === undefined) throw badArguments('multipart/form-data part without a name');
    parts.push([name, chunk.slice(headerEnd + 4).replace(/\r\n$/, '')]);
  }
  return parts;
}
