import type { TransformOutput } from './transformer';

/**
 * Why a run failed. threw: the code threw; compile: it does not compile; missing: it defines no
 * transform function; output: transform returned something that cannot be sent; timeout,
 * memory, stack: it reached a limit; busy: too many of its tenant's runs were waiting; input: the
 * event cannot be given to it; crash: the sandbox itself failed; closed: the sandbox was shut.
 */
export type FailureKind = 'threw' | 'compile' | 'missing' | 'output' | 'timeout' | 'memory' | 'stack' | 'busy' | 'input' | 'crash' | 'closed';

export const FAILURE_KINDS: readonly FailureKind[] = ['threw', 'compile', 'missing', 'output', 'timeout', 'memory', 'stack', 'busy', 'input', 'crash', 'closed'];

export interface OutputLimits {
  timeoutMs: number;
  memoryMb: number;
  maxOutputBytes: number;
}

/** Most headers one result may add, and their names and values together. */
export const MAX_HEADERS = 32;
export const MAX_HEADER_BYTES = 8192;
export const MAX_PATH_CHARS = 2048;
const METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** A failure's detail as shown in an attempt's error: no line breaks or control characters, at most 500 characters. */
export function oneLine(text: string, max = 500): string {
  const flat = text.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ').replace(/ {2,}/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

export interface Failure {
  kind: FailureKind;
  detail?: string;
  line?: number;
  column?: number;
}

/**
 * The error of a failed run (`when` run) or the problem of a checked transformation (`when`
 * check: said of the transformation, as the API's field errors are).
 */
export function failureMessage(f: Failure, limits: OutputLimits, when: 'run' | 'check'): string {
  const detail = oneLine(f.detail ?? '');
  const at = f.line === undefined ? '' : ` (line ${f.line}${f.column === undefined ? '' : `, column ${f.column}`})`;
  const check = when === 'check';
  switch (f.kind) {
    case 'threw':
      return check ? `throws when loaded: ${detail}${at}` : `transform threw: ${detail}${at}`;
    case 'compile':
      return `${check ? '' : 'transformation '}does not compile: ${detail.replace(/^SyntaxError: /, '')}${at}`;
    case 'missing':
      return `${check ? '' : 'transformation '}defines no function transform(event)`;
    case 'timeout':
      return check ? `runs out of time (${limits.timeoutMs} ms) when loaded` : `transform ran out of time (${limits.timeoutMs} ms)`;
    case 'memory':
      return check ? `runs out of memory (${limits.memoryMb} MiB) when loaded` : `transform ran out of memory (${limits.memoryMb} MiB)`;
    case 'stack':
      return `${check ? 'when loaded, runs' : 'transform ran'} out of stack: recursion or nesting too deep`;
    case 'busy':
      return 'too many transformations waiting for this tenant';
    case 'closed':
      return 'the transformation sandbox is shut';
    case 'crash':
      return `the transformation sandbox failed${detail ? `: ${detail}` : ''}`;
    case 'output':
    case 'input':
      return detail;
  }
}

/**
 * What a run returned, as an attempt sends it, or why it cannot be sent. `meta` is the driver's
 * envelope, `{json, chars, headers, method, path}` as JSON.stringify made it in the sandbox from
 * what transform returned (with the tenant's code able to interfere): every member is checked
 * here, as untrusted input; null or absent members mean none.
 */
export function acceptOutput(meta: unknown, body: Uint8Array, maxOutputBytes: number): { output: TransformOutput } | { error: string } {
  if (!isRecord(meta) || typeof meta.json !== 'boolean') return { error: 'the result could not be read out of the sandbox' };
  if (body.length > maxOutputBytes) return { error: `transform returned ${body.length} bytes; at most ${maxOutputBytes}` };
  const output: TransformOutput = { body: Buffer.from(body.buffer, body.byteOffset, body.byteLength) };
  if (meta.json) output.content_type = 'application/json';

  if (meta.headers !== undefined && meta.headers !== null) {
    const headers = acceptHeaders(meta.headers);
    if (typeof headers === 'string') return { error: headers };
    const contentType = headers.get('content-type');
    headers.delete('content-type');
    if (contentType !== undefined) {
      if (contentType.trim() === '') return { error: 'header content-type must not be empty' };
      output.content_type = contentType;
    }
    // entries, not assignments: a header named __proto__ stays a header
    if (headers.size > 0) output.headers = Object.fromEntries(headers);
  }
  if (meta.method !== undefined && meta.method !== null) {
    const method = typeof meta.method === 'string' ? meta.method.toUpperCase() : '';
    if (!METHODS.has(method)) return { error: `method must be POST, PUT or PATCH${typeof meta.method === 'string' ? `, not ${oneLine(meta.method, 20)}` : ''}` };
    output.method = method;
  }
  if (meta.path !== undefined && meta.path !== null) {
    const problem = pathProblem(meta.path);
    if (problem) return { error: problem };
    output.path = meta.path as string;
  }
  return { output };
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Printable on one line, and one byte each: what an HTTP field value can carry. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
/** Set by the HTTP client from the request itself; giving them breaks or smuggles the framing. */
const CLIENT_HEADERS = new Set(['content-length', 'host', 'connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'expect', 'proxy-connection']);

/** Header names lowercased, as the service's own are, so that its own always replace a tenant's. */
function acceptHeaders(value: unknown): Map<string, string> | string {
  if (!isRecord(value)) return 'headers must be an object of header names to string values';
  const entries = Object.entries(value);
  if (entries.length > MAX_HEADERS) return `transform returned ${entries.length} headers; at most ${MAX_HEADERS}`;
  const headers = new Map<string, string>();
  let bytes = 0;
  for (const [given, v] of entries) {
    const name = given.toLowerCase();
    const shown = oneLine(given, 100);
    if (!TOKEN.test(given)) return `header name ${JSON.stringify(shown)} is not a valid HTTP header name`;
    if (typeof v !== 'string') return `header ${shown} must be a string`;
    if (name.startsWith('webhook-') || name.startsWith('x-hookline-')) return `header ${shown} is the service's own; a transformation cannot set it`;
    if (CLIENT_HEADERS.has(name)) return `header ${shown} is set by the HTTP client; a transformation cannot set it`;
    if (!FIELD_VALUE.test(v)) return `header ${shown} must be one line of text (no line breaks or control characters, no character beyond \\u00ff)`;
    if (headers.has(name)) return `header ${shown} is given twice (header names are case-insensitive)`;
    bytes += name.length + v.length;
    if (bytes > MAX_HEADER_BYTES) return `headers take more than ${MAX_HEADER_BYTES} bytes`;
    headers.set(name, v);
  }
  return headers;
}

/**
 * A path replaces the destination URL's path and query, never its host: one starting with `//`,
 * or holding a backslash (which URL parsers take for a slash), would read as another host.
 */
function pathProblem(path: unknown): string | undefined {
  if (typeof path !== 'string' || !path.startsWith('/')) return 'path must be a string starting with /';
  if (path.length > MAX_PATH_CHARS) return `path must be at most ${MAX_PATH_CHARS} characters`;
  if (path.startsWith('//')) return 'path must not start with //';
  if (/[\u0000-\u001f\u007f\\]/.test(path)) return 'path must not hold control characters, line breaks or backslashes';
  return undefined;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
