import type { Destination, DestinationType } from './model';

/**
 * What each destination type is: the address its `url` holds, the schema of its `config`, the
 * credentials (`auth`) it takes, and what counts as delivered. The API serves these at
 * GET /v1/destination-types, the OpenAPI document carries the same schemas, and create and update
 * check a destination's config against them: one source for all three.
 */

export interface KafkaConfig {
  topic: string;
  /** The record key: a template over the delivery (`{{event_id}}`, `{{body.customer.id}}`); absent: the event id. */
  key?: string | null;
  tls?: boolean;
  /** SASL with the `basic` auth's username and password; absent: no SASL. */
  sasl_mechanism?: 'plain' | 'scram-sha-256' | 'scram-sha-512' | null;
}

export interface AmqpConfig {
  /** The exchange published to; "" is the default exchange (the routing key names a queue). */
  exchange: string;
  routing_key: string;
}

export interface NatsConfig {
  /** A subject a JetStream stream captures: the stream's ack is the delivery's. */
  subject: string;
  tls?: boolean;
}

export interface MqttConfig {
  topic: string;
  /** 5 (MQTT 5, the default) or 4 (MQTT 3.1.1). Messages go at QoS 1: delivered means PUBACK. */
  protocol_version?: 4 | 5;
}

export type AuthType = 'basic' | 'bearer' | 'header';

export interface DestinationTypeSpec {
  type: DestinationType;
  title: string;
  description: string;
  /** The URL schemes `url` may use, and an example. */
  schemes: string[];
  url_example: string;
  /** The port a URL without one connects to, per scheme. */
  default_ports: Record<string, number>;
  /** JSON Schema (2020-12) of `config`; null: the type takes no config. */
  config_schema: Record<string, unknown> | null;
  /** The `auth` types the type accepts (all optional). */
  auth_types: AuthType[];
  /** What the broker (or the receiver) does for an attempt to count as delivered. */
  delivered_when: string;
  /** Where the Standard Webhooks headers travel. */
  headers_in: string;
}

/** Longest a destination's transformation (its JavaScript source) may be, in bytes of UTF-8. */
export const MAX_TRANSFORMATION_BYTES = 65_536;

/** No more than this many bootstrap servers in a kafka URL. */
export const MAX_KAFKA_BOOTSTRAP = 8;
/** Longest template a kafka key, or an MQTT topic, may be. */
const NAME_MAX = 512;

const KEY_TEMPLATE_DESCRIPTION =
  'The record key, as a template over the delivery: `{{event_id}}`, `{{delivery_id}}`, `{{destination_id}}`, `{{tenant_id}}` or a member of a JSON body, `{{body.customer.id}}`; text around them is kept. A member that is absent gives an empty string. Absent or null: the event id.';

