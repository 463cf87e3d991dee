import { randomBytes } from 'node:crypto';
import { newId } from '../../core/ids';
import type { DataKey } from '../../core/model';
import { isErasing } from '../../core/tenants';
import type { BodyKey, BodyKeys } from '../../core/secrets/body-seal';
import type { ConfigStore } from '../config-store/config-store';

/**
 * The tenants' data keys, from the config topic: every process already holds the config
 * entities in memory with their secrets opened by the keyring (the keyring wraps each data key as
 * it wraps every secret), and unwraps a data key's material here once.
 *
 * A tenant gets its first key when it first needs one (its first webhook waits for that one
 * config write). Two processes may make one at once: both keys stay valid, since every sealed
 * body names its key, and every process seals with the tenant's oldest (ids sort by time), so
 * they agree once both writes are applied. A key destroyed on the config topic (the tenant
 * erased) is forgotten here as soon as its tombstone is applied.
 */
export class DataKeys implements BodyKeys {
  /** Unwrapped keys by tenant, then id: looked up for every record encoded or decoded, so without a string made per lookup. */
  private readonly held = new Map<string, Map<string, BodyKey>>();
  /** Per tenant, the key bodies are sealed with (null: none yet). */
  private readonly currents = new Map<string, BodyKey | null>();
  private readonly making = new Map<string, Promise<BodyKey>>();
  private readonly unwatch: () => void;

  constructor(private readonly store: ConfigStore) {
    this.unwatch = store.onChange((entity) => {
      if (entity.kind !== 'data_key') return;
      const ofTenant = this.held.get(entity.tenant_id);
      if (ofTenant?.delete(entity.id) && ofTenant.size === 0) this.held.delete(entity.tenant_id);
      this.currents.delete(entity.tenant_id);
    });
  }

  current(tenantId: string): BodyKey | undefined {
    let key = this.currents.get(tenantId);
    if (key === undefined) {
      const [oldest] = this.store.list('data_key', tenantId);
      key = oldest ? this.unwrap(oldest) : null;
      this.currents.set(tenantId, key);
    }
    return key ?? undefined;
  }

  ensure(tenantId: string): Promise<BodyKey> {
    const key = this.current(tenantId);
    if (key) return Promise.resolve(key);
    let making = this.making.get(tenantId);
    if (!making) {
      making = this.make(tenantId).finally(() => this.making.delete(tenantId));
      this.making.set(tenantId, making);
    }
    return making;
  }

  byId(tenantId: string, keyId: string): BodyKey | undefined {
    const held = this.held.get(tenantId)?.get(keyId);
    if (held) return held;
    const entity = this.store.get('data_key', tenantId, keyId);
    return entity && this.unwrap(entity);
  }

  async find(tenantId: string, keyId: string): Promise<BodyKey | undefined> {
    // the record was written after its key: once this process has every write made before now, a key it lacks is gone
    await this.store.sync();
    return this.byId(tenantId, keyId);
  }

  /** Stops following the config topic's changes. */
  close(): void {
    this.unwatch();
  }

  private async make(tenantId: string): Promise<BodyKey> {
    // an erased tenant's keys stay destroyed: a record still in flight fails here, and once read again its body no longer opens
    if (isErasing(this.store.tenant(tenantId)) || this.store.list('erased_tenant', tenantId).length > 0) throw new Error(`tenant ${tenantId} is being erased: no data key is made for it`);
    const entity: DataKey = { kind: 'data_key', id: newId('dataKey'), tenant_id: tenantId, material: randomBytes(32).toString('base64'), created_at: new Date().toISOString() };
    // resolves once this process has applied it; another process's key may be older and win
    await this.store.put(entity);
    const key = this.current(tenantId);
    if (!key) throw new Error(`the data key of tenant ${tenantId} was written but is not applied`);
    return key;
  }

  private unwrap(entity: DataKey): BodyKey {
    const key = Buffer.from(entity.material, 'base64');
    if (key.length !== 32) throw new Error(`data key ${entity.id} of tenant ${entity.tenant_id} is not 32 bytes`);
    const held = { id: entity.id, key };
    let ofTenant = this.held.get(entity.tenant_id);
    if (!ofTenant) this.held.set(entity.tenant_id, (ofTenant = new Map()));
    ofTenant.set(entity.id, held);
    return held;
  }
}
