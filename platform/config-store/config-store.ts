import type { Kafka, Producer } from 'kafkajs';
import { entityKey, isFinal, type Entity, type EntityKind, type Tenant } from '../../core/model';
import { SecretDecryptError } from '../../core/secrets/envelope';
import { openEntity, sealEntity, sealingOf } from '../../core/secrets/entity-secrets';
import type { Keyring } from '../../core/secrets/keyring';
import type { AvroCodec } from '../avro/codec';
import { createProducer } from '../kafka/client';
import { TopicTable } from '../kafka/topic-table';

export type EntityOf<K extends EntityKind> = Extract<Entity, { kind: K }>;
/** A decoded record: the entity with its secrets opened, or why they do not open. */
type Applied = (Written & { sealing: { keyIds: string[]; clear: number }; unreadable?: undefined }) | { unreadable: string };

/** A record of the config topic as read: the entity, and whether it may only update. */
interface Written {
  entity: Entity;
  updateOnly: boolean;
}

/** The config topic's one partition: its offsets are the configuration versions. */
const CONFIG_PARTITION = 0;

const tenantOf = (entity: Entity): string => (entity.kind === 'tenant' ? entity.id : entity.tenant_id);

/**
 * Tenants, API keys, destinations, ingesters and delivery flows, held in memory from the
 * compacted config topic. A write is produced with acks=all and returns only once this
 * process's own view has applied it, so the writer reads its write at once.
 *
 * Secrets are sealed on write and opened once when a record is applied: the topic (and every
 * copy of its log files) holds only ciphertext, the rest of the service sees plaintext in memory.
 */
export class ConfigStore {
  private readonly entities = new Map<string, Entity>();
  /** Ids are globally unique (typed ULIDs), so an entity can also be found by id alone. */
  private readonly byId = new Map<string, Entity>();
  /** Entities by `kind/tenant`, so listing a tenant's flows on every routed event stays cheap. */
  private readonly byGroup = new Map<string, Map<string, Entity>>();
  private readonly table: TopicTable<Applied>;
  /** Entity keys whose latest record does not open, with why (the key id, never a key). */
  private readonly unreadable = new Map<string, string>();
  /** Keys whose tombstone this process has read: an update-only write to them is ignored. */
  private readonly deletedKeys = new Set<string>();
  private producer: Producer | undefined;
  private syncing: Promise<void> | undefined;
  private readonly listeners = new Set<(entity: Entity, deleted: boolean) => void>();
  /** Per entity key: the offset of the record it was last written by (its version). */
  private readonly versions = new Map<string, bigint>();
  /** Per entity key: the key ids its secrets are sealed under on the topic, and how many are still clear. */
  private readonly sealings = new Map<string, { keyIds: string[]; clear: number }>();

  constructor(
    private readonly kafka: Kafka,
    private readonly codec: AvroCodec,
    readonly topic: string,
    private readonly keyring: Keyring,
    /** Told of a record written under a key this process lacks, after start (the previous version stays in use). */
    private readonly onUnreadable?: (key: string, reason: string) => void,
  ) {
    this.table = new TopicTable<Applied>({
      kafka,
      topic,
      groupIdPrefix: `${topic}-reader`,
      decode: async (value) => {
        const entry = await codec.decode('ConfigEntry', value);
        const stored = JSON.parse(entry.data) as Entity;
        const updateOnly = entry.update_only === true;
        try {
          return { entity: openEntity(this.keyring, stored), sealing: sealingOf(stored), updateOnly };
        } catch (err) {
          // a record superseded later (not yet compacted away) may be sealed under a retired key
          if (err instanceof SecretDecryptError) return { unreadable: err.message };
          throw err;
        }
      },
      apply: (key, value, position) => {
        if (value !== null && value.unreadable !== undefined) {
          const reason = value.unreadable;
          // the last good version stays in use; start() refuses to begin on such a record
          this.unreadable.set(key, reason);
          this.onUnreadable?.(key, reason);
          return;
        }
        this.unreadable.delete(key);
        if (value === null) {
          this.sealings.delete(key);
          this.versions.delete(key);
          this.apply(key, null);
        } else if (this.apply(key, value)) {
          this.sealings.set(key, value.sealing);
          this.versions.set(key, BigInt(position.offset));
        }
      },
    });
  }

