import { checkHost, type AllowList } from '../../core/address-policy';
import { canonicalAddress, isOwnAddress, isOwnHost, portOf, type OwnListeners } from '../../core/own-listeners';
import { resolveChecked, ssrfRefusalOf, SsrfRefusedError, type Resolve } from './guarded-lookup';

export interface DestinationCheckDeps {
  allow: AllowList;
  own: OwnListeners;
  resolve?: Resolve;
}

const LOOP = "points at this service's own endpoint, which would deliver its deliveries back to itself";

/**
 * Why a destination URL is refused at create time, or null. The same checks run again on every
 * connection (a name's DNS can change later); this one gives the tenant the answer up front. The
 * answer names the host only as the tenant wrote it, never an address it resolved to.
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
  let addresses: { address: string }[];
  try {
    addresses = await resolveChecked(host, deps.allow, deps.resolve);
  } catch (err) {
    const refusal = ssrfRefusalOf(err);
    if (refusal instanceof SsrfRefusedError) return `host ${host} resolves to ${article(refusal.addressClass)} ${refusal.addressClass} address, which this deployment does not deliver to`;
    return `host ${host} does not resolve`;
  }
  if (addresses.length === 0) return `host ${host} does not resolve`;
  if (addresses.some(({ address }) => isOwnAddress(deps.own, address, port))) return LOOP;
  return null;
}

function article(word: string): string {
  return /^[aeiou]/.test(word) ? 'an' : 'a';
}
