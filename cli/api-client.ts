import { createHooklineClient, ProblemError, unwrap, type ApiResult, type HooklineClient } from '../clients/typescript/src';
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

/** How long a request may take, its answer's body included. */
const REQUEST_TIMEOUT_MS = 30_000;

/**
 * The typed client a command calls the API through, as the key in HOOKLINE_API_KEY. A request
 * that cannot connect, or takes longer than 30 s, ends the command with one line.
 */
export function clientOf(target: ApiConnection): HooklineClient {
  return createHooklineClient({
    baseUrl: target.apiUrl,
    apiKey: target.apiKey,
    headers: { accept: 'application/json' },
    fetch: async (request) => {
      try {
        return await fetch(request, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
      } catch (err) {
        const { cause } = err as Error & { cause?: Error };
        throw new CliError(`cannot reach the API at ${target.apiUrl}: ${cause ? String(cause.message) : (err as Error).message}`);
      }
    },
  });
}

/** What a command of the tenant calls through: the typed client, and the tenant each path's `tenant_id` names. */
export function tenantApi(values: Values, what: string): { client: HooklineClient; tenant_id: string } {
  const target = apiTarget(values, what);
  return { client: clientOf(target), tenant_id: target.tenant };
}

/**
 * The data of a 2xx answer. Any other answer becomes a one-line CliError from its problem
 * document: the status, the detail and the first field errors.
 */
export async function dataOf<T>(call: Promise<ApiResult<T>>): Promise<T> {
  try {
    return unwrap(await call);
  } catch (err) {
    throw err instanceof ProblemError ? new CliError(problemLine(err.status, err.body)) : err;
  }
}

/**
 * The query of a list command: each option given (`--http-status 5xx`) as its parameter
 * (`response_code`), an empty one left out. The text goes as typed, a number's too: the API
 * judges each value and refuses a wrong one in its own words.
 */
export function queryOf<Q extends object>(values: Values, options: Record<string, keyof Q & string>): Q {
  const query: Record<string, string> = {};
  for (const [option, param] of Object.entries(options)) {
    const v = values[option];
    if (v === undefined) continue;
    if (typeof v !== 'string') throw new CliError(`--${option} takes one value`);
    if (v !== '') query[param] = v;
  }
  return query as Q;
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
