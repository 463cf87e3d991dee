import { isIPv4, isIPv6 } from 'node:net';

/** Why an address is not a public destination; `classifyAddress` answers null for public ones. */
export type AddressClass =
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'metadata'
  | 'unspecified'
  | 'multicast'
  | 'broadcast'
  | 'reserved'
  | 'cgnat'
  | 'documentation'
  | 'invalid'
  /** an address and port where this service itself listens (see own-listeners.ts) */
  | 'own-listener';

export interface Cidr {
  readonly family: 4 | 6;
  readonly network: bigint;
  readonly prefix: number;
}

/** Non-public ranges that deliveries may nevertheless reach (from `parseAllowList`). */
export interface AllowList {
  readonly ranges: readonly Cidr[];
}

export type Verdict = { ok: true } | { ok: false; reason: string; addressClass: AddressClass };

interface Ip {
  readonly family: 4 | 6;
  readonly value: bigint;
}

const bitsOf = (family: 4 | 6): number => (family === 4 ? 32 : 128);

function ipv4Value(text: string): bigint {
  return text.split('.').reduce((acc, part) => (acc << 8n) | BigInt(part), 0n);
}

function ipv6Value(text: string): bigint {
  // a trailing dotted quad (::ffff:1.2.3.4) stands for the last two groups
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)?.[1];
  if (quad !== undefined) {
    const v4 = ipv4Value(quad);
    text = `${text.slice(0, -quad.length)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const groupsOf = (part: string): string[] => (part === '' ? [] : part.split(':'));
  const front = groupsOf(head);
  const back = tail === undefined ? [] : groupsOf(tail);
  const zeros = new Array<string>(8 - front.length - back.length).fill('0');
  return [...front, ...zeros, ...back].reduce((acc, group) => (acc << 16n) | BigInt(parseInt(group, 16)), 0n);
}

function parseIp(text: string): Ip | null {
  if (isIPv4(text)) return { family: 4, value: ipv4Value(text) };
  // a zone index (fe80::1%eth0) names an interface, not part of the address
  const bare = text.split('%')[0] ?? '';
  if (isIPv6(bare)) return { family: 6, value: ipv6Value(bare) };
  return null;
}

function contains(range: Cidr, ip: Ip): boolean {
  if (range.family !== ip.family) return false;
  const hostBits = BigInt(bitsOf(ip.family) - range.prefix);
  return ip.value >> hostBits === range.network >> hostBits;
}

/** Parses `a.b.c.d/n`, `x::y/n` or a single address; answers a message when it is none of them. */
function parseCidr(text: string): Cidr | string {
  const [address = '', prefixText, extra] = text.split('/');
  const ip = address.includes('%') ? null : parseIp(address);
  if (ip === null || extra !== undefined) return `"${text}" is not an IP address, CIDR or keyword`;
  const bits = bitsOf(ip.family);
  if (prefixText === undefined) return { family: ip.family, network: ip.value, prefix: bits };
  const prefix = Number(prefixText);
  if (!/^\d{1,3}$/.test(prefixText) || prefix > bits) return `"${text}" has an invalid prefix length`;
  // host bits set usually means a typo in the network, so it is refused rather than masked
  if (ip.value & ((1n << BigInt(bits - prefix)) - 1n)) return `"${text}" has address bits set beyond its /${prefix} prefix`;
  return { family: ip.family, network: ip.value, prefix };
}

function cidr(text: string): Cidr {
  const parsed = parseCidr(text);
  if (typeof parsed === 'string') throw new Error(parsed);
  return parsed;
}

const KEYWORDS: Record<string, readonly Cidr[]> = {
  none: [],
  loopback: ['127.0.0.0/8', '::1/128'].map(cidr),
  private: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'].map(cidr),
};

/** `10.0.0.0/8, fd00::/8, 127.0.0.1, loopback, private, none`; an empty spec allows nothing. */
export function parseAllowList(spec: string): { allow: AllowList; errors: string[] } {
  const ranges: Cidr[] = [];
  const errors: string[] = [];
  for (const token of spec.split(',').map((t) => t.trim()).filter((t) => t !== '')) {
    const keyword = KEYWORDS[token.toLowerCase()];
    const parsed = keyword ?? parseCidr(token);
    if (typeof parsed === 'string') errors.push(parsed);
    else ranges.push(...(Array.isArray(parsed) ? parsed : [parsed]));
  }
  return { allow: { ranges }, errors };
}

// Instance-credential endpoints; refused unless listed one by one. 168.63.129.16 is public
// address space but is Azure's host endpoint (WireServer), never a customer's receiver.
const METADATA = [
  '169.254.169.254/32', // AWS, GCP, Azure, OpenStack, DigitalOcean, ...
  '169.254.170.2/32', // AWS ECS task credentials
  '169.254.170.23/32', // AWS EKS Pod Identity
  '100.100.100.200/32', // Alibaba Cloud
  '192.0.0.192/32', // Oracle Cloud
  '168.63.129.16/32', // Azure WireServer
  'fd00:ec2::254/128', // AWS IMDS over IPv6
  'fd00:ec2::23/128', // AWS EKS Pod Identity over IPv6
].map(cidr);

const METADATA_NAMES = new Set(['metadata.google.internal']);

// First match wins, so the broadcast address comes before 240/4.
const RANGES: readonly (readonly [Cidr, AddressClass])[] = (
  [
    ['0.0.0.0/8', 'unspecified'],
    ['10.0.0.0/8', 'private'],
    ['100.64.0.0/10', 'cgnat'],
    ['127.0.0.0/8', 'loopback'],
    ['169.254.0.0/16', 'link-local'],
    ['172.16.0.0/12', 'private'],
    ['192.0.0.0/24', 'reserved'],
    ['192.0.2.0/24', 'documentation'],
    ['192.88.99.0/24', 'reserved'],
    ['192.168.0.0/16', 'private'],
    ['198.18.0.0/15', 'reserved'],
    ['198.51.100.0/24', 'documentation'],
    ['203.0.113.0/24', 'documentation'],
    ['224.0.0.0/4', 'multicast'],
    ['255.255.255.255/32', 'broadcast'],
    ['240.0.0.0/4', 'reserved'],
    ['::/128', 'unspecified'],
    ['::1/128', 'loopback'],
    ['64:ff9b:1::/48', 'private'],
    ['100::/64', 'reserved'],
    ['2001::/32', 'reserved'], // Teredo: the real endpoint is obfuscated in the address
    ['2001:2::/48', 'reserved'],
    ['2001:10::/28', 'reserved'],
    ['2001:20::/28', 'reserved'],
    ['2001:db8::/32', 'documentation'],
    ['3fff::/20', 'documentation'],
    ['5f00::/16', 'reserved'],
    ['fc00::/7', 'private'],
    ['fe80::/10', 'link-local'],
    ['ff00::/8', 'multicast'],
  ] as const
).map(([range, addressClass]) => [cidr(range), addressClass] as const);

// IPv6 forms whose packets end up at an IPv4 address, and where that address sits (shift right).
const EMBEDDINGS: readonly (readonly [Cidr, bigint])[] = [
  [cidr('::ffff:0:0/96'), 0n], // IPv4-mapped
  [cidr('::ffff:0:0:0/96'), 0n], // IPv4-translated (SIIT)
  [cidr('64:ff9b::/96'), 0n], // NAT64
  [cidr('2002::/16'), 80n], // 6to4
  [cidr('::/96'), 0n], // IPv4-compatible
];

const GLOBAL_UNICAST_V6 = cidr('2000::/3');

function embeddedIpv4(ip: Ip): Ip | null {
  // :: and ::1 are themselves, not IPv4-compatible forms of 0.0.0.0 and 0.0.0.1
  if (ip.family !== 6 || ip.value <= 1n) return null;
  const embedding = EMBEDDINGS.find(([range]) => contains(range, ip));
  return embedding ? { family: 4, value: (ip.value >> embedding[1]) & 0xffffffffn } : null;
}

function classify(ip: Ip): AddressClass | null {
  if (METADATA.some((range) => contains(range, ip))) return 'metadata';
  const embedded = embeddedIpv4(ip);
  if (embedded) return classify(embedded);
  const match = RANGES.find(([range]) => contains(range, ip));
  if (match) return match[1];
  // all IPv6 unicast that is routed on the internet lies in 2000::/3
  return ip.family === 6 && !contains(GLOBAL_UNICAST_V6, ip) ? 'reserved' : null;
}

/** null for a public address; a non-address answers 'invalid' so that it is never taken as public. */
export function classifyAddress(ip: string): AddressClass | null {
  const parsed = parseIp(ip);
  return parsed ? classify(parsed) : 'invalid';
}

function refusal(subject: string, kind: 'address' | 'name', addressClass: AddressClass): Verdict {
  const article = /^[aeiou]/.test(addressClass) ? 'an' : 'a';
  const why = addressClass === 'metadata' ? 'allowed only when listed as that single address' : 'not in the allow list';
  return { ok: false, reason: `${subject} is ${article} ${addressClass} ${kind}, ${why}`, addressClass };
}

/** Public addresses pass; others only inside the allow list, metadata only when listed as that single address. */
export function isAllowed(ip: string, allow: AllowList): Verdict {
  const addressClass = classifyAddress(ip);
  if (addressClass === null) return { ok: true };
  const parsed = parseIp(ip);
  if (parsed === null) return { ok: false, reason: `"${ip}" is not an IP address`, addressClass: 'invalid' };
  const forms = [parsed, embeddedIpv4(parsed)].filter((form): form is Ip => form !== null);
  const single = addressClass === 'metadata';
  const listed = allow.ranges.some(
    (range) => (!single || range.prefix === bitsOf(range.family)) && forms.some((form) => contains(range, form)),
  );
  return listed ? { ok: true } : refusal(ip, 'address', addressClass);
}

/**
 * The check that needs no DNS: IP literals (with or without [brackets]) by their address, and the
 * names that mean loopback or metadata by what they stand for. Other names pass here; their
 * addresses are checked when they are resolved.
 */
export function checkHost(host: string, allow: AllowList): Verdict {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (parseIp(bare) !== null) return isAllowed(bare, allow);
  const name = bare.toLowerCase().replace(/\.$/, '');
  const standsFor = name === 'localhost' || name.endsWith('.localhost') ? '127.0.0.1' : METADATA_NAMES.has(name) ? '169.254.169.254' : null;
  if (standsFor === null) return { ok: true };
  const verdict = isAllowed(standsFor, allow);
  return verdict.ok ? verdict : refusal(name, 'name', verdict.addressClass);
}
