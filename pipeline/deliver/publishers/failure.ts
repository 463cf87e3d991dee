import type { DestinationAuth } from '../../../core/model';
import { unresolvedCodeOf, unresolvedMessage } from '../../../platform/http/guarded-lookup';
import { PublishFailed } from './publisher';

/**
 * Whether `value` is an error: duck-typed, since errors from another realm (Node's own, seen from
 * a vm context such as a test runner's) are not instances of this realm's Error.
 */
export function isError(value: unknown): value is Error {
  return value instanceof Error || (typeof value === 'object' && value !== null && typeof (value as { message?: unknown }).message === 'string' && 'stack' in value);
}

/** The message of an error, or the text of anything else. */
export function messageOf(err: unknown): string {
  return isError(err) ? err.message : String(err);
}

/** The errors inside `err`, outermost first: `cause` chains, kafkajs's `originalError`, AggregateError's members. */
export function errorChain(err: unknown): Error[] {
  const chain: Error[] = [];
  const visit = (e: unknown, depth: number) => {
    if (!isError(e) || depth > 8 || chain.includes(e)) return;
    chain.push(e);
    visit(e.cause, depth + 1);
    visit((e as { originalError?: unknown }).originalError, depth + 1);
    const members = (e as { errors?: unknown }).errors;
    if (Array.isArray(members)) for (const inner of members) visit(inner, depth + 1);
  };
  visit(err, 0);
  return chain;
}

function codeOf(e: Error): string | undefined {
  const code = (e as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

/** The resolver's code when `err` says a name does not resolve. */
export function unresolvedCode(err: unknown): string | undefined {
  for (const e of errorChain(err)) {
    const code = unresolvedCodeOf(e);
    if (code !== undefined) return code;
  }
  return undefined;
}

/**
 * What a socket-level failure means, in the tenant's terms: `where` is the broker's host:port as
 * the destination names it (the socket's own message would name the address it resolved to).
 * Undefined when `err` is not one.
 */
export function networkFailure(err: unknown, where: string): string | undefined {
  for (const e of errorChain(err)) {
    const code = codeOf(e);
    if (code === 'ECONNREFUSED') return `connection refused by ${where}`;
    const unresolved = unresolvedCodeOf(e);
    if (unresolved !== undefined) return unresolvedMessage(where.replace(/:\d+$/, ''), unresolved);
    if (code === 'ETIMEDOUT') return `connecting to ${where} timed out`;
    if (code === 'ECONNRESET' || code === 'EPIPE') return `connection to ${where} was reset`;
    if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return `${where} is unreachable (${code})`;
    if (code === 'ERR_SSL_WRONG_VERSION_NUMBER') return `TLS with ${where} failed: the server did not answer in TLS (a plaintext port?)`;
    // OpenSSL's own text ("…:error:0A00010B:SSL routines:…") says less than its code
    if (code !== undefined && (code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') || /CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code))) return `TLS with ${where} failed: ${/:error:/.test(e.message) ? code : e.message}`;
  }
  return undefined;
}

/** The secrets of a destination's credentials: none may appear in what a failure says. */
export function secretsOf(auth: DestinationAuth | null | undefined): string[] {
  if (!auth) return [];
  if (auth.type === 'basic') return [auth.password];
  if (auth.type === 'bearer') return [auth.token];
  return [auth.value];
}

/**
 * `text` on one line, with every secret (as given, and as a URL would escape it) and every
 * `user:password@` of a URL masked: a broker or a client library may echo what it was given.
 */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi, '$1');
  for (const secret of secrets) {
    if (secret === '') continue;
    for (const form of new Set([secret, encodeURIComponent(secret)])) out = out.split(form).join('***');
  }
  return out.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}

/**
 * The failure as it leaves the publisher: a PublishFailed whose message, and the message of the
 * one cause it keeps, hold no secret. The original error is not kept: a client library's error
 * may carry its options, credentials included.
 */
export function sealedFailure(err: unknown, secrets: readonly string[]): PublishFailed {
  const message = scrub(messageOf(err), secrets) || 'the broker rejected the message';
  const refused = err instanceof PublishFailed && err.refused;
  const inner = err instanceof PublishFailed ? err.cause : err;
  const cause =
    isError(inner) ? Object.assign(new Error(scrub(inner.message, secrets)), { name: inner.name, ...(codeOf(inner) ? { code: codeOf(inner) } : {}) }) : undefined;
  return new PublishFailed(message, { refused, cause });
}
