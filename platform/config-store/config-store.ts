import type { Kafka, Producer } from 'kafkajs';
import { entityKey, type Entity, type EntityKind } from '../../core/model';
import type { AvroCodec } from '../avro/codec';
import { TopicTable } from '../kafka/topic-table';

type EntityOf<K extends EntityKind> = Extract<Entity, { kind: K }>;

/**
 * Tenants, API keys, destinations, ingesters and delivery flows, held in memory from the
 * compacted config topic. A write is produced with acks=all and returns only once this
 * process's own view has applied it, so the writer reads its write at once.
 */
export class ConfigStore {
  private readonly entities = new Map<string, Entity>();
  /** Ids are globally unique (typed ULIDs), so an entity can also be found by id alone. */
  private readonly byId = new Map<string, Entity>();
  /** Entities by `kind/tenant`, so listing a tenant's flows on every routed event stays cheap. */
  private readonly byGroup = new Map<string, Map<string, Entity>>();
  private readonly table: TopicTable<Entity>;
  private producer: Producer | undefined;
  private syncing: Promise<void> | undefined;
  private readonly listeners = new Set<(entity: Entity, deleted: boolean) => void>();

  constructor(
    private readonly kafka: Kafka,
    private readonly codec: AvroCodec,
    readonly topic: string,
  ) {
    this.table = new TopicTable<Entity>({
      kafka,
      topic,
      groupIdPrefix: `${topic}-reader`,
      decode: async (value) => {
        const entry = await codec.decode('ConfigEntry', value);
        return JSON.parse(entry.data) as Entity;
      },
      apply: (key, entity) => this.apply(key, entity),
    });
  }

  async start(): Promise<void> {
    this.producer = this.kafka.producer({ allowAutoTopicCreation: false });
    await this.producer.connect();
    await this.table.start();
  }

  async stop(): Promise<void> {
    await this.table.stop();
    await this.producer?.disconnect().catch(() => undefined);
    this.producer = undefined;
  }

  /** Calls `listener` for every entity applied from now on. */
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

  /** Entities of one kind across all tenants. */
  all<K extends EntityKind>(kind: K): EntityOf<K>[] {
    const out: EntityOf<K>[] = [];
    for (const e of this.entities.values()) if (e.kind === kind) out.push(e as EntityOf<K>);
    return out;
  }

  async put(entity: Entity): Promise<void> {
    const tenantId = entity.kind === 'tenant' ? entity.id : entity.tenant_id;
    const value = await this.codec.encode(this.topic, 'ConfigEntry', {
      kind: entity.kind,
      tenant_id: tenantId,
      id: entity.id,
      data: JSON.stringify(entity),
      written_at: Date.now(),
    });
    await this.write(entityKey(entity.kind, tenantId, entity.id), value);
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

  private async write(key: string, value: Buffer | null): Promise<void> {
    if (!this.producer) throw new Error('config store is not started');
    const [meta] = await this.producer.send({ topic: this.topic, acks: -1, messages: [{ key, value }] });
    if (!meta || meta.baseOffset === undefined) throw new Error(`no offset returned for config write ${key}`);
    await this.table.waitFor({ partition: meta.partition, offset: meta.baseOffset });
  }

  private apply(key: string, entity: Entity | null): void {
    const previous = this.entities.get(key);
    const groupKey = key.slice(0, key.lastIndexOf('/'));
    if (entity === null) {
      this.entities.delete(key);
      this.byGroup.get(groupKey)?.delete(key);
      if (previous) this.byId.delete(previous.id);
      if (previous) for (const l of this.listeners) l(previous, true);
      return;
    }
    this.entities.set(key, entity);
    let group = this.byGroup.get(groupKey);
    if (!group) this.byGroup.set(groupKey, (group = new Map()));
    group.set(key, entity);
    if (entity.kind !== 'tenant') this.byId.set(entity.id, entity);
    for (const l of this.listeners) l(entity, false);
  }
}
