import { isIP } from 'node:net';
import amqplib, { type ChannelModel, type ConfirmChannel, type Message } from 'amqplib';
import { amqpVhost, endpointsOf, type AmqpConfig } from '../../../core/destination-types';
import type { Destination } from '../../../core/model';
import { errorChain, isError, messageOf, networkFailure } from './failure';
import { pinnedLookup } from '../../../platform/http/guarded-lookup';
import { checkedAddresses, type AddressGuard } from './guard';
import type { BrokerConnection, ConnectOptions, Connector } from './pool';
import { PublishFailed, type OutboundMessage } from './publisher';

/** Seconds between heartbeats: a connection whose broker went silent is noticed within two. */
const HEARTBEAT_S = 30;

/** The broker's reply text out of an amqplib message ("… with message "ACCESS_REFUSED - …""). */
function brokerReason(err: Error): string {
  return /with message "(.*)"$/s.exec(err.message)?.[1] ?? err.message;
}

/** What a failed connect means for the tenant: authentication, a vhost, or the network. */
function connectFailure(err: unknown, where: string, vhost: string): PublishFailed {
  const chain = errorChain(err);
  const refusal = chain.find((e): e is PublishFailed => e instanceof PublishFailed);
  if (refusal) return refusal;
  const network = networkFailure(err, where);
  if (network) return new PublishFailed(network, { cause: err });
  const first = chain[0];
  if (!first) return new PublishFailed(`could not connect to ${where}: ${String(err)}`);
  const reason = brokerReason(first);
  if (/ACCESS_REFUSED|\b403\b/.test(first.message) && /login|authentication|password|credentials/i.test(first.message)) {
    return new PublishFailed(`authentication failed: ${reason}`, { cause: err });
  }
  if (/NOT_ALLOWED|\b530\b/.test(first.message)) return new PublishFailed(`the broker refused the virtual host: ${reason}`, { cause: err });
  // amqplib drops the broker's reason when it closes the connection at connection.open
  if (/Expected ConnectionOpenOk; got <ConnectionClose/.test(first.message)) {
    return new PublishFailed(`the broker refused to open virtual host "${vhost}" (it does not exist, or the user may not use it)`, { cause: err });
  }
  if (/ACCESS_REFUSED/.test(first.message)) return new PublishFailed(`access refused: ${reason}`, { cause: err });
  if (/ETIMEDOUT/.test(first.message)) return new PublishFailed(`connecting to ${where} timed out`, { cause: err });
  return new PublishFailed(`could not connect to ${where}: ${reason}`, { cause: err });
}

/** What a channel closed by the broker means (an exchange that does not exist: 404). */
function channelFailure(err: Error, config: AmqpConfig): PublishFailed {
  const reason = brokerReason(err);
  if (/no exchange/.test(reason)) return new PublishFailed(`exchange "${config.exchange}" does not exist: ${reason}`, { cause: err });
  if (/ACCESS_REFUSED/.test(reason)) return new PublishFailed(`not permitted to publish to exchange "${config.exchange}": ${reason}`, { cause: err });
  return new PublishFailed(`the broker closed the channel: ${reason}`, { cause: err });
}

interface Pending {
  messageId: string | undefined;
  returned: boolean;
}

/** One confirm channel and what it owes: publishes waiting for their confirm, in publish order. */
interface ChannelState {
  channel: Promise<ConfirmChannel>;
  pending: Pending[];
  /** Why the broker closed the channel: every publish still waiting fails with it. */
  error: PublishFailed | undefined;
  closed: boolean;
}

class AmqpConnection implements BrokerConnection {
  open = true;
  private current: ChannelState | undefined;
  private blocked: string | undefined;
  private lost: Error | undefined;

  constructor(
    private readonly model: ChannelModel,
    private readonly config: AmqpConfig,
    private readonly where: string,
  ) {
    model.on('error', (err: Error) => {
      this.lost = err;
    });
    model.on('close', (err?: Error) => {
      this.open = false;
      this.lost ??= err;
    });
    model.on('blocked', (reason: string) => {
      this.blocked = reason;
    });
    model.on('unblocked', () => {
      this.blocked = undefined;
    });
  }

  stalled(): string | undefined {
    return this.blocked === undefined ? undefined : `the broker blocks publishers: ${this.blocked}`;
  }

  /** The channel now, made again after the broker closed the last one (a publish to a missing exchange). */
  private channelState(): ChannelState {
    if (this.current && !this.current.closed) return this.current;
    const state: ChannelState = { channel: this.model.createConfirmChannel(), pending: [], error: undefined, closed: false };
    this.current = state;
    state.channel.then(
      (channel) => {
        channel.on('error', (err: Error) => {
          state.error = channelFailure(err, this.config);
        });
        channel.on('close', () => {
          state.closed = true;
        });
        // mandatory: a message no queue took comes back before its confirm
        channel.on('return', (msg: Message) => {
          const id = msg.properties.messageId as string | undefined;
          const record = state.pending.find((p) => !p.returned && p.messageId === id);
          if (record) record.returned = true;
        });
      },
      () => {
        state.closed = true;
      },
    );
    return state;
  }

