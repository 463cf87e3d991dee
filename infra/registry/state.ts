import { parseAvro, schemaIdentity, type AvroType, type SchemaReference } from './avro';
import { DEFAULT_COMPATIBILITY, type CompatibilityLevel } from './compatibility';
import { invalidSchema } from './errors';
import type { RegistryRecord, SchemaVersion } from './records';

/** A schema from a request, parsed, with its references pinned to concrete versions. */
export interface PreparedSchema {
  /** The submitted text without insignificant whitespace, as it will be stored and served. */
  schema: string;
  references: SchemaReference[];
  type: AvroType;
  identity: string;
}

/** A stored version with the key that says which registrations are the same schema. */
interface Entry {
  version: SchemaVersion;
  identity: string;
}

const slot = (subject: string, version: number) => `${subject}\u0000${version}`;

/**
 * The registry as the topic describes it so far: a pure fold over its records, with the
 * lookups the HTTP API needs. Soft-deleted versions stay here (flagged) because Confluent
 * still serves their schemas by id and never reuses their version numbers.
 */
export class RegistryState {
  private readonly subjects = new Map<string, Map<number, Entry>>();
  /** Every subject/version that uses a global id; the id lives while any of them does. */
  private readonly byId = new Map<number, Map<string, Entry>>();
  private readonly idByIdentity = new Map<string, number>();
  private readonly subjectLevels = new Map<string, CompatibilityLevel>();
  private globalLevel: CompatibilityLevel | undefined;
  private highestId = 0;

  apply(record: RegistryRecord): void {
    if (record.keytype === 'CONFIG') {
      if (record.subject === null) this.globalLevel = record.level ?? undefined;
      else if (record.level === null) this.subjectLevels.delete(record.subject);
      else this.subjectLevels.set(record.subject, record.level);
      return;
    }
    this.remove(record.subject, record.version);
    if (record.value) this.add(record.value);
  }

  subjectNames(includeDeleted: boolean): string[] {
    return [...this.subjects.keys()].filter((s) => this.versions(s, includeDeleted).length > 0).sort();
  }

  /** Versions of a subject, oldest first. */
  versions(subject: string, includeDeleted: boolean): SchemaVersion[] {
    const entries = [...(this.subjects.get(subject)?.values() ?? [])];
    return entries
      .map((e) => e.version)
      .filter((v) => includeDeleted || !v.deleted)
      .sort((a, b) => a.version - b.version);
  }

  version(subject: string, version: number | 'latest', includeDeleted: boolean): SchemaVersion | undefined {
    if (version === 'latest') return this.versions(subject, includeDeleted).at(-1);
    const found = this.subjects.get(subject)?.get(version)?.version;
    return found && (includeDeleted || !found.deleted) ? found : undefined;
  }

  /** A live version with the same schema, or, failing that, a soft-deleted one when asked. */
  findInSubject(subject: string, identity: string, includeDeleted: boolean): SchemaVersion | undefined {
    const matches = [...(this.subjects.get(subject)?.values() ?? [])]
      .filter((e) => e.identity === identity && (includeDeleted || !e.version.deleted))
      .sort((a, b) => Number(a.version.deleted) - Number(b.version.deleted) || a.version.version - b.version.version);
    return matches[0]?.version;
  }

  schemaById(id: number): SchemaVersion | undefined {
    const uses = [...(this.byId.get(id)?.values() ?? [])];
    return (uses.find((e) => !e.version.deleted) ?? uses[0])?.version;
  }

  usesOf(id: number, includeDeleted: boolean): SchemaVersion[] {
    return [...(this.byId.get(id)?.values() ?? [])].map((e) => e.version).filter((v) => includeDeleted || !v.deleted);
  }

  /** The global id a schema already has under any subject, so identical schemas share it. */
  idOf(identity: string): number | undefined {
    return this.idByIdentity.get(identity);
  }

  nextId(): number {
    return this.highestId + 1;
  }

  /** Soft-deleted versions count, so a version number never names two schemas. */
  nextVersion(subject: string): number {
    return Math.max(0, ...(this.subjects.get(subject)?.keys() ?? [])) + 1;
  }

  configuredLevel(subject: string | null): CompatibilityLevel | undefined {
    return subject === null ? this.globalLevel : this.subjectLevels.get(subject);
  }

  effectiveLevel(subject: string): CompatibilityLevel {
    return this.subjectLevels.get(subject) ?? this.globalLevel ?? DEFAULT_COMPATIBILITY;
  }

  /** Pins a reference to a concrete version (-1 means the latest). */
  resolveReference(ref: SchemaReference): SchemaReference {
    const target = this.version(ref.subject, ref.version === -1 ? 'latest' : ref.version, true);
    if (!target) throw invalidSchema(`reference '${ref.name}' to subject '${ref.subject}' version ${ref.version} not found`);
    return { name: ref.name, subject: ref.subject, version: target.version };
  }

  /** Texts of every schema the references lead to, dependencies first. */
  referencedSchemas(references: readonly SchemaReference[], seen = new Set<string>()): string[] {
    const texts: string[] = [];
    for (const ref of references) {
      const pinned = this.resolveReference(ref);
      const key = slot(pinned.subject, pinned.version);
      if (seen.has(key)) continue;
      seen.add(key);
      const target = this.version(pinned.subject, pinned.version, true);
      if (!target) continue;
      texts.push(...this.referencedSchemas(target.references, seen), target.schema);
    }
    return texts;
  }

  /** Validates a submitted schema against what its references point at. */
  prepare(schema: string, references: readonly SchemaReference[]): PreparedSchema {
    const pinned = references.map((r) => this.resolveReference(r));
    const type = parseAvro(schema, this.referencedSchemas(pinned));
    const compact = JSON.stringify(JSON.parse(schema));
    return { schema: compact, references: pinned, type, identity: schemaIdentity(compact, pinned) };
  }

  typeOf(version: SchemaVersion): AvroType {
    return parseAvro(version.schema, this.referencedSchemas(version.references));
  }

  private add(version: SchemaVersion): void {
    const entry: Entry = { version, identity: schemaIdentity(version.schema, version.references) };
    let versions = this.subjects.get(version.subject);
    if (!versions) this.subjects.set(version.subject, (versions = new Map()));
    versions.set(version.version, entry);
    let uses = this.byId.get(version.id);
    if (!uses) this.byId.set(version.id, (uses = new Map()));
    uses.set(slot(version.subject, version.version), entry);
    this.idByIdentity.set(entry.identity, version.id);
    this.highestId = Math.max(this.highestId, version.id);
  }

  private remove(subject: string, version: number): void {
    const versions = this.subjects.get(subject);
    const entry = versions?.get(version);
    if (!versions || !entry) return;
    versions.delete(version);
    if (versions.size === 0) this.subjects.delete(subject);
    const uses = this.byId.get(entry.version.id);
    uses?.delete(slot(subject, version));
    if (uses && uses.size === 0) {
      this.byId.delete(entry.version.id);
      if (this.idByIdentity.get(entry.identity) === entry.version.id) this.idByIdentity.delete(entry.identity);
    }
  }
}
