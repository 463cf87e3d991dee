import { Type } from 'avsc';
import { invalidSchema, RegistryError } from './errors';

export type AvroType = Type;
type AvroSchema = Parameters<typeof Type.forSchema>[0];

/** A schema's reference to a named type registered under another subject. */
export interface SchemaReference {
  name: string;
  subject: string;
  version: number;
}

/**
 * Parses an Avro schema text. `referenced` holds the texts of every schema it depends on
 * (transitively), dependencies first, so their named types are known when the schema uses them.
 */
export function parseAvro(schema: string, referenced: readonly string[] = []): AvroType {
  const registry: Record<string, AvroType> = {};
  try {
    for (const text of referenced) Type.forSchema(parseJson(text), { registry });
    return Type.forSchema(parseJson(schema), { registry });
  } catch (error) {
    if (error instanceof RegistryError) throw error;
    throw invalidSchema(error instanceof Error ? error.message : String(error));
  }
}

/**
 * The key under which two registrations count as "the same schema": whitespace, key order,
 * `{"type": "int"}` versus `"int"` and short versus full names do not matter, but docs,
 * defaults and logical types do (avsc's own canonical form drops the latter, yet a changed
 * default changes compatibility, so it must make a new version).
 */
export function schemaIdentity(schema: string, references: readonly SchemaReference[]): string {
  let canonical: string;
  try {
    canonical = JSON.stringify(canonicalNode(JSON.parse(schema), ''));
  } catch {
    canonical = schema;
  }
  const refs = references.map((r) => [r.name, r.subject, r.version]);
  return refs.length === 0 ? canonical : `${canonical}\n${JSON.stringify(refs)}`;
}

function parseJson(text: string): AvroSchema {
  try {
    return JSON.parse(text) as AvroSchema;
  } catch (error) {
    throw invalidSchema(`not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
}

const PRIMITIVES = new Set(['null', 'boolean', 'int', 'long', 'float', 'double', 'bytes', 'string']);
const NAMED = new Set(['record', 'error', 'enum', 'fixed']);

function qualify(name: string, namespace: string): string {
  return PRIMITIVES.has(name) || name.includes('.') || namespace === '' ? name : `${namespace}.${name}`;
}

function canonicalNode(node: unknown, namespace: string): unknown {
  if (typeof node === 'string') return qualify(node, namespace);
  if (Array.isArray(node)) return node.map((n) => canonicalNode(n, namespace));
  if (node === null || typeof node !== 'object') return node;
  const obj = node as Record<string, unknown>;
  const keys = Object.keys(obj);
  if (keys.length === 1 && keys[0] === 'type') return canonicalNode(obj.type, namespace);

  let inner = namespace;
  const out: Record<string, unknown> = {};
  if (typeof obj.type === 'string' && NAMED.has(obj.type) && typeof obj.name === 'string') {
    const ns = typeof obj.namespace === 'string' ? obj.namespace : namespace;
    const fullName = qualify(obj.name, ns);
    inner = fullName.includes('.') ? fullName.slice(0, fullName.lastIndexOf('.')) : '';
    out.name = fullName;
  }
  for (const key of keys.sort()) {
    if (key in out || key === 'namespace') continue;
    const value = obj[key];
    if (key === 'type' || key === 'items' || key === 'values') out[key] = canonicalNode(value, inner);
    else if (key === 'fields' && Array.isArray(value)) out[key] = value.map((f) => canonicalField(f, inner));
    else out[key] = sortKeys(value);
  }
  return out;
}

function canonicalField(field: unknown, namespace: string): unknown {
  if (field === null || typeof field !== 'object' || Array.isArray(field)) return field;
  const obj = field as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(obj).sort()) {
    out[key] = key === 'type' ? canonicalNode(obj[key], namespace) : sortKeys(obj[key]);
  }
  return out;
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  const obj = value as Record<string, unknown>;
  return Object.fromEntries(Object.keys(obj).sort().map((k) => [k, sortKeys(obj[k])]));
}