  async send(message: OutboundMessage, _timeoutMs: number): Promise<void> {
    if (!this.open) throw this.connectionLost();
    const state = this.channelState();
    let channel: ConfirmChannel;
    try {
      channel = await state.channel;
    } catch (err) {
      throw this.open ? new PublishFailed(`could not open a channel on ${this.where}: ${isError(err) ? brokerReason(err) : String(err)}`, { cause: err }) : this.connectionLost();
    }
    const { exchange, routing_key: routingKey } = this.config;
    const messageId = message.headers['webhook-id'];
    const timestamp = Number(message.headers['webhook-timestamp']);
    const record: Pending = { messageId, returned: false };
    state.pending.push(record);
    const settle = () => {
      const at = state.pending.indexOf(record);
      if (at >= 0) state.pending.splice(at, 1);
    };
    await new Promise<void>((resolve, reject) => {
      try {
        channel.publish(
          exchange,
          routingKey,
          message.body,
          {
            persistent: true,
            mandatory: true,
            contentType: message.headers['content-type'],
            messageId,
            ...(Number.isFinite(timestamp) ? { timestamp } : {}),
            headers: message.headers,
          },
          (err: unknown) => {
            settle();
            if (!err) {
              if (record.returned) reject(new PublishFailed(`no queue took the message (exchange "${exchange}", routing key "${routingKey}")`));
              else resolve();
              return;
            }
            // amqplib fails the channel's confirms before it reports the connection's loss: the
            // reason is decided once that report had its turn
            setImmediate(() => reject(state.error ?? (this.open ? new PublishFailed(`the broker did not take the message: ${messageOf(err)}`, { cause: err }) : this.connectionLost())));
          },
        );
      } catch (err) {
        // a channel closed a moment ago, or headers too large to encode
        settle();
        reject(state.error ?? (this.open ? new PublishFailed(`could not publish: ${messageOf(err)}`, { cause: err }) : this.connectionLost()));
      }
    });
  }

  private connectionLost(): PublishFailed {
    const detail = this.lost ? networkFailure(this.lost, this.where) ?? brokerReason(this.lost) : undefined;
    return new PublishFailed(`connection to ${this.where} closed${detail ? `: ${detail}` : ''}`, { cause: this.lost });
  }

  async close(): Promise<void> {
    const wasOpen = this.open;
    this.open = false;
    if (!wasOpen) return;
    await this.model.close().catch(() => undefined);
  }
}

/**
 * amqplib with publisher confirms: a message is delivered when the broker confirms it, and a
 * mandatory one that no queue took is returned first and fails the attempt. One connection and
 * one confirm channel per destination; a channel the broker closes (an exchange that does not
 * exist) fails what was in flight on it with the broker's reason and is made again.
 */
export function amqpConnector(deps: { guard: AddressGuard }): Connector {
  return {
    async connect(destination: Destination, options: ConnectOptions): Promise<BrokerConnection> {
      const parsed = endpointsOf('amqp', destination.url);
      if ('problem' in parsed) throw new PublishFailed(`the destination's URL ${parsed.problem}`);
      const endpoint = parsed.endpoints[0];
      if (!endpoint) throw new PublishFailed("the destination's URL names no host");
      const { host, port } = endpoint;
      const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
      const addresses = await checkedAddresses(deps.guard, host, port);
      const config = (destination.config ?? {}) as unknown as AmqpConfig;
      const auth = destination.auth?.type === 'basic' ? destination.auth : undefined;
      let model: ChannelModel;
      try {
        model = await amqplib.connect(
          {
            protocol: parsed.scheme,
            hostname: host,
            port,
            ...(auth ? { username: auth.username, password: auth.password } : {}),
            // amqplib unescapes the vhost once more: a "%" in it must reach the broker as itself
            vhost: amqpVhost(destination.url).replace(/%/g, '%25'),
            heartbeat: HEARTBEAT_S,
          },
          {
            lookup: pinnedLookup(addresses),
            timeout: options.connectTimeoutMs,
            noDelay: true,
            ...(isIP(host) === 0 ? { servername: host } : {}),
            clientProperties: { connection_name: `hookline ${destination.id}` },
          },
        );
      } catch (err) {
        throw connectFailure(err, where, amqpVhost(destination.url));
      }
      return new AmqpConnection(model, config, where);
    },
  };
}
