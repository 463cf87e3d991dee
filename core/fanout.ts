import { unprocessable } from './errors';
import type { DeliveryFlow } from './model';

/**
 * Refuses a write that would let one event fan out to more than `max` destinations: the distinct
 * destinations across every flow of the ingester, with `replaced` (a flow being rewritten, or
 * none) counted by its new `destinationIds`. Routing caps again, as the limit may be lowered later.
 */
export function checkFanout(flows: readonly DeliveryFlow[], ingesterId: string, replaced: string | undefined, destinationIds: readonly string[], max: number): void {
  const all = new Set(destinationIds);
  for (const flow of flows) {
    if (flow.ingester_id !== ingesterId || flow.id === replaced) continue;
    for (const id of flow.destination_ids) all.add(id);
  }
  if (all.size > max) {
    throw unprocessable([{ field: 'destination_ids', message: `one event of this ingester would go to ${all.size} destinations across its delivery flows; at most ${max} are allowed` }]);
  }
}
