import type { Kafka, Producer } from 'kafkajs';
import { ensureTopics } from '../../platform/kafka/client';
import { TopicTable } from '../../platform/kafka/topic-table';
import type { SchemaReference } from './avro';
import { compatibilityProblems, type CompatibilityLevel } from './compatibility';
import {
  incompatibleSchema,
  subjectConfigNotFound,
  subjectNotFound,
  subjectNotSoftDeleted,
  subjectSoftDeleted,
  versionNotFound,
  versionNotSoftDeleted,
  versionSoftDeleted,
} from './errors';
import { decodeRecord, encodeRecord, type RegistryRecord } from './records';
import { RegistryState } from './state';

/** Runs tasks one at a time, in call order; a failed task does not stop the ones after it. */
class Serial {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.tail.then(task);
    this.tail = result.catch(() => undefined);
    return result;
  }
}

/**
 * The registry's state kept on a compacted Kafka topic: every change is a record, and the
 * in-memory state is only ever updated by reading the topic back, so a restart rebuilds it.
 *
 * This is a SINGLE-WRITER registry. Global ids and version numbers are handed out by this
 * process from the state it has read, with writes serialised in-process; two registries
 * writing one topic at the same time could give one id to two schemas. (Confluent elects
 * a leader for this; here, run exactly one registry per topic.)
 */
export class RegistryStore {
  private readonly writes = new Serial();

  private constructor(
    private readonly topic: string,
    private readonly table: TopicTable<string>,
    private readonly producer: Producer,
    readonly state: RegistryState,
  ) {}

  /** Creates the topic if needed and returns once the whole topic has been read. */
  static async open(kafka: Kafka, topic: string, replicationFactor = 1): Promise<RegistryStore> {
    await ensureTopics(kafka, [{ topic, partitions: 1, compacted: true }], replicationFactor);
    const state = new RegistryState();
    const table = new TopicTable<string>({
      kafka,
      topic,
      groupIdPrefix: `schema-registry-${topic}`,
      decode: (value) => value.toString('utf8'),
      apply: (key, value) => {
        const record = decodeRecord(key, value);
        if (record) state.apply(record);
      },
    });
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    try {
      await producer.connect();
      await table.start();
    } catch (error) {
      await table.stop();
      await producer.disconnect().catch(() => undefined);
      throw error;
    }
    return new RegistryStore(topic, table, producer, state);
  }

  /** Registers a schema under a subject and returns its global id (an existing one if it is known). */
  register(subject: string, schema: string, references: readonly SchemaReference[]): Promise<number> {
    return this.writes.run(async () => {
      await this.table.catchUp();
      const candidate = this.state.prepare(schema, references);
      const existing = this.state.findInSubject(subject, candidate.identity, false);
      if (existing) return existing.id;
      const previous = this.state
        .versions(subject, false)
        .map((v) => ({ version: v.version, type: this.state.typeOf(v) }));
      const problems = compatibilityProblems(this.state.effectiveLevel(subject), candidate.type, previous);
      if (problems.length > 0) throw incompatibleSchema(subject, problems);
      const id = this.state.idOf(candidate.identity) ?? this.state.nextId();
      const version = this.state.nextVersion(subject);
      const value = { subject, version, id, schema: candidate.schema, references: candidate.references, deleted: false };
      await this.write([{ keytype: 'SCHEMA', subject, version, value }]);
      return id;
    });
  }

  /** `subject` null is the global level. */
  setCompatibility(subject: string | null, level: CompatibilityLevel): Promise<void> {
    return this.writes.run(() => this.write([{ keytype: 'CONFIG', subject, level }]));
  }

  /** Drops a configured level and returns it; the global level falls back to the default. */
  deleteCompatibility(subject: string | null): Promise<CompatibilityLevel> {
    return this.writes.run(async () => {
      await this.table.catchUp();
      const previous = this.state.configuredLevel(subject);
      if (!previous) throw subjectConfigNotFound(subject ?? '');
      await this.write([{ keytype: 'CONFIG', subject, level: null }]);
      return previous;
    });
  }

  /**
   * Soft delete flags every live version; permanent delete (only after a soft one, as in
   * Confluent) writes tombstones so compaction forgets them. Returns the versions deleted.
   */
  deleteSubject(subject: string, permanent: boolean): Promise<number[]> {
    return this.writes.run(async () => {
      await this.table.catchUp();
      const all = this.state.versions(subject, true);
      if (all.length === 0) throw subjectNotFound(subject);
      if (!permanent) {
        const live = all.filter((v) => !v.deleted);
        if (live.length === 0) throw subjectSoftDeleted(subject);
        await this.write(live.map((v) => ({ keytype: 'SCHEMA', subject, version: v.version, value: { ...v, deleted: true } })));
        return live.map((v) => v.version);
      }
      if (all.some((v) => !v.deleted)) throw subjectNotSoftDeleted(subject);
      const records: RegistryRecord[] = all.map((v) => ({ keytype: 'SCHEMA', subject, version: v.version, value: null }));
      if (this.state.configuredLevel(subject)) records.push({ keytype: 'CONFIG', subject, level: null });
      await this.write(records);
      return all.map((v) => v.version);
    });
  }

  deleteVersion(subject: string, version: number | 'latest', permanent: boolean): Promise<number> {
    return this.writes.run(async () => {
      await this.table.catchUp();
      if (this.state.versions(subject, true).length === 0) throw subjectNotFound(subject);
      const target = this.state.version(subject, version, version !== 'latest' || permanent);
      if (!target) throw versionNotFound(version);
      if (!permanent && target.deleted) throw versionSoftDeleted(subject, target.version);
      if (permanent && !target.deleted) throw versionNotSoftDeleted(subject, target.version);
      const value = permanent ? null : { ...target, deleted: true };
      await this.write([{ keytype: 'SCHEMA', subject, version: target.version, value }]);
      return target.version;
    });
  }

  async close(): Promise<void> {
    await this.table.stop();
    await this.producer.disconnect().catch(() => undefined);
  }

  /** Answers only once the records are replicated (acks -1) and applied to `state`. */
  private async write(records: RegistryRecord[]): Promise<void> {
    const messages = records.map(encodeRecord);
    const [meta] = await this.producer.send({ topic: this.topic, acks: -1, messages });
    if (!meta?.baseOffset) throw new Error(`no offset returned for a write to ${this.topic}`);
    const last = BigInt(meta.baseOffset) + BigInt(messages.length - 1);
    await this.table.waitFor({ partition: meta.partition, offset: last.toString() });
  }
}