  async start(): Promise<void> {
    this.producer = createProducer(this.kafka);
    await this.producer.connect();
    await this.table.start();
    if (this.unreadable.size > 0) {
      const [first] = this.unreadable.values();
      await this.stop();
      throw new Error(`${this.unreadable.size} configuration record(s) cannot be opened with the keyring (SECRETS_KEK / SECRETS_KEK_FILE), e.g. ${first}`);
    }
  }

  async stop(): Promise<void> {
    await this.table.stop();
    await this.producer?.disconnect().catch(() => undefined);
    this.producer = undefined;
  }

  /** Calls `listener` for every entity applied from now on. */
  /** A tenant by its id (tenants are keyed by their own id). */
  tenant(id: string): Tenant | undefined {
    return this.get('tenant', id, id);
  }

  onChange(listener: (entity: Entity, deleted: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get<K extends EntityKind>(kind: K, tenantId: string, id: string): EntityOf<K> | undefined {
    const e = this.entities.get(entityKey(kind, tenantId, id));
    return e && e.kind === kind ? (e as EntityOf<K>) : undefined;
  }

  /** Finds an entity by its id alone, whatever its tenant (Hook URLs carry only the ingester id). */
  find<K extends EntityKind>(kind: K, id: string): EntityOf<K> | undefined {
    const e = this.byId.get(id);
    return e && e.kind === kind ? (e as EntityOf<K>) : undefined;
  }

  /** Entities of one kind in one tenant, oldest first (ids sort by creation time). */
  list<K extends EntityKind>(kind: K, tenantId: string): EntityOf<K>[] {
    const group = this.byGroup.get(`${kind}/${tenantId}`);
    if (!group) return [];
    return ([...group.values()] as EntityOf<K>[]).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** Every entity of one tenant, of every kind, its tenant entity included. */
  ofTenant(tenantId: string): Entity[] {
    const out: Entity[] = [];
    for (const e of this.entities.values()) if (tenantOf(e) === tenantId) out.push(e);
    return out;
  }

  /** Whether the tenant was erased (its marker stays for good) or is being erased: its records are dropped. */
  isErased(tenantId: string): boolean {
    return this.entities.has(entityKey('erased_tenant', tenantId, tenantId)) || this.tenant(tenantId)?.state === 'erasing';
  }

  /** Entities of one kind across all tenants. */
  all<K extends EntityKind>(kind: K): EntityOf<K>[] {
    const out: EntityOf<K>[] = [];
    for (const e of this.entities.values()) if (e.kind === kind) out.push(e as EntityOf<K>);
    return out;
  }

  /**
   * The configuration version: the offset of the newest config record this process has applied
   * (-1 before any). The config topic has one partition, so one offset orders every change; it
   * moves before the change is visible to anyone (see TopicTable), and a write through this store
   * resolves only once it is at least the written record's offset.
   */
  get version(): bigint {
    return this.table.nextOffset(CONFIG_PARTITION) - 1n;
  }

  /**
   * Resolves true once this process has applied version `v` (at once, without a timer, when it
   * already has), false when `timeoutMs` passes first or the reader has failed.
   */
  waitForVersion(v: bigint, timeoutMs: number): Promise<boolean> {
    if (this.version >= v) return Promise.resolve(true);
    return this.table.waitFor({ partition: CONFIG_PARTITION, offset: v.toString() }, timeoutMs).then(
      () => true,
      () => false,
    );
  }

  /** The version an entity was last written at (its record's offset), while it exists here. */
  versionOf(kind: EntityKind, tenantId: string, id: string): bigint | undefined {
    return this.versions.get(entityKey(kind, tenantId, id));
  }

  /** The id of the key new secrets are sealed under. */
  get currentKeyId(): string {
    return this.keyring.current.id;
  }

  /** How the entity's secrets are sealed on the topic: the key ids, and members still in clear. */
  sealingOf(entity: Entity): { keyIds: string[]; clear: number } {
    const tenantId = entity.kind === 'tenant' ? entity.id : entity.tenant_id;
    return this.sealings.get(entityKey(entity.kind, tenantId, entity.id)) ?? { keyIds: [], clear: 0 };
  }

  async put(entity: Entity): Promise<void> {
    await this.write(entityKey(entity.kind, tenantOf(entity), entity.id), await this.encode(entity, false));
  }

  /**
   * Writes `entity` only over an entity that still exists, in every process that reads the
   * topic: a deletion made anywhere before this write wins. Returns whether it was applied
   * here. An ignored write is followed by a tombstone, so that once compaction keeps only the
   * last record of the key, the deletion is what remains. For entities whose ids are never
   * reused (typed ULIDs).
   */
  async update(entity: Entity): Promise<boolean> {
    return (await this.updateUnlessFinal(entity)).standing !== undefined;
  }

  /**
   * `update`, and the conditional write that ends an entity once: a record that would change an
   * entity already final (isFinal, e.g. a replay job that ended) is ignored by every process,
   * and since all apply the topic in one order, of writers racing to end it the one whose record
   * the topic holds first wins everywhere. `applied`: whether this write took effect; `standing`:
   * the entity as it is here once the write is applied (undefined: deleted). A write that lost is
   * followed by the winner written again, so that compaction, which keeps a key's last record,
   * keeps the winner.
   */
  async updateUnlessFinal(entity: Entity): Promise<{ applied: boolean; standing: Entity | undefined }> {
    const key = entityKey(entity.kind, tenantOf(entity), entity.id);
    const offset = await this.write(key, await this.encode(entity, true));
    const standing = this.entities.get(key);
    if (!standing) {
      await this.write(key, null);
      return { applied: false, standing: undefined };
    }
    // a record applied here sets the key's version to its offset (a later one may have moved it on)
    const applied = (this.versions.get(key) ?? -1n) >= offset;
    if (!applied) await this.write(key, await this.encode(standing, true));
    return { applied, standing };
  }

  private encode(entity: Entity, updateOnly: boolean): Promise<Buffer> {
    return this.codec.encode(this.topic, 'ConfigEntry', {
      kind: entity.kind,
      tenant_id: tenantOf(entity),
      id: entity.id,
      data: JSON.stringify(sealEntity(this.keyring, entity)),
      written_at: Date.now(),
      update_only: updateOnly,
    });
  }

  async remove(kind: EntityKind, tenantId: string, id: string): Promise<void> {
    await this.write(entityKey(kind, tenantId, id), null);
  }

  /** Waits until every write made anywhere before this call is applied here (coalesces callers). */
  sync(timeoutMs = 5_000): Promise<void> {
    this.syncing ??= this.table.catchUp(timeoutMs).finally(() => {
      this.syncing = undefined;
    });
    return this.syncing;
  }

  /** Writes one record and waits until this process has applied it; returns its offset. */
  private async write(key: string, value: Buffer | null): Promise<bigint> {
    if (!this.producer) throw new Error('config store is not started');
    const [meta] = await this.producer.send({ topic: this.topic, acks: -1, messages: [{ key, value }] });
    if (!meta || meta.baseOffset === undefined) throw new Error(`no offset returned for config write ${key}`);
    await this.table.waitFor({ partition: meta.partition, offset: meta.baseOffset });
    return BigInt(meta.baseOffset);
  }

  /**
   * Applies one record; false when an update-only record finds its entity deleted, or when a
   * record would change an entity that is final (the same final state written again passes).
   */
  private apply(key: string, written: Written | null): boolean {
    const previous = this.entities.get(key);
    const groupKey = key.slice(0, key.lastIndexOf('/'));
    if (written === null) {
      this.deletedKeys.add(key);
      this.entities.delete(key);
      this.byGroup.get(groupKey)?.delete(key);
      if (previous) this.byId.delete(previous.id);
      if (previous) for (const l of this.listeners) l(previous, true);
      return true;
    }
    // Without a previous value the key was either deleted or compacted down to this record;
    // only a tombstone read before it tells them apart (and the writer's tombstone follows).
    if (written.updateOnly && !previous && this.deletedKeys.has(key)) return false;
    const { entity } = written;
    if (previous && isFinal(previous) && JSON.stringify(previous) !== JSON.stringify(entity)) return false;
    this.entities.set(key, entity);
    let group = this.byGroup.get(groupKey);
    if (!group) this.byGroup.set(groupKey, (group = new Map()));
    group.set(key, entity);
    if (entity.kind !== 'tenant') this.byId.set(entity.id, entity);
    for (const l of this.listeners) l(entity, false);
    return true;
  }
}