export const DESTINATION_TYPE_SPECS: Record<DestinationType, DestinationTypeSpec> = {
  webhook: {
    type: 'webhook',
    title: 'Webhook',
    description: 'An HTTP POST of the event body to an endpoint, signed with Standard Webhooks.',
    schemes: ['https', 'http'],
    url_example: 'https://example.com/webhooks',
    default_ports: { https: 443, http: 80 },
    config_schema: null,
    auth_types: ['basic', 'bearer', 'header'],
    delivered_when: 'the endpoint answers 2xx',
    headers_in: 'HTTP request headers',
  },
  kafka: {
    type: 'kafka',
    title: 'Apache Kafka',
    description: 'A record on a topic of a Kafka cluster the tenant names (not this service\'s own).',
    schemes: ['kafka'],
    url_example: 'kafka://broker-1.example.com:9092,broker-2.example.com:9092',
    default_ports: { kafka: 9092 },
    config_schema: {
      type: 'object',
      additionalProperties: false,
      required: ['topic'],
      properties: {
        topic: { type: 'string', minLength: 1, maxLength: 249, pattern: '^[A-Za-z0-9._-]+$', 'x-pattern-message': 'must be a Kafka topic name: letters, digits, ".", "_" and "-"', description: 'The topic written to; it must exist or the cluster must create it.' },
        key: { type: ['string', 'null'], minLength: 1, maxLength: NAME_MAX, description: KEY_TEMPLATE_DESCRIPTION },
        tls: { type: 'boolean', default: false, description: 'Connect with TLS (the servers\' certificates are verified).' },
        sasl_mechanism: { type: ['string', 'null'], enum: ['plain', 'scram-sha-256', 'scram-sha-512', null], description: 'SASL with the `basic` auth\'s username and password; absent or null: no SASL.' },
      },
    },
    auth_types: ['basic'],
    delivered_when: 'every in-sync replica has the record (acks=all)',
    headers_in: 'record headers',
  },
  amqp: {
    type: 'amqp',
    title: 'AMQP 0-9-1 (RabbitMQ)',
    description: 'A message published to an exchange of an AMQP 0-9-1 broker, persistent, with publisher confirms.',
    schemes: ['amqp', 'amqps'],
    url_example: 'amqps://rabbit.example.com/production',
    default_ports: { amqp: 5672, amqps: 5671 },
    config_schema: {
      type: 'object',
      additionalProperties: false,
      required: ['exchange', 'routing_key'],
      properties: {
        exchange: { type: 'string', maxLength: 255, description: 'The exchange published to; "" is the default exchange, where the routing key names a queue.' },
        routing_key: { type: 'string', maxLength: 255, description: 'The routing key of every message.' },
      },
    },
    auth_types: ['basic'],
    delivered_when: 'the broker confirms the publish (publisher confirms); a message no queue takes is returned and fails the attempt',
    headers_in: 'message headers (content type and message id as properties)',
  },
  nats: {
    type: 'nats',
    title: 'NATS JetStream',
    description: 'A message on a subject that a JetStream stream captures.',
    schemes: ['nats'],
    url_example: 'nats://nats.example.com:4222',
    default_ports: { nats: 4222 },
    config_schema: {
      type: 'object',
      additionalProperties: false,
      required: ['subject'],
      properties: {
        subject: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[^\\s*>]+$', 'x-pattern-message': 'must be a subject without spaces or wildcards', description: 'The subject published to; a stream must capture it.' },
        tls: { type: 'boolean', default: false, description: 'Connect with TLS.' },
      },
    },
    auth_types: ['basic', 'bearer'],
    delivered_when: 'the stream acknowledges the message (JetStream publish ack); Nats-Msg-Id is the delivery id, so the stream drops a twin within its duplicate window',
    headers_in: 'message headers',
  },
  mqtt: {
    type: 'mqtt',
    title: 'MQTT',
    description: 'A message on a topic of an MQTT broker (MQTT 5 or 3.1.1), at QoS 1.',
    schemes: ['mqtt', 'mqtts'],
    url_example: 'mqtts://mqtt.example.com:8883',
    default_ports: { mqtt: 1883, mqtts: 8883 },
    config_schema: {
      type: 'object',
      additionalProperties: false,
      required: ['topic'],
      properties: {
        topic: { type: 'string', minLength: 1, maxLength: NAME_MAX, pattern: '^[^#+]+$', 'x-pattern-message': 'must be a topic name without wildcards (+, #)', description: 'The topic published to.' },
        protocol_version: { type: 'integer', enum: [4, 5], default: 5, description: '5 (MQTT 5) or 4 (MQTT 3.1.1, which has no user properties: the headers are not sent).' },
      },
    },
    auth_types: ['basic'],
    delivered_when: 'the broker acknowledges the QoS 1 publish (PUBACK; under MQTT 5 with a success reason code)',
    headers_in: 'MQTT 5 user properties (content type as the content-type property); none under 3.1.1',
  },
};

export function typeOf(d: Pick<Destination, 'type'>): DestinationType {
  return d.type ?? 'webhook';
}

export function isBroker(d: Pick<Destination, 'type'>): boolean {
  return typeOf(d) !== 'webhook';
}

