import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { connectAsync, ReasonCodes, type IClientOptions, type IClientPublishOptions, type MqttClient } from 'mqtt';
import type { MqttConfig } from '../../../core/destination-types';
import type { Destination } from '../../../core/model';
import { errorChain, messageOf, networkFailure } from './failure';
import { checkedEndpoint, hostForUrl, type AddressGuard } from './guard';
import type { BrokerConnection, ConnectOptions, Connector } from './pool';
import { PublishFailed, type OutboundMessage } from './publisher';

/** Seconds between keep-alives: a broker gone silent is noticed within one and a half. */
const KEEPALIVE_S = 30;

/** CONNACK codes that mean the credentials were not accepted (3.1.1: 4, 5; MQTT 5: 0x86, 0x87, 0x8C). */
const AUTH_CODES = new Set([4, 5, 0x86, 0x87, 0x8c]);

function reasonCodeOf(err: unknown): number | undefined {
  for (const e of errorChain(err)) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'number') return code;
  }
  return undefined;
}

function hex(code: number): string {
  return `0x${code.toString(16).padStart(2, '0')}`;
}

function connectFailure(err: unknown, where: string): PublishFailed {
  const chain = errorChain(err);
  const refusal = chain.find((e): e is PublishFailed => e instanceof PublishFailed);
  if (refusal) return refusal;
  const code = reasonCodeOf(err);
  const meaning = code === undefined ? undefined : ReasonCodes[code as keyof typeof ReasonCodes];
  if (code !== undefined && AUTH_CODES.has(code)) return new PublishFailed(`authentication failed: ${meaning ?? 'refused'} (reason code ${hex(code)})`, { cause: err });
  if (code !== undefined && meaning) return new PublishFailed(`the broker refused the connection: ${meaning} (reason code ${hex(code)})`, { cause: err });
  const network = networkFailure(err, where);
  if (network) return new PublishFailed(network, { cause: err });
  if (chain.some((e) => /connack timeout/.test(e.message))) return new PublishFailed(`${where} did not answer the MQTT connect in time`, { cause: err });
  return new PublishFailed(`could not connect to ${where}: ${chain[0]?.message ?? String(err)}`, { cause: err });
}

class MqttConnection implements BrokerConnection {
  open = true;
  private lost: Error | undefined;

  constructor(
    private readonly client: MqttClient,
    private readonly config: MqttConfig,
    private readonly where: string,
  ) {
    client.on('error', (err: Error) => {
      this.lost = err;
    });
    client.on('close', () => {
      this.open = false;
      // without reconnects, QoS 1 publishes waiting for a PUBACK would wait for ever: ending the
      // client fails them now ("Connection closed")
      client.end(true);
    });
  }

  async send(message: OutboundMessage, _timeoutMs: number): Promise<void> {
    if (!this.open || !this.client.connected) throw this.connectionLost();
    const { topic } = this.config;
    const v5 = (this.config.protocol_version ?? 5) === 5;
    const contentType = message.headers['content-type'];
    const options: IClientPublishOptions = v5
      ? { qos: 1, properties: { userProperties: message.headers, ...(contentType ? { contentType } : {}) } }
      : { qos: 1 };
    try {
      await this.client.publishAsync(topic, message.body, options);
    } catch (err) {
      const code = reasonCodeOf(err);
      if (code !== undefined && code >= 0x80) {
        const meaning = ReasonCodes[code as keyof typeof ReasonCodes] ?? 'refused';
        throw new PublishFailed(`the broker refused the message on topic "${topic}": ${meaning} (reason code ${hex(code)})`, { cause: err });
      }
      if (!this.open || /Connection closed|client disconnecting/i.test(messageOf(err))) throw this.connectionLost();
      throw new PublishFailed(`could not publish to topic "${topic}": ${messageOf(err)}`, { cause: err });
    }
  }

  private connectionLost(): PublishFailed {
    const detail = this.lost ? networkFailure(this.lost, this.where) ?? this.lost.message : undefined;
    return new PublishFailed(`connection to ${this.where} closed${detail ? `: ${detail}` : ''}`, { cause: this.lost });
  }

  async close(): Promise<void> {
    this.open = false;
    await this.client.endAsync(true).catch(() => undefined);
  }
}

/**
 * mqtt.js per destination, clean start, QoS 1: delivered means the PUBACK (under MQTT 5 with a
 * success reason code). The client dials the one address the host was checked at, and does not
 * reconnect by itself: a connection that closed is made again by the pool at the next publish.
 */
export function mqttConnector(deps: { guard: AddressGuard }): Connector {
  return {
    async connect(destination: Destination, options: ConnectOptions): Promise<BrokerConnection> {
      const { host, port, scheme, where, address } = await checkedEndpoint(deps.guard, 'mqtt', destination.url);
      const config = (destination.config ?? {}) as unknown as MqttConfig;
      const auth = destination.auth?.type === 'basic' ? destination.auth : undefined;
      const brokerUrl = `${scheme === 'mqtts' ? 'mqtts' : 'mqtt'}://${hostForUrl(address.address)}:${port}`;
      const clientOptions: IClientOptions = {
        // the certificate is checked against the host as the tenant wrote it, not the address dialled
        ...(scheme === 'mqtts' && isIP(host) === 0 ? { servername: host } : {}),
        rejectUnauthorized: true,
        protocolVersion: config.protocol_version ?? 5,
        clientId: `hookline-${destination.id}-${randomBytes(4).toString('hex')}`,
        clean: true,
        reconnectPeriod: 0,
        connectTimeout: options.connectTimeoutMs,
        keepalive: KEEPALIVE_S,
        queueQoSZero: false,
        ...(auth ? { username: auth.username, password: auth.password } : {}),
      };
      let client: MqttClient;
      try {
        // allowRetries false: a connection closed before the CONNACK fails now, not at the connect timeout
        client = await connectAsync(brokerUrl, clientOptions, false);
      } catch (err) {
        throw connectFailure(err, where);
      }
      return new MqttConnection(client, config, where);
    },
  };
}
