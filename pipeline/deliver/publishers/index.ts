import type { AllowList } from '../../../core/address-policy';
import type { Logger } from '../../../core/log';
import type { Resolve } from '../../../platform/http/guarded-lookup';
import { amqpConnector } from './amqp';
import type { AddressGuard } from './guard';
import { kafkaConnector } from './kafka';
import { mqttConnector } from './mqtt';
import { natsConnector } from './nats';
import { ConnectionPool } from './pool';
import type { Publisher } from './publisher';

export { PublishFailed, type OutboundMessage, type Publisher } from './publisher';

export interface PublisherDeps {
  /** Non-public ranges the brokers may be at (the deployment's allow list); public addresses always may. */
  allow: AllowList;
  /**
   * True where the service itself listens or keeps its infrastructure (its Kafka, Redis…): refused
   * whatever `allow` says. Asked with the host as the destination names it, then with each
   * address it resolves to.
   */
  ownEndpoint?: (address: string, port: number) => boolean;
  /** The resolver (the system's by default); tests play DNS with it. */
  resolve?: Resolve;
  /** A destination's connection that sent nothing for this long is closed, in ms (default 60000). */
  idleMs?: number;
  /** Longest a connection (socket, TLS, handshake, authentication) may take, in ms (default 5000). */
  connectTimeoutMs?: number;
  log?: Logger;
}

/**
 * The publisher for every broker type: Kafka, AMQP 0-9-1, NATS JetStream and MQTT, one pooled
 * connection per destination, every connection through the address policy.
 */
export function createPublisher(deps: PublisherDeps): Publisher {
  const guard: AddressGuard = { allow: deps.allow, ownEndpoint: deps.ownEndpoint, resolve: deps.resolve };
  return new ConnectionPool({
    connectors: {
      kafka: kafkaConnector({ guard }),
      amqp: amqpConnector({ guard }),
      nats: natsConnector({ guard }),
      mqtt: mqttConnector({ guard }),
    },
    idleMs: deps.idleMs ?? 60_000,
    connectTimeoutMs: deps.connectTimeoutMs ?? 5_000,
    log: deps.log,
  });
}
