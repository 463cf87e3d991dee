import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import type { NatsConfig } from '../../../core/destination-types';
import type { Destination } from '../../../core/model';
import { errorChain, isError, networkFailure } from './failure';
import { checkedEndpoint, hostForUrl, type AddressGuard } from './guard';
import type { BrokerConnection, ConnectOptions, Connector } from './pool';
import { PublishFailed, type OutboundMessage } from './publisher';

/** A server that misses this many pings in a row (PING_INTERVAL_MS apart) is taken for gone. */
const PING_INTERVAL_MS = 30_000;
const MAX_PINGS_OUT = 2;

function named(err: unknown, name: string): Error | undefined {
  return errorChain(err).find((e) => e.name === name);
}

/** What a failed connect means for the tenant. */
function connectFailure(err: unknown, where: string): PublishFailed {
  const chain = errorChain(err);
  const refusal = chain.find((e): e is PublishFailed => e instanceof PublishFailed);
  if (refusal) return refusal;
  const auth = named(err, 'AuthorizationError') ?? named(err, 'UserAuthenticationExpiredError');
  if (auth) return new PublishFailed(`authentication failed: ${auth.message}`, { cause: err });
  const network = networkFailure(err, where);
  if (network) return new PublishFailed(network, { cause: err });
  if (chain.some((e) => /connection refused/i.test(e.message))) return new PublishFailed(`connection refused by ${where}`, { cause: err });
  if (named(err, 'TimeoutError')) return new PublishFailed(`connecting to ${where} timed out`, { cause: err });
  if (chain.some((e) => /does not support 'tls'/.test(e.message))) return new PublishFailed(`${where} does not offer TLS, which the destination asks for`, { cause: err });
  if (chain.some((e) => /'tls' is not available/.test(e.message))) return new PublishFailed(`${where} requires TLS: set tls in the destination's config`, { cause: err });
  return new PublishFailed(`could not connect to ${where}: ${chain[0]?.message ?? String(err)}`, { cause: err });
}

function isNoResponders(e: Error): boolean {
  const probe = (e as unknown as { isNoResponders?: unknown }).isNoResponders;
  return typeof probe === 'function' && (probe as () => boolean).call(e) === true;
}

/** What a failed JetStream publish means for the tenant. */
function publishFailure(err: unknown, subject: string, where: string, timeoutMs: number): PublishFailed {
  const chain = errorChain(err);
  if (chain.some((e) => e.name === 'JetStreamNotEnabled' || isNoResponders(e))) {
    return new PublishFailed(`no JetStream stream captures subject "${subject}" (the server answered: no responders)`, { cause: err });
  }
  const api = named(err, 'JetStreamApiError');
  if (api) return new PublishFailed(`the stream refused the message: ${api.message}`, { cause: err });
  const permission = named(err, 'PermissionViolationError');
  if (permission) return new PublishFailed(`not permitted to publish to subject "${subject}": ${permission.message}`, { cause: err });
  const auth = named(err, 'AuthorizationError');
  if (auth) return new PublishFailed(`authentication failed: ${auth.message}`, { cause: err });
  if (named(err, 'TimeoutError')) return new PublishFailed(`no acknowledgement from the broker within ${timeoutMs} ms`, { cause: err });
  if (named(err, 'ClosedConnectionError') || named(err, 'DrainingConnectionError')) return new PublishFailed(`connection to ${where} closed`, { cause: err });
  const network = networkFailure(err, where);
  if (network) return new PublishFailed(network, { cause: err });
  return new PublishFailed(chain[0]?.message ?? String(err), { cause: err });
}

class NatsConnectionHandle implements BrokerConnection {
  open = true;
  private readonly js: JetStreamClient;
  private lost: Error | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly config: NatsConfig,
    private readonly where: string,
  ) {
    this.js = jetstream(nc);
    void nc.closed().then((err) => {
      this.open = false;
      this.lost = isError(err) ? err : undefined;
    });
  }

  async send(message: OutboundMessage, timeoutMs: number): Promise<void> {
    if (!this.open || this.nc.isClosed()) throw this.connectionLost();
    const { subject } = this.config;
    try {
      const h = natsHeaders();
      for (const [name, value] of Object.entries(message.headers)) h.set(name, value);
      const msgID = message.headers['webhook-id'];
      // an ack with duplicate: true is the stream saying it already holds this delivery: delivered
      await this.js.publish(subject, message.body, { headers: h, timeout: timeoutMs, retries: 1, ...(msgID ? { msgID } : {}) });
    } catch (err) {
      // requests in flight when the connection closes fail as a bare "connection closed"
      if (this.nc.isClosed() && !named(err, 'TimeoutError')) throw this.connectionLost();
      throw publishFailure(err, subject, this.where, timeoutMs);
    }
  }

  private connectionLost(): PublishFailed {
    const detail = this.lost ? networkFailure(this.lost, this.where) ?? this.lost.message : undefined;
    return new PublishFailed(`connection to ${this.where} closed${detail ? `: ${detail}` : ''}`, { cause: this.lost });
  }

  async close(): Promise<void> {
    this.open = false;
    if (this.nc.isClosed()) return;
    await this.nc.close().catch(() => undefined);
  }
}

/**
 * A NATS connection per destination, to the one address its host was checked at (the client
 * resolves nothing itself, and learns no other servers from the cluster), without reconnects
 * of its own: a connection that closed is made again by the pool at the next publish. A
 * message is delivered when the stream capturing its subject acknowledges it.
 */
export function natsConnector(deps: { guard: AddressGuard }): Connector {
  return {
    async connect(destination: Destination, options: ConnectOptions): Promise<BrokerConnection> {
      const { host, port, where, address } = await checkedEndpoint(deps.guard, 'nats', destination.url);
      const config = (destination.config ?? {}) as unknown as NatsConfig;
      const auth = destination.auth;
      let nc: NatsConnection;
      try {
        nc = await connect({
          servers: [`${hostForUrl(address.address)}:${port}`],
          name: `hookline ${destination.id}`,
          ...(auth?.type === 'basic' ? { user: auth.username, pass: auth.password } : {}),
          ...(auth?.type === 'bearer' ? { token: auth.token } : {}),
          // the certificate is checked against the host as the tenant wrote it, not the address dialled;
          // null without TLS: no upgrade to a TLS the server merely offers
          tls: config.tls ? ({ servername: host } as Record<string, unknown>) : null,
          reconnect: false,
          timeout: options.connectTimeoutMs,
          ignoreClusterUpdates: true,
          noRandomize: true,
          resolve: false,
          noEcho: true,
          pingInterval: PING_INTERVAL_MS,
          maxPingOut: MAX_PINGS_OUT,
        });
      } catch (err) {
        throw connectFailure(err, where);
      }
      return new NatsConnectionHandle(nc, config, where);
    },
  };
}
