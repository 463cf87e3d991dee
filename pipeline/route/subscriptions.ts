import { parseFilters, type ParsedFilters } from '../../core/filters';
import type { Destination } from '../../core/model';
import { subscribesTo } from '../../core/subscriptions';
import { evaluateFilters, type FilterContext } from '../filter/evaluate';

/** Why an event does not go to a destination, for the debug log; null when it goes. */
export type Unsubscribed = { reason: string; rule_index?: number; invalid?: true } | null;

// an update replaces the destination object, so its parsed filter is kept per object
const parsed = new WeakMap<Destination, ParsedFilters>();

function filterOf(destination: Destination): ParsedFilters {
  let p = parsed.get(destination);
  if (!p) parsed.set(destination, (p = parseFilters(destination.filter ?? undefined, 'filter')));
  return p;
}

/**
 * Whether the destination subscribes to the event: its `event_types` take the event's type, and
 * every rule of its `filter` passes. `event` is one context per event, shared by all destinations,
 * so the body is parsed once however many destinations ask. A rule the limits keep from reading
 * the body fails, as does a stored filter that no longer parses: neither lets an event through
 * unfiltered.
 */
export function subscribed(destination: Destination, eventType: string | null, event: FilterContext): Unsubscribed {
  if (!subscribesTo(destination.event_types, eventType)) {
    return { reason: eventType === null ? 'the event has no event type and event_types does not hold *' : `event type ${JSON.stringify(eventType)} is not in event_types` };
  }
  if (!destination.filter || destination.filter.length === 0) return null;
  const { filters, errors, refused } = filterOf(destination);
  const problems = [...errors, ...refused];
  if (problems.length > 0) return { reason: `the stored filter is invalid: ${problems.map((e) => `${e.field} ${e.message}`).join('; ')}`, invalid: true };
  const verdict = evaluateFilters(filters, event);
  if (verdict.pass) return null;
  return { reason: 'unevaluable' in verdict ? `filter not evaluated: ${verdict.reason}` : verdict.reason, rule_index: verdict.rule_index };
}
