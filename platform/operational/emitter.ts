import type { Redis } from 'ioredis';
import type { Producer } from 'kafkajs';
import { newId } from '../../core/ids';
import { eventKey } from '../../core/record-keys';
import { errorMessage, type Logger } from '../../core/log';
import type { Destination, ReplayJob } from '../../core/model';
import {
  OPERATIONAL_EVENT_TYPES,
  OPERATIONAL_INGESTER_ID,
  breakerOpened,
  deliveryExhausted,
  destinationDisabled,
  isOperational,
  operationalBody,
  receivesOperationalEvents,
  replayCompleted,
  subscribesExplicitly,
  type Happening,
  type OperationalEventType,
} from '../../core/operational-events';
import { CONFIG_VERSION_HEADER } from '../../core/config-version';
import type { AvroCodec } from '../avro/codec';
import type { DeliveryTask, WebhookEvent } from '../avro/records';

/** What the emitter reads of the configuration (the ConfigStore). */
export interface OperationalConfig {
  get(kind: 'destination', tenantId: string, id: string): Destination | undefined;
  list(kind: 'destination', tenantId: string): Destination[];
  /** The configuration version the event names, so validation waits for the subscriptions it was decided on. */
  readonly version: bigint;
}

export interface OperationalOptions {
  config: OperationalConfig;
  redis: Redis;
  /** Namespaces this deployment's keys in Redis. */
  prefix: string;
  /** Writes the event on `webhooks.received`, acknowledged by every in-sync replica, naming that configuration version. */
  publish(event: WebhookEvent, configVersion: bigint): Promise<void>;
  /** One event per subject and type per window (ms); the rest are counted in the next one's `suppressed`. */
  windowMs: number;
  /** Operational events of one tenant per window, whatever their subjects. */
  perTenant: number;
  log: Logger;
}

/**
 * Admits one happening (1) or not (0), with the count left out before it. KEYS: the subject's
 * gate, its count of left-out happenings, the tenant's count in this window. ARGV: window ms,
 * the tenant's bound. The gate is a SET NX with the window as expiry, so every process that sees
 * the same happening (each deliver process whose breaker opens) asks the same key, and one wins.
 */
const ADMIT = `
if redis.call('SET', KEYS[1], '1', 'PX', ARGV[1], 'NX') then
  local n = redis.call('INCR', KEYS[3])
  if n == 1 then redis.call('PEXPIRE', KEYS[3], ARGV[1]) end
  if n <= tonumber(ARGV[2]) then
    local left = tonumber(redis.call('GET', KEYS[2]) or '0')
    redis.call('DEL', KEYS[2])
    return { 1, left }
  end
end
redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], 86400000)
return { 0, 0 }
`;

type Script = (...args: (string | number)[]) => Promise<unknown>;

/** Why a happening made no event, for the debug log; null when it made one. */
export type NotEmitted = 'no destination subscribes' | 'about a destination that receives operational events' | 'about an operational event' | 'rate bound' | 'not sent' | null;

/**
 * Turns happenings into operational events. Nothing happens unless a destination of the tenant
 * subscribes to the type explicitly (an in-memory check, no Redis, no Kafka); a happening about a
 * destination that receives operational events, or about an operational event's own delivery,
 * makes none (no loops); the rest pass a gate in Redis (one per subject, type and window, and a
 * bound per tenant) and go onto `webhooks.received`. Best effort: a failure is logged, never
 * thrown into the delivery or replay that had the happening.
 */
export class OperationalEvents {
  private readonly admit: Script;
  /** Which operational types each tenant's destinations subscribe to, at a configuration version. */
  private readonly subscribed = new Map<string, { version: bigint; types: Set<OperationalEventType> }>();
  private readonly pending = new Set<Promise<unknown>>();

  constructor(private readonly o: OperationalOptions) {
    o.redis.defineCommand('hooklineOperationalAdmit', { lua: ADMIT, numberOfKeys: 3 });
    this.admit = (o.redis as unknown as Record<string, Script>).hooklineOperationalAdmit!.bind(o.redis);
  }

  /** A destination the delivery stage disabled (410 Gone). */
  destinationDisabled(destination: Destination, reason: string, cause: Pick<DeliveryTask, 'delivery_id' | 'event_id'> | null, at = Date.now()): Promise<NotEmitted> {
    return this.emit(destinationDisabled(destination, reason, cause, at), destination);
  }

