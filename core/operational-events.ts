import type { Destination, ReplayJob } from './model';

/**
 * Operational events: what the service itself has to tell a tenant about its resources, delivered
 * as webhooks like every other event of the tenant (docs/operational-webhooks.md). They enter the
 * pipeline on `webhooks.received` under a reserved ingester id, so that routing, delivery, retries,
 * signing, sink rows and evidence apply to them unchanged; routing sends them only to the
 * destinations that name them explicitly.
 */

export const OPERATIONAL_EVENT_TYPES = ['destination.disabled', 'destination.breaker_opened', 'delivery.exhausted', 'replay.completed'] as const;
export type OperationalEventType = (typeof OPERATIONAL_EVENT_TYPES)[number];

/**
 * The ingester id operational events carry in place of an ingester's. Generated ingester ids are
 * `ing_` + a ULID, and a Hook URL only ever stamps the id of an ingester it found, so no webhook
 * can arrive under this one.
 */
export const OPERATIONAL_INGESTER_ID = 'operational';

/** Whether an event or delivery record is an operational event's (one compare: it is on the hot path). */
export function isOperational(record: { ingester_id: string }): boolean {
  return record.ingester_id === OPERATIONAL_INGESTER_ID;
}

/** What each type says, as the docs and the catalogue show it. */
export const OPERATIONAL_EVENT_DESCRIPTIONS: Record<OperationalEventType, string> = {
  'destination.disabled': 'The service disabled one of your destinations (its receiver answered 410 Gone); its deliveries are held until it is enabled again.',
  'destination.breaker_opened': "A destination's circuit breaker opened: most recent attempts failed, and its deliveries wait before a trial attempt.",
  'delivery.exhausted': 'A delivery used every attempt of its retry schedule and went to the dead-letter topic; it can be retried or replayed.',
  'replay.completed': 'A replay job queued all its matches and each replayed delivery was delivered or failed for good.',
};

/**
 * Whether `eventTypes` subscribes to the operational type explicitly: an entry names the type, or
 * is a prefix ending in `*` that covers at least the type's first segment and its dot
 * (`destination.*`, `destination.breaker*`). A null list, `*` alone or a shorter prefix (`d*`)
 * does not: an endpoint that takes every event of its flows does not start receiving these.
 */
export function subscribesExplicitly(eventTypes: readonly string[] | null | undefined, type: string): boolean {
  if (!eventTypes) return false;
  const dot = type.indexOf('.');
  for (const entry of eventTypes) {
    if (entry === type) return true;
    if (!entry.endsWith('*')) continue;
    const prefix = entry.slice(0, -1);
    if (prefix.length > dot && dot >= 0 && type.startsWith(prefix)) return true;
  }
  return false;
}

/** Whether the destination receives any operational event: happenings about it emit none (no loops). */
export function receivesOperationalEvents(destination: Pick<Destination, 'event_types'>): boolean {
  return OPERATIONAL_EVENT_TYPES.some((t) => subscribesExplicitly(destination.event_types, t));
}

/** One happening to tell a tenant about: its type, what it is about (the rate bound's unit) and its data. */
export interface Happening {
  type: OperationalEventType;
  tenant_id: string;
  /** The resource it is about (a destination or replay job id): one event per subject and type per window. */
  subject: string;
  at: number;
  data: Record<string, unknown>;
}

/**
 * The body an operational event is delivered with, in the Standard Webhooks payload shape:
 * `type`, `timestamp` and `data`. `suppressed` counts happenings of the same type and subject the
 * rate bound left out since the previous event.
 */
export function operationalBody(h: Happening, suppressed: number): Buffer {
  return Buffer.from(JSON.stringify({ type: h.type, timestamp: new Date(h.at).toISOString(), data: { tenant_id: h.tenant_id, ...h.data, suppressed } }));
}

/** Who a destination is, without anything secret: no URL (it may carry a token), no credentials. */
function destinationRef(d: Pick<Destination, 'id' | 'name'>) {
  return { destination_id: d.id, destination_name: d.name };
}

export function destinationDisabled(d: Destination, reason: string, cause: { delivery_id: string; event_id: string } | null, at: number): Happening {
  return { type: 'destination.disabled', tenant_id: d.tenant_id, subject: d.id, at, data: { ...destinationRef(d), reason, disabled_at: new Date(at).toISOString(), delivery_id: cause?.delivery_id ?? null, event_id: cause?.event_id ?? null } };
}

export function breakerOpened(d: Destination, at: number, retryAt: number): Happening {
  return { type: 'destination.breaker_opened', tenant_id: d.tenant_id, subject: d.id, at, data: { ...destinationRef(d), opened_at: new Date(at).toISOString(), trial_at: new Date(retryAt).toISOString() } };
}

/** A dead delivery: its ids and the last reason, never the event's body or headers. */
export function deliveryExhausted(
  d: Destination,
  task: { delivery_id: string; event_id: string; ingester_id: string; attempt: number; replay_of: string | null },
  reason: string,
  at: number,
): Happening {
  return {
    type: 'delivery.exhausted',
    tenant_id: d.tenant_id,
    subject: d.id,
    at,
    data: { ...destinationRef(d), delivery_id: task.delivery_id, event_id: task.event_id, ingester_id: task.ingester_id, attempts: task.attempt, reason, replay_of: task.replay_of, failed_at: new Date(at).toISOString() },
  };
}

export function replayCompleted(job: ReplayJob, at: number): Happening {
  return {
    type: 'replay.completed',
    tenant_id: job.tenant_id,
    subject: job.id,
    at,
    data: {
      replay_job_id: job.id,
      filter: job.filter,
      matched: job.matched,
      replayed: job.replayed,
      skipped: job.skipped ?? 0,
      delivered: job.delivered,
      failed: job.failed,
      created_at: job.created_at,
      finished_at: job.finished_at ?? new Date(at).toISOString(),
    },
  };
}
