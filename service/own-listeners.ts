import { promises as dns } from 'node:dns';
import { networkInterfaces } from 'node:os';
import type { Config } from '../core/config';
import { canonicalAddress, ownListeners, type OwnListeners } from '../core/own-listeners';

/**
 * This process's idea of where the service listens, from HOST, the bound port (or PORT, in a
 * process without the API) and PUBLIC_BASE_URL with what its name resolves to now.
 */
export async function discoverOwnListeners(config: Config, apiUrl: string | undefined, publicBaseUrl: string, infrastructure: readonly string[] = []): Promise<OwnListeners> {
  const port = apiUrl ? Number(new URL(apiUrl).port) : config.port;
  const interfaceAddresses = Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address));
  const base = publicBaseUrl.endsWith(':0') ? undefined : publicBaseUrl;
  const publicAddresses = base ? await addressesOf(new URL(base).hostname) : [];
  return ownListeners({ bindHost: config.host, port, publicBaseUrl: base, interfaceAddresses, publicAddresses, infrastructure });
}

async function addressesOf(hostname: string): Promise<string[]> {
  if (canonicalAddress(hostname) !== null) return [];
  // a public base name that does not resolve here is still refused by name
  return dns.lookup(hostname, { all: true }).then((all) => all.map((a) => a.address), () => []);
}