  /** A breaker that opened in this process; the others that see it open ask the same gate. */
  breakerOpened(tenantId: string, destinationId: string, resetMs: number, at = Date.now()): Promise<NotEmitted> {
    const destination = this.o.config.get('destination', tenantId, destinationId);
    if (!destination) return Promise.resolve(null);
    return this.emit(breakerOpened(destination, at, at + resetMs), destination);
  }

  /** A delivery that used its last attempt. */
  deliveryExhausted(task: DeliveryTask, destination: Destination, reason: string, at = Date.now()): Promise<NotEmitted> {
    if (isOperational(task)) return Promise.resolve('about an operational event');
    return this.emit(deliveryExhausted(destination, task, reason, at), destination);
  }

  replayCompleted(job: ReplayJob, at = Date.now()): Promise<NotEmitted> {
    return this.emit(replayCompleted(job, at), null);
  }

  /** Runs a happening from a callback that cannot wait (a breaker's state change); `settle` awaits it. */
  track(p: Promise<unknown>): void {
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  /** Waits for the happenings still being told (at stop). */
  async settle(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }

  private async emit(h: Happening, about: Destination | null): Promise<NotEmitted> {
    const fields = { tenant_id: h.tenant_id, operational_type: h.type, subject: h.subject };
    let taken: string | undefined;
    try {
      if (!this.typesOf(h.tenant_id).has(h.type)) return 'no destination subscribes';
      if (about && receivesOperationalEvents(about)) {
        this.o.log.debug('no operational event about a destination that receives them', fields);
        return 'about a destination that receives operational events';
      }
      const { prefix, windowMs, perTenant } = this.o;
      const gate = `${prefix}ops:${h.tenant_id}:${h.type}:${h.subject}`;
      const [admitted, suppressed] = (await this.admit(gate, `${gate}:left`, `${prefix}ops:${h.tenant_id}`, windowMs, perTenant)) as [number, number];
      if (admitted !== 1) {
        this.o.log.debug('operational event left out: one was sent for the same subject in this window, or the tenant reached its bound', fields);
        return 'rate bound';
      }
      taken = gate;
      const version = this.o.config.version;
      const event: WebhookEvent = {
        event_id: newId('event', h.at),
        tenant_id: h.tenant_id,
        ingester_id: OPERATIONAL_INGESTER_ID,
        correlation_id: newId('correlation', h.at),
        received_at: h.at,
        method: 'POST',
        query: '',
        headers: [],
        content_type: 'application/json',
        body: operationalBody(h, Number(suppressed)),
        source_ip: null,
        event_type: h.type,
        hops: 0,
      };
      await this.o.publish(event, version);
      this.o.log.info('operational event', { ...fields, event_id: event.event_id, correlation_id: event.correlation_id, suppressed: Number(suppressed) });
      return null;
    } catch (err) {
      this.o.log.warn('operational event not sent', { ...fields, error: errorMessage(err) });
      // the next happening of the window may tell it instead
      if (taken) await this.o.redis.del(taken).catch(() => undefined);
      return 'not sent';
    }
  }

  private typesOf(tenantId: string): Set<OperationalEventType> {
    const version = this.o.config.version;
    const known = this.subscribed.get(tenantId);
    if (known && known.version === version) return known.types;
    const types = new Set<OperationalEventType>();
    for (const d of this.o.config.list('destination', tenantId)) {
      if (!d.event_types) continue;
      for (const t of OPERATIONAL_EVENT_TYPES) if (subscribesExplicitly(d.event_types, t)) types.add(t);
    }
    this.subscribed.set(tenantId, { version, types });
    return types;
  }
}

/** The `publish` of a running service: the event on `webhooks.received`, keyed by event as an unordered ingester's are, acks=all. */
export function publishOnReceived(producer: Producer, codec: AvroCodec, topic: string): OperationalOptions['publish'] {
  return async (event, configVersion) => {
    const value = await codec.encode(topic, 'WebhookEvent', event);
    await producer.send({ topic, acks: -1, messages: [{ key: eventKey(event), value, headers: { [CONFIG_VERSION_HEADER]: configVersion.toString() } }] });
  };
}
