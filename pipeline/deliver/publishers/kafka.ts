import { Kafka, logLevel, type Producer, type SASLOptions } from 'kafkajs';
import { endpointsOf, type KafkaConfig } from '../../../core/destination-types';
import type { Destination } from '../../../core/model';
import { errorChain, networkFailure } from './failure';
import { checkedAddresses, guardedSocket, type AddressGuard } from './guard';
import type { BrokerConnection, ConnectOptions, Connector } from './pool';
import { whereOf } from './pool';
import { PublishFailed, type OutboundMessage } from './publisher';

/**
 * Retries of one send inside kafkajs (metadata refreshed between them, a leader that moved found
 * again): few, so that an outage reaches the delivery stage, whose retry schedule is the one
 * the tenant configured.
 */
const SEND_RETRIES = 2;

/** Protocol errors about the record or the topic rather than the connection: the connection stays. */
const RECORD_ERRORS = new Set([
  'UNKNOWN_TOPIC_OR_PARTITION',
  'TOPIC_AUTHORIZATION_FAILED',
  'MESSAGE_TOO_LARGE',
  'RECORD_LIST_TOO_LARGE',
  'INVALID_RECORD',
  'CORRUPT_MESSAGE',
  'POLICY_VIOLATION',
  'INVALID_TOPIC_EXCEPTION',
]);

function protocolType(err: unknown): string | undefined {
  for (const e of errorChain(err)) {
    const type = (e as { type?: unknown }).type;
    if (typeof type === 'string') return type;
  }
  return undefined;
}

/** What a kafkajs failure means for the tenant; `broker` is where it happened when kafkajs says. */
function kafkaFailure(err: unknown, destination: Destination, config: KafkaConfig): PublishFailed {
  const chain = errorChain(err);
  const refusal = chain.find((e): e is PublishFailed => e instanceof PublishFailed);
  if (refusal) return refusal;
  if (chain.some((e) => e.name === 'KafkaJSSASLAuthenticationError')) {
    const detail = chain.find((e) => e.name === 'KafkaJSSASLAuthenticationError')?.message ?? '';
    return new PublishFailed(`authentication failed: ${detail}`, { cause: err });
  }
  const type = protocolType(err);
  if (type === 'UNKNOWN_TOPIC_OR_PARTITION') return new PublishFailed(`topic "${config.topic}" does not exist`, { cause: err });
  if (type === 'TOPIC_AUTHORIZATION_FAILED') return new PublishFailed(`not authorized to write to topic "${config.topic}"`, { cause: err });
  if (type === 'SASL_AUTHENTICATION_FAILED') return new PublishFailed(`authentication failed: ${chain[chain.length - 1]?.message ?? ''}`, { cause: err });
  if (type === 'MESSAGE_TOO_LARGE' || type === 'RECORD_LIST_TOO_LARGE') return new PublishFailed(`the record is larger than topic "${config.topic}" accepts`, { cause: err });
  if (chain.some((e) => e.name === 'KafkaJSRequestTimeoutError')) return new PublishFailed('no acknowledgement from the broker in time (request timed out)', { cause: err });
  const broker = chain.map((e) => (e as { broker?: unknown }).broker).find((b): b is string => typeof b === 'string');
  const network = networkFailure(err, broker ?? whereOf(destination));
  if (network) return new PublishFailed(network, { cause: err });
  if (chain.some((e) => e.name === 'KafkaJSConnectionClosedError')) return new PublishFailed(`connection to ${broker ?? whereOf(destination)} closed`, { cause: err });
  // the innermost says what happened; kafkajs's wrappers only count retries
  const inner = chain[chain.length - 1];
  return new PublishFailed(inner?.message ?? String(err), { cause: err });
}

function saslOf(destination: Destination, config: KafkaConfig): SASLOptions | undefined {
  if (!config.sasl_mechanism) return undefined;
  const auth = destination.auth;
  if (auth?.type !== 'basic') throw new PublishFailed(`SASL ${config.sasl_mechanism} needs basic auth (a username and password)`);
  return { mechanism: config.sasl_mechanism, username: auth.username, password: auth.password } as SASLOptions;
}

