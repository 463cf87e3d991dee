import { checkHost, type AllowList } from '../../core/address-policy';
import { canonicalAddress, isOwnAddress, isOwnHost, portOf, type OwnListeners } from '../../core/own-listeners';
import { resolveChecked, ssrfRefusalOf, SsrfRefusedError, type Resolve } from './guarded-lookup';

export interface DestinationCheckDeps {
  allow: AllowList;
  own: OwnListeners;
  resolve?: Resolve;
  /** Longest the check waits for the name's addresses (DESTINATION_RESOLVE_TIMEOUT_MS at create). */
  resolveTimeoutMs?: number;
}

/** How long a create or an update waits for a destination's name to resolve, by default. */
export const DESTINATION_RESOLVE_TIMEOUT_MS = 2_000;

const LOOP = "points at this service's own endpoint or infrastructure, where deliveries would loop back into it";

/**
 * Why a destination URL is refused at create time, or null. The same checks run again on every
 * connection (a name's DNS can change later); this one gives the tenant the answer up front. The
 * answer names the host only as the tenant wrote it, never an address it resolved to.
 *
 * A name that does not resolve now (no such name yet, no DNS on this machine, a resolver slower
 * than `resolveTimeoutMs`) is accepted: the connection's own check decides once it resolves, and
 * until then each attempt fails saying the name does not resolve. A name that resolves to an
 * address the policy refuses is refused here, so a tenant learns it before any event is sent.
 */
export async function refusalOfDestination(text: string, deps: DestinationCheckDeps): Promise<string | null> {
  const url = new URL(text);
  const port = portOf(url);
  const host = url.hostname;
  // the loop check comes first: loopback may be allowed (development, tests), a loop never is
  if (isOwnHost(deps.own, host, port)) return LOOP;
  const byHost = checkHost(host, deps.allow);
  if (!byHost.ok) return `points at ${article(byHost.addressClass)} ${byHost.addressClass} address, which this deployment does not deliver to`;
  if (canonicalAddress(host) !== null) return null;
  let addresses: { address: string }[] | undefined;
  try {
    addresses = await withinMs(resolveChecked(host, deps.allow, deps.resolve), deps.resolveTimeoutMs ?? DESTINATION_RESOLVE_TIMEOUT_MS);
  } catch (err) {
    const refusal = ssrfRefusalOf(err);
    if (refusal instanceof SsrfRefusedError) return `host ${host} resolves to ${article(refusal.addressClass)} ${refusal.addressClass} address, which this deployment does not deliver to`;
    return null;
  }
  if (addresses?.some(({ address }) => isOwnAddress(deps.own, address, port))) return LOOP;
  return null;
}

/** What `work` gives, or undefined once `ms` have passed without an answer. */
async function withinMs<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

function article(word: string): string {
  return /^[aeiou]/.test(word) ? 'an' : 'a';
}
