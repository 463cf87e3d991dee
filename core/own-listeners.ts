import { isIP } from 'node:net';

/**
 * Where this service itself answers, so that no destination can point back at it (a delivery to
 * its own Hook URL would be accepted, routed and delivered again, without end). Built from the
 * configuration (HOST, the bound PORT, PUBLIC_BASE_URL), so that an API process and a separate
 * deliver process know the same listeners.
 */
export interface OwnListeners {
  /** `name:port` of names that reach the service (PUBLIC_BASE_URL's host), lower case, no trailing dot. */
  readonly names: ReadonlySet<string>;
  /** canonical `address:port` pairs (IPv4-mapped IPv6 written as IPv4). */
  readonly endpoints: ReadonlySet<string>;
  /**
   * ports on which every loopback address (127.0.0.0/8, ::1) counts as the service: bound to all
   * interfaces it is, and bound to one loopback address the rest are refused too, being cheaper
   * to refuse than to tell apart.
   */
  readonly loopbackPorts: ReadonlySet<number>;
}

export interface ListenerSpec {
  /** the address the API is bound to (HOST); `0.0.0.0` or `::` for every interface. */
  bindHost: string;
  /** the port it is actually bound to (never 0). */
  port: number;
  publicBaseUrl?: string;
  /** the addresses of this machine's interfaces (os.networkInterfaces()), used when bound to all. */
  interfaceAddresses?: readonly string[];
  /** what PUBLIC_BASE_URL's host resolved to, when it is a name. */
  publicAddresses?: readonly string[];
  /**
   * `host:port` of the service's own infrastructure (its Kafka brokers, Redis, ClickHouse, schema
   * registry): a broker destination there would let a tenant write into the service's own topics.
   */
  infrastructure?: readonly string[];
}

const WILDCARDS = new Set(['0.0.0.0', '::']);

/** The port a URL connects to: its own, or its scheme's. */
export function portOf(url: URL): number {
  if (url.port !== '') return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

/**
 * One spelling per address, as WHATWG URL writes it (127.1, 0x7f.1, 2130706433 -> 127.0.0.1;
 * IPv6 compressed), with IPv4-mapped and IPv4-compatible IPv6 written as the IPv4 they reach.
 * null when `text` is not an address.
 */
export function canonicalAddress(text: string): string | null {
  const bare = (text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text).split('%')[0] ?? '';
  const family = isIP(bare);
  if (family === 0) return null;
  if (family === 4) return bare.split('.').map(Number).join('.');
  const host = new URL(`http://[${bare}]/`).hostname.slice(1, -1);
  const embedded = /^::(?:ffff:)?([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host);
  if (embedded) {
    const value = (parseInt(embedded[1] ?? '0', 16) << 16) | parseInt(embedded[2] ?? '0', 16);
    return [24, 16, 8, 0].map((shift) => (value >>> shift) & 0xff).join('.');
  }
  return host;
}

function nameOf(host: string): string {
  return host.toLowerCase().replace(/\.$/, '');
}

function isLoopback(address: string): boolean {
  return address === '::1' || address.startsWith('127.');
}

export function ownListeners(spec: ListenerSpec): OwnListeners {
  const names = new Set<string>();
  const endpoints = new Set<string>();
  const loopbackPorts = new Set<number>();
  const addEndpoint = (address: string, port: number) => {
    const canonical = canonicalAddress(address);
    if (canonical === null) return;
    if (isLoopback(canonical)) loopbackPorts.add(port);
    endpoints.add(`${canonical}:${port}`);
  };
  const bind = canonicalAddress(spec.bindHost);
  // 0.0.0.0 and :: as a destination connect to the local host, whatever the bind address
  for (const wildcard of WILDCARDS) addEndpoint(wildcard, spec.port);
  if (bind === null || WILDCARDS.has(bind)) {
    // bound to a name (usually localhost) or to every interface: loopback reaches it, and so
    // does every address of every interface
    loopbackPorts.add(spec.port);
    names.add(`localhost:${spec.port}`);
    if (bind === null) names.add(`${nameOf(spec.bindHost)}:${spec.port}`);
    for (const address of spec.interfaceAddresses ?? []) addEndpoint(address, spec.port);
  } else {
    addEndpoint(bind, spec.port);
    if (isLoopback(bind)) names.add(`localhost:${spec.port}`);
  }
  if (spec.publicBaseUrl) {
    const base = new URL(spec.publicBaseUrl);
    const port = portOf(base);
    const literal = canonicalAddress(base.hostname);
    if (literal !== null) addEndpoint(literal, port);
    else names.add(`${nameOf(base.hostname)}:${port}`);
    for (const address of spec.publicAddresses ?? []) addEndpoint(address, port);
  }
  for (const hostPort of spec.infrastructure ?? []) {
    const at = URL.parse(`http://${hostPort}/`);
    if (!at || at.port === '') continue;
    const host = at.hostname.startsWith('[') ? at.hostname.slice(1, -1) : at.hostname;
    if (canonicalAddress(host) !== null) addEndpoint(host, Number(at.port));
    else names.add(`${nameOf(host)}:${at.port}`);
  }
  return { names, endpoints, loopbackPorts };
}

/** Whether connecting to `address` on `port` reaches the service itself. */
export function isOwnAddress(own: OwnListeners, address: string, port: number): boolean {
  const canonical = canonicalAddress(address);
  if (canonical === null) return false;
  if (own.loopbackPorts.has(port) && isLoopback(canonical)) return true;
  return own.endpoints.has(`${canonical}:${port}`);
}

/** Whether `host` (a name or a literal, as in URL.hostname) on `port` is the service itself, without DNS. */
export function isOwnHost(own: OwnListeners, host: string, port: number): boolean {
  if (canonicalAddress(host) !== null) return isOwnAddress(own, host, port);
  const name = nameOf(host);
  if (own.names.has(`${name}:${port}`)) return true;
  // localhost and *.localhost are loopback by definition (RFC 6761)
  return (name === 'localhost' || name.endsWith('.localhost')) && own.loopbackPorts.has(port);
}
