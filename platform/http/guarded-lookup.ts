import { promises as dns } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { checkHost, isAllowed, type AddressClass, type AllowList } from '../../core/address-policy';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Every address a name has; injectable so that tests can play a rebinding DNS server. */
export type Resolve = (hostname: string) => Promise<ResolvedAddress[]>;

const systemResolve: Resolve = async (hostname) =>
  (await dns.lookup(hostname, { all: true })).map(({ address }) => ({ address, family: isIP(address) === 6 ? 6 : 4 }));

/**
 * A destination the address policy forbids; `code` lets it be recognised after undici or fetch
 * wrapped it. The message reaches tenants (a delivery attempt's error, log lines): it names the
 * host as the destination spells it, never the address the host resolved to or the socket met,
 * which stays on `address` for operators.
 */
export class SsrfRefusedError extends Error {
  readonly code = 'ESSRF';

  constructor(
    readonly host: string,
    readonly address: string | null,
    readonly addressClass: AddressClass,
    reason: string,
  ) {
    super(`refused to connect to ${host}: ${address === null ? reason : resolvedReason(addressClass)}`);
    this.name = 'SsrfRefusedError';
  }
}

function resolvedReason(addressClass: AddressClass): string {
  if (addressClass === 'own-listener') return "it reaches this service's own endpoint";
  const article = /^[aeiou]/.test(addressClass) ? 'an' : 'a';
  return `it resolves to ${article} ${addressClass} address, which deliveries may not reach`;
}

/** The refusal inside `err`, following `cause` and AggregateError chains (fetch wraps it in a TypeError). */
export function ssrfRefusalOf(err: unknown, depth = 0): (Error & { code: 'ESSRF' }) | null {
  if (!(err instanceof Error) || depth > 8) return null;
  if ((err as { code?: unknown }).code === 'ESSRF') return err as Error & { code: 'ESSRF' };
  const inner = [err.cause, ...(err instanceof AggregateError ? err.errors : [])];
  for (const candidate of inner) {
    const found = ssrfRefusalOf(candidate, depth + 1);
    if (found) return found;
  }
  return null;
}

export function isSsrfRefusal(err: unknown): boolean {
  return ssrfRefusalOf(err) !== null;
}

/**
 * All addresses of `hostname`, or a refusal when the name or ANY of its addresses is forbidden:
 * one bad answer among good ones would let the connection land on it.
 */
export async function resolveChecked(hostname: string, allow: AllowList, resolve: Resolve = systemResolve): Promise<ResolvedAddress[]> {
  const byName = checkHost(hostname, allow);
  if (!byName.ok) throw new SsrfRefusedError(hostname, null, byName.addressClass, byName.reason);
  const answers = await resolve(hostname);
  for (const { address } of answers) {
    const verdict = isAllowed(address, allow);
    if (!verdict.ok) throw new SsrfRefusedError(hostname, address, verdict.addressClass, verdict.reason);
  }
  return answers.map(({ address }) => ({ address, family: isIP(address) === 6 ? 6 : 4 }));
}

function wantedFamily(family: number | 'IPv4' | 'IPv6' | undefined): 0 | 4 | 6 {
  if (family === 4 || family === 'IPv4') return 4;
  if (family === 6 || family === 'IPv6') return 6;
  return 0;
}

function notFound(hostname: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname });
}

/** Resolver answers that mean the name has no address now (it may have one later). */
const UNRESOLVED = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_NODATA', 'ENODATA', 'EAI_NONAME']);

/**
 * The resolver's code when this one error (not its causes) says a name does not resolve: its
 * `code`, or the resolver's words in its message (an error rebuilt from another's text).
 */
export function unresolvedCodeOf(e: Error): string | undefined {
  const code = (e as { code?: unknown }).code;
  const named = typeof code === 'string' && UNRESOLVED.has(code) ? code : /getaddrinfo (E[A-Z_]+)/.exec(e.message)?.[1];
  return named !== undefined && UNRESOLVED.has(named) ? named : undefined;
}

/** What an attempt says of a destination whose host does not resolve (yet), naming it as the destination spells it. */
export function unresolvedMessage(host: string, code: string): string {
  return `host ${host} does not resolve (${code}); attempts fail until it does`;
}

/** Answers a lookup with addresses already checked: those of the family asked for, all of them when Node races IPv4 and IPv6 (autoSelectFamily). */
function answerWith(checked: readonly ResolvedAddress[], hostname: string, options: { family?: number | string; all?: boolean }, callback: Parameters<LookupFunction>[2]): void {
  const family = wantedFamily(options.family as number | 'IPv4' | 'IPv6' | undefined);
  const usable = family === 0 ? [...checked] : checked.filter((a) => a.family === family);
  const first = usable[0];
  if (first === undefined) callback(notFound(hostname), '');
  else if (options.all) callback(null, usable);
  else callback(null, first.address, first.family);
}

/**
 * A `lookup` for net/tls.connect that resolves and checks on every connection, and hands the
 * socket only the addresses it checked, so that DNS rebinding between a check and the connect
 * is impossible: the check and the connect use the same answer.
 */
export function guardedLookup(allow: AllowList, resolve: Resolve = systemResolve): LookupFunction {
  return (hostname, options, callback) => {
    resolveChecked(hostname, allow, resolve).then(
      (checked) => answerWith(checked, hostname, options, callback),
      (err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), ''),
    );
  };
}

/** A `lookup` for net/tls.connect that answers only with addresses already checked (resolved once, by the caller). */
export function pinnedLookup(addresses: readonly ResolvedAddress[]): LookupFunction {
  return (hostname, options, callback) => process.nextTick(() => answerWith(addresses, hostname, options, callback));
}
