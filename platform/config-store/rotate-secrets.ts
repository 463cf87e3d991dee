import type { Entity } from '../../core/model';
import type { ConfigStore } from './config-store';

export interface RotationReport {
  /** The key every stored secret is now sealed under. */
  key_id: string;
  entities_checked: number;
  entities_resealed: number;
  secrets_resealed: number;
  /** Secrets resealed, by the key they were sealed under before (`clear`: written before sealing existed). */
  from_keys: Record<string, number>;
}

/**
 * Re-seals every stored secret under the keyring's current key by writing its entity again
 * through the config topic; compaction then drops the records sealed under older keys.
 * Entities already sealed under the current key are left alone, so a second run writes nothing.
 */
export async function rotateSecrets(store: ConfigStore): Promise<RotationReport> {
  await store.sync();
  const current = store.currentKeyId;
  const report: RotationReport = { key_id: current, entities_checked: 0, entities_resealed: 0, secrets_resealed: 0, from_keys: {} };
  const entities: Entity[] = [...store.all('destination'), ...store.all('ingester')];
  for (const entity of entities) {
    report.entities_checked++;
    const { keyIds, clear } = store.sealingOf(entity);
    const stale = keyIds.filter((id) => id !== current);
    if (stale.length === 0 && clear === 0) continue;
    await store.put(entity);
    report.entities_resealed++;
    report.secrets_resealed += stale.length + clear;
    for (const id of stale) report.from_keys[id] = (report.from_keys[id] ?? 0) + 1;
    if (clear > 0) report.from_keys.clear = (report.from_keys.clear ?? 0) + clear;
  }
  return report;
}
