import type { Destination } from '../../../core/model';

/** One message to a broker destination: what a webhook sends as its request, in the broker's terms. */
export interface OutboundMessage {
  /** The record key where the broker has keys (Kafka); others ignore it. */
  key: string;
  /** Standard Webhooks headers and the rest: Kafka/AMQP/NATS headers, MQTT 5 user properties. */
  headers: Record<string, string>;
  body: Buffer;
}

/** A failed publish: its message says what failed in the tenant's terms and never holds a secret. */
export class PublishFailed extends Error {
  /** The address policy refused the broker's address (SSRF guard, a loop to this service): no retry is worth it. */
  readonly refused: boolean;
  constructor(message: string, options: { refused?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'PublishFailed';
    this.refused = options.refused === true;
  }
}

/** Sends to the broker destinations (every type but `webhook`). */
export interface Publisher {
  /**
   * Resolves once the broker acknowledged the message (Kafka acks=all, AMQP publisher confirm,
   * JetStream ack, MQTT PUBACK); rejects with PublishFailed otherwise, within `timeoutMs`.
   */
  publish(destination: Destination, message: OutboundMessage, timeoutMs: number): Promise<{ durationMs: number }>;
  /**
   * Closes the connection to one destination now (it was paused, changed or deleted), failing
   * what is still in flight on it; a later publish to it connects again.
   */
  release(destinationId: string): Promise<void>;
  /** Closes every connection; later publishes reject. */
  close(): Promise<void>;
}
