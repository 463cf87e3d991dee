import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { FieldError } from './errors';
import { jsonDepth } from './json-depth';
import { compilePattern } from './regex';

/**
 * The JSON Schema (2020-12) an event type of the catalogue may carry for its payload. It is
 * compiled once when the API accepts it, so that a schema stored in the catalogue is one a
 * validator can use; payloads are not validated against it by the service.
 */

/** Largest schema, as JSON text: it lives on the config topic and in every process's memory. */
export const MAX_SCHEMA_BYTES = 64 * 1024;
/** Deepest nesting of objects and arrays in a schema. */
export const MAX_SCHEMA_DEPTH = 32;
export const JSON_SCHEMA_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

/**
 * `pattern` and `patternProperties` compile on RE2 (core/regex.ts) rather than V8's backtracking
 * engine: a tenant's pattern never becomes a V8 RegExp, and one RE2 cannot run is refused here.
 */
const re2Engine = Object.assign(
  (pattern: string): { test(s: string): boolean } => {
    const compiled = compilePattern(pattern);
    if (typeof compiled === 'string') throw new Error(`pattern ${JSON.stringify(pattern)} ${compiled}`);
    return compiled;
  },
  { code: 're2' },
);

/** Why `schema` cannot be stored as an event type's schema, each problem naming `schema` or a member in it. */
export function schemaProblems(schema: Record<string, unknown>, field = 'schema'): FieldError[] {
  const bytes = Buffer.byteLength(JSON.stringify(schema));
  if (bytes > MAX_SCHEMA_BYTES) return [{ field, message: `is ${bytes} bytes of JSON, more than ${MAX_SCHEMA_BYTES}` }];
  const depth = jsonDepth(schema, MAX_SCHEMA_DEPTH);
  if (depth > MAX_SCHEMA_DEPTH) return [{ field, message: `nests objects and arrays ${depth} levels deep, more than ${MAX_SCHEMA_DEPTH}` }];
  if (schema.$schema !== undefined && schema.$schema !== JSON_SCHEMA_2020_12) return [{ field: `${field}.$schema`, message: `must be ${JSON_SCHEMA_2020_12} (or absent)` }];
  const remote = remoteRefs(schema, field);
  if (remote.length > 0) return remote;
  if (!metaValidator().validateSchema(schema)) {
    // one problem per member: a keyword's alternatives each complain about the same value
    const seen = new Set<string>();
    return (metaValidator().errors ?? [])
      .map((e) => ({ field: memberOf(field, e.instancePath), message: `is not valid JSON Schema 2020-12: ${e.message ?? 'invalid'}` }))
      .filter((e) => !seen.has(e.field) && seen.add(e.field))
      .slice(0, 10);
  }
  // compiled by a validator of its own, so nothing of one tenant's schema (its $ids, its code)
  // meets another's; without the meta-schema it costs a few ms, where a full one costs ~250 ms
  const compiler = new Ajv2020({ strict: false, allErrors: true, logger: false, meta: false, validateSchema: false, code: { regExp: re2Engine } });
  addFormats(compiler);
  const { $schema: _dialect, ...body } = schema;
  try {
    compiler.compile(body);
  } catch (err) {
    return [{ field, message: `does not compile: ${(err as Error).message}` }];
  }
  return [];
}

let shared: Ajv2020 | undefined;

/** Checks schemas against the 2020-12 meta-schema only (it never adds one): built once, as building it is what costs. */
function metaValidator(): Ajv2020 {
  if (!shared) {
    shared = new Ajv2020({ strict: false, allErrors: true, logger: false });
    addFormats(shared);
  }
  return shared;
}

/** `$ref`s and `$dynamicRef`s that leave the document: the service fetches nothing a tenant names. */
function remoteRefs(schema: unknown, field: string): FieldError[] {
  const found: FieldError[] = [];
  const stack: [unknown, string][] = [[schema, '']];
  while (stack.length > 0 && found.length < 10) {
    const [node, at] = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    for (const [k, v] of Object.entries(node)) {
      const path = Array.isArray(node) ? `${at}/${k}` : `${at}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      if ((k === '$ref' || k === '$dynamicRef') && typeof v === 'string' && !v.startsWith('#')) {
        found.push({ field: memberOf(field, path), message: `refers outside the schema (${v.slice(0, 100)}); only references within it (#...) are allowed` });
      } else stack.push([v, path]);
    }
  }
  return found;
}

/** `/properties/a~1b/type` under `schema` as the API names fields: `schema.properties.a/b.type`. */
function memberOf(field: string, pointer: string): string {
  return pointer === '' ? field : `${field}${pointer.split('/').slice(1).map((s) => (/^\d+$/.test(s) ? `[${s}]` : `.${s.replace(/~1/g, '/').replace(/~0/g, '~')}`)).join('')}`;
}

/**
 * An example payload of an event type: the schema's first `examples` entry, else one built from
 * the schema (each property's example, `const`, `default` or first `enum` value, else a value
 * of its type). What a portal shows beside the schema and sends as a test event.
 */
export function exampleOf(schema: unknown, depth = 0): unknown {
  if (typeof schema !== 'object' || schema === null || depth > 8) return null;
  const s = schema as Record<string, unknown>;
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0];
  if ('const' in s) return s.const;
  if ('default' in s) return s.default;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  for (const k of ['oneOf', 'anyOf', 'allOf'] as const) if (Array.isArray(s[k]) && (s[k] as unknown[]).length > 0) return exampleOf((s[k] as unknown[])[0], depth + 1);
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;
  switch (type) {
    case 'object': {
      const props = (typeof s.properties === 'object' && s.properties !== null ? s.properties : {}) as Record<string, unknown>;
      return Object.fromEntries(Object.entries(props).slice(0, 50).map(([k, v]) => [k, exampleOf(v, depth + 1)]));
    }
    case 'array':
      return s.items === undefined ? [] : [exampleOf(s.items, depth + 1)];
    case 'string':
      return s.format === 'date-time' ? '2026-01-01T00:00:00Z' : s.format === 'email' ? 'user@example.com' : s.format === 'uri' ? 'https://example.com' : s.format === 'uuid' ? '00000000-0000-4000-8000-000000000000' : 'string';
    case 'integer':
    case 'number':
      return typeof s.minimum === 'number' ? s.minimum : 0;
    case 'boolean':
      return true;
    default:
      return typeof s.properties === 'object' ? exampleOf({ ...s, type: 'object' }, depth) : null;
  }
}
