import { readRunFile } from '../infra/local';
import { cliConfig, CliError } from './connect';

/** Where the CLI's API commands send their requests, and as whom. */
export interface ApiTarget {
  apiUrl: string;
  apiKey: string;
  tenant: string;
}

type Values = Record<string, string | string[] | boolean | undefined>;

/** Where a command sends its requests, and with which key. */
export type ApiConnection = Omit<ApiTarget, 'tenant'>;

/**
 * The API a command talks to: `--api-url`, else HOOKLINE_API_URL, else the API beside `npm start`
 * (its run file); the key from HOOKLINE_API_KEY (never an argument: it would sit in the shell's
 * history).
 */
export function apiConnection(values: Values, what: string, env: NodeJS.ProcessEnv = process.env): ApiConnection {
  const apiKey = env.HOOKLINE_API_KEY;
  if (!apiKey) throw new CliError(`${what} needs an API key in HOOKLINE_API_KEY`);
  let apiUrl = typeof values['api-url'] === 'string' ? values['api-url'] : env.HOOKLINE_API_URL;
  if (!apiUrl) apiUrl = readRunFile(cliConfig(env).config.dataDir)?.api_url ?? undefined;
  if (!apiUrl) throw new CliError('no API found: pass --api-url or set HOOKLINE_API_URL (or run it beside `npm start`)');
  return { apiUrl: apiUrl.replace(/\/+$/, ''), apiKey };
}

/** {@link apiConnection} and the tenant: `--tenant`, else HOOKLINE_TENANT. */
export function apiTarget(values: Values, what: string, env: NodeJS.ProcessEnv = process.env): ApiTarget {
  const apiKey = env.HOOKLINE_API_KEY;
  if (!apiKey) throw new CliError(`${what} needs an API key in HOOKLINE_API_KEY`);
  const tenant = typeof values.tenant === 'string' && values.tenant !== '' ? values.tenant : env.HOOKLINE_TENANT;
  if (!tenant) throw new CliError(`${what} needs --tenant <id> (or HOOKLINE_TENANT)`);
  return { ...apiConnection(values, what, env), tenant };
}

/** The query of a list command: each option given (`--http-status 5xx`) as its parameter (`response_code`). */
export function queryOf(values: Values, options: Record<string, string>): Record<string, string> {
  const query: Record<string, string> = {};
  for (const [option, param] of Object.entries(options)) {
    const v = values[option];
    if (v === undefined) continue;
    if (typeof v !== 'string') throw new CliError(`--${option} takes one value`);
    query[param] = v;
  }
  return query;
}

export interface CallOptions {
  query?: Record<string, string | number | undefined | null>;
  body?: unknown;
  /** Content type of the body; application/json unless said. */
  contentType?: string;
  idempotencyKey?: string;
  headers?: Record<string, string>;
}

export interface ApiAnswer {
  status: number;
  headers: Headers;
  body: unknown;
}

/**
 * Calls `/v1/tenants/{tenant}<path>` and returns the answer of a 2xx. Any other answer becomes
 * a one-line CliError from its problem document: the status, the detail and the first field errors.
 */
export async function callApi(target: ApiTarget, method: string, path: string, options: CallOptions = {}): Promise<ApiAnswer> {
  return callApiAt(target, method, `/v1/tenants/${encodeURIComponent(target.tenant)}${path}`, options);
}

/** As {@link callApi}, for a path of the API outside the tenant's (`/v1/me`). */
export async function callApiAt(target: ApiConnection, method: string, path: string, options: CallOptions = {}): Promise<ApiAnswer> {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined && v !== null && v !== '') qs.set(k, String(v));
  const url = `${target.apiUrl}${path}${qs.size > 0 ? `?${qs}` : ''}`;
  const headers: Record<string, string> = { authorization: `Bearer ${target.apiKey}`, accept: 'application/json', ...(options.headers ?? {}) };
  if (options.body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
  if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
  let res: Response;
  try {
    res = await fetch(url, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body), signal: AbortSignal.timeout(30_000) });
  } catch (err) {
    throw new CliError(`cannot reach the API at ${target.apiUrl}: ${(err as Error).cause ? String((err as Error & { cause: Error }).cause.message) : (err as Error).message}`);
  }
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text === '' ? null : JSON.parse(text);
  } catch {
    body = text;
  }
  if (res.status >= 200 && res.status < 300) return { status: res.status, headers: res.headers, body };
  throw new CliError(problemLine(res.status, body));
}

/** A problem document as one line: `422 unprocessable-entity: detail (field: message; ...)`. */
export function problemLine(status: number, body: unknown): string {
  if (typeof body !== 'object' || body === null) return `the API answered ${status}${typeof body === 'string' && body ? `: ${body.slice(0, 200)}` : ''}`;
  const p = body as { type?: unknown; detail?: unknown; title?: unknown; errors?: { field?: unknown; message?: unknown }[] };
  const slug = typeof p.type === 'string' ? p.type.slice(p.type.lastIndexOf('/') + 1) : '';
  const detail = typeof p.detail === 'string' ? p.detail : typeof p.title === 'string' ? p.title : '';
  const errors = Array.isArray(p.errors) ? p.errors.slice(0, 5).map((e) => `${String(e.field)}: ${String(e.message)}`).join('; ') : '';
  return `${status}${slug ? ` ${slug}` : ''}: ${detail}${errors ? ` (${errors})` : ''}`.replace(/\s+/g, ' ').trim();
}
