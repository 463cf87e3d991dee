import { maskAuth } from './destination-auth';
import type { Destination } from './model';

/** What happened to a destination, as its history names it. */
export const CHANGE_ACTIONS = ['created', 'updated', 'paused', 'resumed', 'disabled', 'secret_rotated', 'deleted'] as const;
export type ChangeAction = (typeof CHANGE_ACTIONS)[number];

/** One member's move: its value before and after, as the API shows values (credentials masked). */
export interface MemberChange {
  from: unknown;
  to: unknown;
}

/** The actor of a change the service made itself: the delivery stage, on a 410 Gone. */
export const DELIVERY_STAGE_ACTOR = 'stage:deliver';

/** Why the service changed a destination itself: the delivery attempt whose answer did it. */
export interface ChangeCause {
  delivery_id: string;
  event_id: string;
  attempt_number: number;
  response_code: number | null;
}

/** One entry of a destination's history. */
export interface DestinationChange {
  id: string;
  tenant_id: string;
  destination_id: string;
  at: string;
  /** The API key that made the change, or DELIVERY_STAGE_ACTOR. */
  actor: string;
  action: ChangeAction;
  changes: Record<string, MemberChange>;
  /** Set for a change the service made itself; null for one made through the API. */
  cause: ChangeCause | null;
}

/**
 * The members a history shows, each as the API shows it. The signing secrets are not among
 * them: a rotation shows only when the previous secret stops signing.
 */
export function shownMembers(d: Destination) {
  return {
    name: d.name,
    type: d.type ?? 'webhook',
    url: d.url,
    config: d.config ?? null,
    transformation: d.transformation ?? null,
    status: d.status,
    enabled: d.status === 'active',
    disabled_reason: d.disabled_reason,
    retry_schedule_ms: d.retry_schedule_ms ?? null,
    auth: maskAuth(d.auth),
    rate_limit_per_s: d.rate_limit_per_s ?? null,
    ordered: d.ordered === true,
    event_types: d.event_types ?? null,
    filter: d.filter ?? null,
    previous_secret_expires_at: d.previous_secret_expires_at ?? null,
  };
}

function shown(d: Destination | undefined): Record<string, unknown> {
  return d ? shownMembers(d) : {};
}

/** The members that differ between two versions (either may be absent: created, deleted). */
export function changedMembers(before: Destination | undefined, after: Destination | undefined): Record<string, MemberChange> {
  const a = shown(before);
  const b = shown(after);
  const out: Record<string, MemberChange> = {};
  for (const name of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const from = name in a ? a[name] : null;
    const to = name in b ? b[name] : null;
    if (JSON.stringify(from) !== JSON.stringify(to)) out[name] = { from, to };
  }
  return out;
}

/** The action a write amounts to: a move into `paused` pauses, one back to `active` resumes. */
export function actionOf(before: Destination | undefined, after: Destination | undefined, rotated = false): ChangeAction {
  if (!before) return 'created';
  if (!after) return 'deleted';
  if (rotated) return 'secret_rotated';
  if (before.status !== after.status && after.status === 'paused') return 'paused';
  if (before.status !== after.status && after.status === 'disabled') return 'disabled';
  if (before.status !== after.status && after.status === 'active') return 'resumed';
  return 'updated';
}
