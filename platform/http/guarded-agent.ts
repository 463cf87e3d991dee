import { Agent, buildConnector } from 'undici';
import { checkHost, isAllowed, type AllowList, type Verdict } from '../../core/address-policy';
import { isOwnAddress, isOwnHost, type OwnListeners } from '../../core/own-listeners';
import { guardedLookup, SsrfRefusedError, type Resolve } from './guarded-lookup';

export { isSsrfRefusal, ssrfRefusalOf, SsrfRefusedError } from './guarded-lookup';

export interface GuardedAgentOptions {
  allow: AllowList;
  connectTimeoutMs: number;
  totalTimeoutMs: number;
  resolve?: Resolve;
  connections?: number;
  /** Where this service listens: refused on every connection, even where loopback is allowed. */
  own?: OwnListeners;
}

/**
 * What can be decided from the URL alone: IP literals (which Node connects to without any
 * lookup) and the loopback and metadata names. Other names are checked at connect time.
 */
export function checkTarget(url: URL, allow: AllowList): Verdict {
  return checkHost(url.hostname, allow);
}

const LOOP: Verdict = { ok: false, reason: "it is this service's own endpoint", addressClass: 'own-listener' };

function refuse(host: string, address: string | null, verdict: Exclude<Verdict, { ok: true }>): SsrfRefusedError {
  return new SsrfRefusedError(host, address, verdict.addressClass, verdict.reason);
}

/**
 * An undici Agent that can only connect to addresses the allow list permits. Three layers, so that
 * no route around one of them gets through: the host is checked before connecting (literals skip
 * DNS), names are resolved by the guarded lookup (the socket dials exactly the checked answer),
 * and the socket's actual peer address is checked again before undici may write to it.
 */
export function createGuardedAgent(options: GuardedAgentOptions): Agent {
  const { allow } = options;
  const dial = buildConnector({ timeout: options.connectTimeoutMs, lookup: guardedLookup(allow, options.resolve) });
  const own = options.own;
  const connect: buildConnector.connector = (target, callback) => {
    const port = Number(target.port) || (target.protocol === 'https:' ? 443 : 80);
    const verdict = own && isOwnHost(own, target.hostname, port) ? LOOP : checkHost(target.hostname, allow);
    if (!verdict.ok) {
      const err = refuse(target.hostname, null, verdict);
      // undici expects the outcome asynchronously, as a socket would report it
      process.nextTick(() => callback(err, null));
      return;
    }
    dial(target, (err, socket) => {
      if (err) return callback(err, null);
      const peer = socket.remoteAddress;
      // the peer is checked after DNS, so a name that later points at the service is caught here
      const looped = own !== undefined && peer !== undefined && isOwnAddress(own, peer, socket.remotePort ?? port);
      const actual = peer === undefined ? null : looped ? LOOP : isAllowed(peer, allow);
      if (actual?.ok) return callback(null, socket);
      socket.destroy();
      if (actual === null) callback(Object.assign(new Error(`connection to ${target.hostname} closed at once`), { code: 'ECONNRESET' }), null);
      else callback(refuse(target.hostname, peer ?? null, actual), null);
    });
  };
  return new Agent({
    connect,
    headersTimeout: options.totalTimeoutMs,
    bodyTimeout: options.totalTimeoutMs,
    keepAliveTimeout: 10_000,
    connections: options.connections ?? 64,
  });
}
