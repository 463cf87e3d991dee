import net, { isIP, type LookupFunction } from 'node:net';
import tls from 'node:tls';
import { checkHost, type AllowList } from '../../../core/address-policy';
import { endpointsOf } from '../../../core/destination-types';
import { pinnedLookup, resolveChecked, ssrfRefusalOf, unresolvedMessage, type ResolvedAddress, type Resolve } from '../../../platform/http/guarded-lookup';
import { PublishFailed } from './publisher';
import { isError, unresolvedCode } from './failure';

/**
 * What a broker connection may reach: the deployment's address policy, and the service's own
 * endpoints (its Kafka, Redis…), which no destination may name whatever the policy allows, or
 * a tenant could write into the service's own topics.
 */
export interface AddressGuard {
  allow: AllowList;
  /**
   * True when `address` on `port` is one of the service's own endpoints. Asked with the host as
   * the destination names it, then with every address the host resolves to.
   */
  ownEndpoint?: (address: string, port: number) => boolean;
  resolve?: Resolve;
}

function ownRefusal(host: string): PublishFailed {
  return new PublishFailed(`refused to connect to ${host}: it reaches this service's own endpoint`, { refused: true });
}

/**
 * The addresses `host` may be dialled at on `port`, each checked: a name is resolved once, and
 * the caller dials only these answers (a second lookup could be answered differently). Rejects
 * with a refusal (naming the host as written, never an address) or with a name that does not
 * resolve.
 */
export async function checkedAddresses(guard: AddressGuard, host: string, port: number): Promise<ResolvedAddress[]> {
  if (guard.ownEndpoint?.(host, port)) throw ownRefusal(host);
  let answers: ResolvedAddress[];
  try {
    answers = await resolveChecked(host, guard.allow, guard.resolve);
  } catch (err) {
    const refusal = ssrfRefusalOf(err);
    if (refusal) throw new PublishFailed(refusal.message, { refused: true });
    const code = unresolvedCode(err);
    if (code) throw new PublishFailed(unresolvedMessage(host, code));
    throw err;
  }
  if (answers.length === 0) throw new PublishFailed(`host ${host} does not resolve; attempts fail until it does`);
  if (guard.ownEndpoint && answers.some(({ address }) => guard.ownEndpoint?.(address, port))) throw ownRefusal(host);
  return answers;
}

/**
 * The host as a URL writes it: an IPv6 address in brackets.
 */
export function hostForUrl(address: string): string {
  return isIP(address) === 6 ? `[${address}]` : address;
}

/**
 * A socket to `host:port` for a client that dials by itself from addresses it learns (Kafka's
 * brokers advertise where their partitions live): each connection is resolved and checked on
 * its own, and dials exactly the addresses checked. A refused connection never dials; its
 * socket fails with the refusal, which `onRefused` also hears (the client wraps the error in
 * its own words on its way up).
 */
export function guardedSocket(
  guard: AddressGuard,
  target: { host: string; port: number; tls?: tls.ConnectionOptions | null },
  onConnect: () => void,
  onRefused: (refusal: PublishFailed) => void,
): net.Socket {
  const { host, port } = target;
  const fail = (socket: net.Socket, err: Error) => {
    if (err instanceof PublishFailed && err.refused) onRefused(err);
    socket.destroy(err);
  };
  // Node dials an IP literal without a lookup: it is checked here, before any socket exists
  if (isIP(host) !== 0) {
    const byHost = checkHost(host, guard.allow);
    const refusal = guard.ownEndpoint?.(host, port) ? ownRefusal(host) : byHost.ok ? null : new PublishFailed(`refused to connect to ${host}: ${byHost.reason}`, { refused: true });
    if (refusal) {
      const socket = new net.Socket();
      process.nextTick(() => fail(socket, refusal));
      return socket;
    }
  }
  const lookup: LookupFunction = (hostname, options, callback) => {
    checkedAddresses(guard, hostname, port).then(
      (addresses) => pinnedLookup(addresses)(hostname, options, callback),
      (err: unknown) => {
        if (err instanceof PublishFailed && err.refused) onRefused(err);
        callback(isError(err) ? err : new Error(String(err)), '');
      },
    );
  };
  const options = { host, port, lookup };
  const socket = target.tls ? tls.connect({ ...options, ...(isIP(host) === 0 ? { servername: host } : {}), ...target.tls }, onConnect) : net.connect(options, onConnect);
  socket.setKeepAlive(true, 60_000);
  return socket;
}

/** The one server a single-host broker URL names (nats, mqtt), and the checked address it is dialled at. */
export interface CheckedEndpoint {
  host: string;
  port: number;
  scheme: string;
  /** `host:port` as the tenant wrote it, for messages. */
  where: string;
  address: ResolvedAddress;
}

/** The destination's one server, parsed from its URL and checked against the address policy. */
export async function checkedEndpoint(guard: AddressGuard, type: 'nats' | 'mqtt', url: string): Promise<CheckedEndpoint> {
  const parsed = endpointsOf(type, url);
  if ('problem' in parsed) throw new PublishFailed(`the destination's URL ${parsed.problem}`);
  const endpoint = parsed.endpoints[0];
  if (!endpoint) throw new PublishFailed("the destination's URL names no host");
  const { host, port } = endpoint;
  const [address] = await checkedAddresses(guard, host, port);
  if (!address) throw new PublishFailed(`host ${host} does not resolve`);
  return { host, port, scheme: parsed.scheme, where: `${hostForUrl(host)}:${port}`, address };
}