export interface BrokerEndpoint {
  host: string;
  port: number;
}

/**
 * The endpoints a destination's URL names, or the problem with it. A kafka URL names a list of
 * bootstrap servers (`kafka://h1:9092,h2:9092`); the others one host. Credentials never sit in a
 * URL: they go in `auth`, where they are sealed and masked.
 */
export function endpointsOf(type: DestinationType, text: string): { endpoints: BrokerEndpoint[]; scheme: string } | { problem: string } {
  const spec = DESTINATION_TYPE_SPECS[type];
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(text)?.[1]?.toLowerCase();
  if (!scheme) return { problem: 'must be an absolute URL' };
  if (!spec.schemes.includes(scheme)) return { problem: `must be a ${spec.schemes.map((s) => `${s}:`).join(' or ')} URL for a ${type} destination` };
  const rest = text.slice(scheme.length + 3);
  const authority = rest.split(/[/?#]/, 1)[0] ?? '';
  if (authority.includes('@')) return { problem: 'must not carry credentials: put them in auth, where they are sealed' };
  const parts = type === 'kafka' ? authority.split(',') : [authority];
  if (type === 'kafka' && parts.length > MAX_KAFKA_BOOTSTRAP) return { problem: `must name at most ${MAX_KAFKA_BOOTSTRAP} bootstrap servers` };
  if (type === 'kafka' && rest.length > authority.length && rest.slice(authority.length) !== '/') return { problem: 'must name only bootstrap servers (kafka://host:port,host:port); the topic goes in config.topic' };
  const endpoints: BrokerEndpoint[] = [];
  for (const part of parts) {
    let u: URL;
    try {
      // parsed as the special scheme http so that hosts are checked and spelt as WHATWG URL does
      u = new URL(`http://${part}/`);
    } catch {
      return { problem: `names a server that is not host[:port]: "${part}"` };
    }
    if (u.hostname === '' || part.trim() === '') return { problem: 'must name a host' };
    const port = u.port === '' ? (/:80$/.test(part) ? 80 : spec.default_ports[scheme]!) : Number(u.port);
    endpoints.push({ host: u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname, port });
  }
  return { endpoints, scheme };
}

/** The path of an AMQP URL, unescaped: the virtual host ("/" when absent). */
export function amqpVhost(text: string): string {
  const path = /^[a-z]+:\/\/[^/?#]*(\/[^?#]*)?/i.exec(text)?.[1];
  return path && path.length > 1 ? decodeURIComponent(path.slice(1)) : '/';
}

const TEMPLATE = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*)\s*\}\}/g;

export interface TemplateScope {
  event_id: string;
  delivery_id: string;
  destination_id: string;
  tenant_id: string;
  /** The body, parsed when it is JSON (undefined otherwise). */
  body: unknown;
}

/** The names a template may use: `body.…` and the ids; anything else is a problem at create time. */
export function templateProblem(template: string): string | undefined {
  for (const m of template.matchAll(TEMPLATE)) {
    const root = (m[1] ?? '').split('.')[0];
    if (!['event_id', 'delivery_id', 'destination_id', 'tenant_id', 'body'].includes(root ?? '')) return `uses {{${m[1]}}}: a template may use event_id, delivery_id, destination_id, tenant_id and body.<member>`;
  }
  return undefined;
}

/** The template filled in from the delivery; a body member that is absent or not a scalar gives "" (objects: their JSON). */
export function renderTemplate(template: string, scope: TemplateScope): string {
  return template.replace(TEMPLATE, (_, path: string) => {
    const [root, ...rest] = path.split('.');
    let v: unknown = root === 'body' ? scope.body : (scope as unknown as Record<string, unknown>)[root ?? ''];
    for (const member of rest) v = typeof v === 'object' && v !== null && Object.prototype.hasOwnProperty.call(v, member) ? (v as Record<string, unknown>)[member] : undefined;
    if (v === undefined || v === null) return '';
    return typeof v === 'object' ? JSON.stringify(v) : String(v);
  });
}
