import type { Entity, EntityKind } from '../../core/model';
import type { ConfigStore } from '../config-store/config-store';

/**
 * The first kinds tombstoned: the data keys, so that the tenant's sealed bodies on Kafka cannot be
 * opened even if a later step fails, then what holds secrets. The tenant entity itself is not
 * among what this removes (it carries the `erasing` state until the end), nor its marker.
 */
const FIRST: readonly string[] = ['data_key', 'api_key', 'destination', 'ingester'];
const KEPT: readonly EntityKind[] = ['tenant', 'erased_tenant'];

/** The tenant's config entities this erasure removes, data keys first. */
export function entitiesToErase(store: Pick<ConfigStore, 'ofTenant'>, tenantId: string): Entity[] {
  const rank = (e: Entity) => {
    const i = FIRST.indexOf(e.kind);
    return i < 0 ? FIRST.length : i;
  };
  return store
    .ofTenant(tenantId)
    .filter((e) => !KEPT.includes(e.kind))
    .sort((a, b) => rank(a) - rank(b));
}

/**
 * Tombstones every config entity of the tenant but the tenant itself, one acknowledged write
 * each (acks=all, applied here before the next): a failure stops with the ones before it gone.
 * Returns the count per kind.
 */
export async function eraseConfigEntities(store: Pick<ConfigStore, 'ofTenant' | 'remove'>, tenantId: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const e of entitiesToErase(store, tenantId)) {
    await store.remove(e.kind, tenantId, e.id);
    counts[e.kind] = (counts[e.kind] ?? 0) + 1;
  }
  return counts;
}
