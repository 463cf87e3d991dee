import type { SchemaReference } from './avro';
import { parseCompatibilityLevel, type CompatibilityLevel } from './compatibility';

/**
 * Records of the registry topic, keyed and shaped like Confluent's `_schemas` topic so the
 * log is easy to read with ordinary tools. Keys are built field by field in a fixed order:
 * compaction matches keys byte for byte.
 */
export interface SchemaVersion {
  subject: string;
  version: number;
  id: number;
  schema: string;
  references: SchemaReference[];
  deleted: boolean;
}

export type RegistryRecord =
  | { keytype: 'SCHEMA'; subject: string; version: number; value: SchemaVersion | null }
  | { keytype: 'CONFIG'; subject: string | null; level: CompatibilityLevel | null };

export function encodeRecord(record: RegistryRecord): { key: string; value: string | null } {
  if (record.keytype === 'SCHEMA') {
    const key = JSON.stringify({ keytype: 'SCHEMA', subject: record.subject, version: record.version, magic: 1 });
    const v = record.value;
    if (!v) return { key, value: null };
    const body: Record<string, unknown> = { subject: v.subject, version: v.version, id: v.id, schema: v.schema, deleted: v.deleted };
    if (v.references.length > 0) body.references = v.references;
    return { key, value: JSON.stringify(body) };
  }
  const key = JSON.stringify({ keytype: 'CONFIG', subject: record.subject, magic: 0 });
  return { key, value: record.level === null ? null : JSON.stringify({ compatibilityLevel: record.level }) };
}

/** Unknown key types (Confluent also writes NOOP, MODE, ...) and malformed records give undefined. */
export function decodeRecord(key: string, value: string | null): RegistryRecord | undefined {
  const k = parseObject(key);
  if (k?.keytype === 'SCHEMA' && typeof k.subject === 'string' && isVersion(k.version)) {
    if (value === null) return { keytype: 'SCHEMA', subject: k.subject, version: k.version, value: null };
    const v = parseObject(value);
    if (!v || typeof v.schema !== 'string' || !isVersion(v.id)) return undefined;
    if (v.schemaType !== undefined && v.schemaType !== 'AVRO') return undefined;
    const references = Array.isArray(v.references) ? v.references.filter(isReference) : [];
    return {
      keytype: 'SCHEMA',
      subject: k.subject,
      version: k.version,
      value: { subject: k.subject, version: k.version, id: v.id, schema: v.schema, references, deleted: v.deleted === true },
    };
  }
  if (k?.keytype === 'CONFIG' && (typeof k.subject === 'string' || k.subject === null || k.subject === undefined)) {
    const subject = typeof k.subject === 'string' ? k.subject : null;
    if (value === null) return { keytype: 'CONFIG', subject, level: null };
    const level = parseCompatibilityLevel(parseObject(value)?.compatibilityLevel);
    return level ? { keytype: 'CONFIG', subject, level } : undefined;
  }
  return undefined;
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function isVersion(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0;
}

export function isReference(value: unknown): value is SchemaReference {
  if (value === null || typeof value !== 'object') return false;
  const r = value as Record<string, unknown>;
  return typeof r.name === 'string' && typeof r.subject === 'string' && typeof r.version === 'number' && Number.isInteger(r.version);
}