class KafkaConnection implements BrokerConnection {
  open = true;

  constructor(
    private readonly producer: Producer,
    private readonly destination: Destination,
    private readonly config: KafkaConfig,
    private readonly refusal: () => PublishFailed | undefined,
  ) {}

  async send(message: OutboundMessage, timeoutMs: number): Promise<void> {
    try {
      await this.producer.send({
        topic: this.config.topic,
        acks: -1,
        timeout: timeoutMs,
        messages: [{ key: message.key, value: message.body, headers: message.headers }],
      });
    } catch (err) {
      const refused = this.refusal();
      if (refused) {
        this.open = false;
        throw refused;
      }
      // a failure of the connection (not of this record): the next publish makes a new client,
      // which finds the cluster from its bootstrap servers again
      if (!RECORD_ERRORS.has(protocolType(err) ?? '')) this.open = false;
      throw kafkaFailure(err, this.destination, this.config);
    }
  }

  async close(): Promise<void> {
    this.open = false;
    await this.producer.disconnect().catch(() => undefined);
  }
}

/**
 * A kafkajs producer per destination: acks=all, not idempotent (the tenant's cluster need not
 * grant IDEMPOTENT_WRITE; a retried send may write a twin, which the webhook-id header names),
 * no topic auto-creation. Every socket, to a bootstrap server or to a broker the cluster
 * advertises, is made by the guarded socket factory.
 */
export function kafkaConnector(deps: { guard: AddressGuard }): Connector {
  return {
    async connect(destination: Destination, options: ConnectOptions): Promise<BrokerConnection> {
      const parsed = endpointsOf('kafka', destination.url);
      if ('problem' in parsed) throw new PublishFailed(`the destination's URL ${parsed.problem}`);
      const config = (destination.config ?? {}) as unknown as KafkaConfig;
      // the bootstrap servers are checked up front: a refused one fails the destination at once,
      // dialling nothing; one that does not resolve only fails it when none resolves
      const unresolved: unknown[] = [];
      for (const { host, port } of parsed.endpoints) {
        try {
          await checkedAddresses(deps.guard, host, port);
        } catch (err) {
          if (err instanceof PublishFailed && err.refused) throw err;
          unresolved.push(err);
        }
      }
      if (unresolved.length === parsed.endpoints.length) throw unresolved[0];
      let refused: PublishFailed | undefined;
      const kafka = new Kafka({
        clientId: `hookline-${destination.id}`,
        brokers: parsed.endpoints.map(({ host, port }) => `${host.includes(':') ? `[${host}]` : host}:${port}`),
        ssl: config.tls === true,
        sasl: saslOf(destination, config),
        connectionTimeout: options.connectTimeoutMs,
        authenticationTimeout: options.connectTimeoutMs,
        requestTimeout: Math.max(1_000, options.requestTimeoutMs),
        enforceRequestTimeout: true,
        retry: { retries: SEND_RETRIES, initialRetryTime: 100, maxRetryTime: 1_000 },
        // what fails reaches the caller as a PublishFailed; the tenant's cluster's chatter is not ours to log
        logLevel: logLevel.NOTHING,
        socketFactory: ({ host, port, ssl, onConnect }) =>
          guardedSocket(deps.guard, { host, port, tls: config.tls ? (typeof ssl === 'object' ? ssl : {}) : null }, onConnect, (r) => {
            refused = r;
          }),
      });
      const producer = kafka.producer({
        allowAutoTopicCreation: false,
        idempotent: false,
        retry: { retries: SEND_RETRIES, initialRetryTime: 100, maxRetryTime: 1_000 },
      });
      try {
        await producer.connect();
      } catch (err) {
        await producer.disconnect().catch(() => undefined);
        throw refused ?? kafkaFailure(err, destination, config);
      }
      return new KafkaConnection(producer, destination, config, () => refused);
    },
  };
}
