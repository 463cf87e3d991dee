import type { FieldError } from './errors';

/**
 * A destination's subscription to event types: `Destination.event_types`. The catalogue of event
 * types (the `event_type` entities) documents the types a tenant's events carry; a subscription
 * names types by name and need not name catalogued ones (providers send types nobody catalogued).
 */

/** The characters of an event type name, in the catalogue and in a subscription. */
export const EVENT_TYPE_NAME_PATTERN = '^[A-Za-z0-9._:-]{1,200}$';
export const MAX_EVENT_TYPE_NAME_LENGTH = 200;
/** Entries of one destination's `event_types`. */
export const MAX_SUBSCRIBED_TYPES = 100;

const NAME = new RegExp(EVENT_TYPE_NAME_PATTERN);

/**
 * Whether an event of type `eventType` (null: the event has none) is one the list subscribes to.
 * An entry is an exact name, or a prefix when it ends in `*` (`invoice.*` takes `invoice.paid` and
 * `invoice.payment.failed`); `*` alone takes every event, even one without a type. A null or
 * absent list takes every event; an empty list takes none.
 */
export function subscribesTo(eventTypes: readonly string[] | null | undefined, eventType: string | null): boolean {
  if (eventTypes === null || eventTypes === undefined) return true;
  for (const entry of eventTypes) {
    if (entry === '*') return true;
    if (eventType === null) continue;
    if (entry.endsWith('*') ? eventType.startsWith(entry.slice(0, -1)) : entry === eventType) return true;
  }
  return false;
}

/**
 * The problems of a `event_types` member as an API receives it: null, or an array of at most
 * MAX_SUBSCRIBED_TYPES distinct entries, each an event type name with an optional trailing `*`.
 */
export function eventTypesProblems(input: unknown, field = 'event_types'): FieldError[] {
  if (input === null || input === undefined) return [];
  if (!Array.isArray(input)) return [{ field, message: 'must be an array of event types, or null for every type' }];
  if (input.length > MAX_SUBSCRIBED_TYPES) return [{ field, message: `must hold at most ${MAX_SUBSCRIBED_TYPES} entries` }];
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  input.forEach((entry, i) => {
    const at = `${field}[${i}]`;
    if (typeof entry !== 'string') errors.push({ field: at, message: 'must be a string' });
    else if (entry !== '*' && !NAME.test(entry.endsWith('*') ? entry.slice(0, -1) : entry)) {
      errors.push({ field: at, message: `must be an event type name (1 to ${MAX_EVENT_TYPE_NAME_LENGTH} of A-Z a-z 0-9 . _ : -), optionally ending in * for a prefix` });
    } else if (seen.has(entry)) errors.push({ field: at, message: 'is listed twice' });
    else seen.add(entry);
  });
  return errors;
}
