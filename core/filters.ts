import type { FieldError } from './errors';
import { compilePattern } from './regex';

/**
 * Ingester filters: the conditions a verified webhook must meet to go on to routing. Rules are
 * plain JSON (they live on the config topic inside the ingester) and are validated here once, when
 * the API accepts them; pipeline/filter/evaluate.ts applies them. docs/filters.md is the user's
 * description of the same semantics, keep both in step.
 */

export type JsonScalar = string | number | boolean | null;

export type EventTypeRule =
  | { type: 'event_type'; op: 'in' | 'not_in'; values: string[] }
  | { type: 'event_type'; op: 'prefix' | 'glob'; value: string };

export type HeaderRule =
  | { type: 'header'; name: string; op: HeaderValueOp; value: string }
  | { type: 'header'; name: string; op: PresenceOp }
  | { type: 'header'; name: string; op: 'in'; values: string[] }
  | { type: 'header'; name: string; op: 'matches'; pattern: string };

export type BodyRule =
  | { type: 'body'; path: string; op: 'equals' | 'not_equals'; value: JsonScalar }
  | { type: 'body'; path: string; op: 'in'; values: JsonScalar[] }
  | { type: 'body'; path: string; op: PresenceOp }
  | { type: 'body'; path: string; op: 'matches'; pattern: string };

/** OR of its rules. */
export interface AnyRule {
  type: 'any';
  rules: FilterRule[];
}

export type FilterRule = EventTypeRule | HeaderRule | BodyRule | AnyRule;

export const HEADER_VALUE_OPS = ['equals', 'not_equals', 'prefix', 'suffix', 'contains'] as const;
export type HeaderValueOp = (typeof HEADER_VALUE_OPS)[number];
export const PRESENCE_OPS = ['exists', 'not_exists'] as const;
export type PresenceOp = (typeof PRESENCE_OPS)[number];

/** Rules in one ingester, nested ones included: each rule costs work on every event. */
export const MAX_RULES = 50;
/** The top-level list is level 1; the rules of an `any` are one level below it. */
export const MAX_DEPTH = 3;
export const MAX_PATTERN_LENGTH = 256;
/**
 * RE2 instructions of all `matches` patterns of one rule list together (core/regex.ts bounds each
 * one): the regex work on an event grows with their sum times the header or body bytes they read.
 */
export const MAX_TOTAL_PROGRAM_SIZE = 500;
export const MAX_VALUES = 100;
export const MAX_STRING_LENGTH = 1024;
export const MAX_NAME_LENGTH = 256;
export const MAX_PATH_SEGMENTS = 32;

/** How much of an event the filters read: beyond these they do not judge it at all. */
export interface FilterLimits {
  /** Largest body a body rule parses (FILTER_MAX_BODY_BYTES). */
  maxBodyBytes: number;
  /** Deepest nesting of arrays and objects a body rule parses (FILTER_MAX_JSON_DEPTH). */
  maxJsonDepth: number;
  /** Most bytes of one header's values, all together, a `matches` rule reads (FILTER_MAX_HEADER_BYTES). */
  maxHeaderBytes: number;
}

export const DEFAULT_FILTER_LIMITS: FilterLimits = { maxBodyBytes: 262_144, maxJsonDepth: 32, maxHeaderBytes: 8_192 };

/** What parseFilters found: the rules, or why they cannot be stored. */
export interface ParsedFilters {
  filters: FilterRule[];
  /** Malformed input: a wrong type, a missing or unknown member, a value out of bounds (400). */
  errors: FieldError[];
  /** Well-formed values that cannot be used: patterns the RE2 engine refuses (422). */
  refused: FieldError[];
}

/**
 * Validates filters as the API receives them. Every problem is reported with its field path; when
 * there is any, `filters` is empty so that no partial rule set can be stored by mistake. An absent
 * list (undefined) means no filters. `field` names the list in those paths: `filters` of an
 * ingester, `filter` of a destination's subscription (the same rules, checked here only).
 */
export function parseFilters(input: unknown, field = 'filters'): ParsedFilters {
  const errors: FieldError[] = [];
  const refused: FieldError[] = [];
  if (input === undefined) return { filters: [], errors, refused };
  if (!Array.isArray(input)) return { filters: [], errors: [{ field, message: 'must be an array of rules' }], refused };
  // A huge list is refused whole rather than producing one error per element.
  if (input.length > MAX_RULES) return { filters: [], errors: [{ field, message: `must hold at most ${MAX_RULES} rules, got ${input.length}` }], refused };
  const problems: Problems = { errors, refused };
  const filters = input.map((r, i) => parseRule(r, `${field}[${i}]`, 1, problems));
  const total = countRules(filters);
  if (total > MAX_RULES) errors.push({ field, message: `must hold at most ${MAX_RULES} rules including nested ones, got ${total}` });
  if (errors.length === 0 && refused.length === 0) {
    const size = programSize(filters);
    if (size > MAX_TOTAL_PROGRAM_SIZE) refused.push({ field, message: `patterns compile to ${size} RE2 instructions together, more than ${MAX_TOTAL_PROGRAM_SIZE}` });
  }
  return errors.length > 0 || refused.length > 0 ? { filters: [], errors, refused } : { filters, errors, refused };
}

interface Problems {
  errors: FieldError[];
  refused: FieldError[];
}

function countRules(rules: FilterRule[]): number {
  return rules.reduce((n, r) => n + 1 + (r.type === 'any' ? countRules(r.rules) : 0), 0);
}

/** Instructions of every `matches` pattern, nested ones included (each compiled and cached already). */
function programSize(rules: FilterRule[]): number {
  return rules.reduce((n, r) => {
    if (r.type === 'any') return n + programSize(r.rules);
    if ((r.type !== 'header' && r.type !== 'body') || r.op !== 'matches') return n;
    const compiled = compilePattern(r.pattern);
    return n + (typeof compiled === 'string' ? 0 : compiled.size);
  }, 0);
}

type Obj = Record<string, unknown>;

// Returns a placeholder on error: the caller only keeps the result when `errors` and `refused` stay empty.
function parseRule(input: unknown, field: string, depth: number, problems: Problems): FilterRule {
  const { errors } = problems;
  const invalid: FilterRule = { type: 'any', rules: [] };
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    errors.push({ field, message: 'must be an object' });
    return invalid;
  }
  const r = input as Obj;
  switch (r.type) {
    case 'event_type':
      return parseEventType(r, field, errors) ?? invalid;
    case 'header':
      return parseHeader(r, field, problems) ?? invalid;
    case 'body':
      return parseBody(r, field, problems) ?? invalid;
    case 'any':
      return parseAny(r, field, depth, problems) ?? invalid;
    default:
      errors.push({ field: `${field}.type`, message: 'must be one of event_type, header, body, any' });
      return invalid;
  }
}

function parseEventType(r: Obj, field: string, errors: FieldError[]): EventTypeRule | null {
  const before = errors.length;
  const op = r.op;
  if (op === 'in' || op === 'not_in') {
    onlyKeys(r, field, ['type', 'op', 'values'], errors);
    const values = stringList(r.values, `${field}.values`, errors, false);
    return errors.length === before && values ? { type: 'event_type', op, values } : null;
  }
  if (op === 'prefix' || op === 'glob') {
    onlyKeys(r, field, ['type', 'op', 'value'], errors);
    const value = string(r.value, `${field}.value`, errors, false);
    return errors.length === before && value !== null ? { type: 'event_type', op, value } : null;
  }
  errors.push({ field: `${field}.op`, message: 'must be one of in, not_in, prefix, glob' });
  return null;
}

function parseHeader(r: Obj, field: string, { errors, refused }: Problems): HeaderRule | null {
  const before = errors.length + refused.length;
  const name = headerName(r.name, `${field}.name`, errors);
  const op = r.op;
  let rule: HeaderRule | null = null;
  if (isOneOf(op, HEADER_VALUE_OPS)) {
    onlyKeys(r, field, ['type', 'name', 'op', 'value'], errors);
    // An empty prefix, suffix or substring would only test presence; `exists` says that plainly.
    const value = string(r.value, `${field}.value`, errors, op === 'equals' || op === 'not_equals');
    if (value !== null) rule = { type: 'header', name: name ?? '', op, value };
  } else if (isOneOf(op, PRESENCE_OPS)) {
    onlyKeys(r, field, ['type', 'name', 'op'], errors);
    rule = { type: 'header', name: name ?? '', op };
  } else if (op === 'in') {
    onlyKeys(r, field, ['type', 'name', 'op', 'values'], errors);
    const values = stringList(r.values, `${field}.values`, errors, true);
    if (values) rule = { type: 'header', name: name ?? '', op, values };
  } else if (op === 'matches') {
    onlyKeys(r, field, ['type', 'name', 'op', 'pattern'], errors);
    const pattern = patternOf(r.pattern, `${field}.pattern`, errors);
    const compiled = pattern === null ? null : compilePattern(pattern);
    if (typeof compiled === 'string') refused.push({ field: `${field}.pattern`, message: compiled });
    else if (pattern !== null) rule = { type: 'header', name: name ?? '', op, pattern };
  } else {
    errors.push({ field: `${field}.op`, message: `must be one of ${[...HEADER_VALUE_OPS, ...PRESENCE_OPS, 'in', 'matches'].join(', ')}` });
  }
  return errors.length + refused.length === before ? rule : null;
}

function parseBody(r: Obj, field: string, { errors, refused }: Problems): BodyRule | null {
  const before = errors.length + refused.length;
  const path = bodyPath(r.path, `${field}.path`, errors) ?? '';
  const op = r.op;
  let rule: BodyRule | null = null;
  if (op === 'equals' || op === 'not_equals') {
    onlyKeys(r, field, ['type', 'path', 'op', 'value'], errors);
    if (!('value' in r)) errors.push({ field: `${field}.value`, message: 'is required' });
    else if (scalar(r.value, `${field}.value`, errors)) rule = { type: 'body', path, op, value: r.value };
  } else if (op === 'in') {
    onlyKeys(r, field, ['type', 'path', 'op', 'values'], errors);
    const values = list(r.values, `${field}.values`, errors);
    const valid = values?.map((v, i) => scalar(v, `${field}.values[${i}]`, errors)).every(Boolean);
    if (values && valid) rule = { type: 'body', path, op, values: values as JsonScalar[] };
  } else if (isOneOf(op, PRESENCE_OPS)) {
    onlyKeys(r, field, ['type', 'path', 'op'], errors);
    rule = { type: 'body', path, op };
  } else if (op === 'matches') {
    onlyKeys(r, field, ['type', 'path', 'op', 'pattern'], errors);
    const pattern = patternOf(r.pattern, `${field}.pattern`, errors);
    const compiled = pattern === null ? null : compilePattern(pattern);
    if (typeof compiled === 'string') refused.push({ field: `${field}.pattern`, message: compiled });
    else if (pattern !== null) rule = { type: 'body', path, op, pattern };
  } else {
    errors.push({ field: `${field}.op`, message: 'must be one of equals, not_equals, in, matches, exists, not_exists' });
  }
  return errors.length + refused.length === before ? rule : null;
}

function parseAny(r: Obj, field: string, depth: number, problems: Problems): AnyRule | null {
  const { errors, refused } = problems;
  const before = errors.length + refused.length;
  onlyKeys(r, field, ['type', 'rules'], errors);
  const rules = list(r.rules, `${field}.rules`, errors);
  if (!rules) return null;
  if (depth >= MAX_DEPTH) {
    errors.push({ field: `${field}.rules`, message: `rules may nest at most ${MAX_DEPTH} levels deep` });
    return null;
  }
  if (rules.length > MAX_RULES) {
    errors.push({ field: `${field}.rules`, message: `must hold at most ${MAX_RULES} rules, got ${rules.length}` });
    return null;
  }
  const parsed = rules.map((x, i) => parseRule(x, `${field}.rules[${i}]`, depth + 1, problems));
  return errors.length + refused.length === before ? { type: 'any', rules: parsed } : null;
}

// Rejecting unknown members catches typos such as `value` for `values`, which would otherwise
// silently change what a rule means.
function onlyKeys(r: Obj, field: string, allowed: string[], errors: FieldError[]): void {
  for (const k of Object.keys(r)) {
    if (!allowed.includes(k)) errors.push({ field: `${field}.${k}`, message: `is not allowed with type ${String(r.type)} and op ${String(r.op)}` });
  }
}

function isOneOf<T extends string>(v: unknown, options: readonly T[]): v is T {
  return typeof v === 'string' && (options as readonly string[]).includes(v);
}

function string(v: unknown, field: string, errors: FieldError[], allowEmpty: boolean): string | null {
  if (typeof v !== 'string') errors.push({ field, message: 'is required and must be a string' });
  else if (!allowEmpty && v.length === 0) errors.push({ field, message: 'must not be empty' });
  else if (v.length > MAX_STRING_LENGTH) errors.push({ field, message: `must be at most ${MAX_STRING_LENGTH} characters` });
  else return v;
  return null;
}

/** A non-empty array of at most MAX_VALUES items; an empty list would match nothing (or everything). */
function list(v: unknown, field: string, errors: FieldError[]): unknown[] | null {
  if (!Array.isArray(v)) errors.push({ field, message: 'is required and must be an array' });
  else if (v.length === 0) errors.push({ field, message: 'must hold at least one item' });
  else if (v.length > MAX_VALUES) errors.push({ field, message: `must hold at most ${MAX_VALUES} items` });
  else return v;
  return null;
}

function stringList(v: unknown, field: string, errors: FieldError[], allowEmpty: boolean): string[] | null {
  const items = list(v, field, errors);
  if (!items) return null;
  const before = errors.length;
  const strings = items.map((x, i) => string(x, `${field}[${i}]`, errors, allowEmpty) ?? '');
  return errors.length === before ? strings : null;
}

function scalar(v: unknown, field: string, errors: FieldError[]): v is JsonScalar {
  const ok = v === null || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v)) || (typeof v === 'string' && v.length <= MAX_STRING_LENGTH);
  if (!ok) errors.push({ field, message: `must be a JSON string (at most ${MAX_STRING_LENGTH} characters), number, boolean or null` });
  return ok;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

function headerName(v: unknown, field: string, errors: FieldError[]): string | null {
  if (typeof v !== 'string') errors.push({ field, message: 'is required and must be a string' });
  else if (v.length > MAX_NAME_LENGTH) errors.push({ field, message: `must be at most ${MAX_NAME_LENGTH} characters` });
  else if (!TOKEN.test(v)) errors.push({ field, message: 'must be a valid HTTP header name' });
  else return v;
  return null;
}

/** The pattern's text within its length bound; whether RE2 can use it is decided apart (422, not 400). */
function patternOf(v: unknown, field: string, errors: FieldError[]): string | null {
  if (typeof v !== 'string') errors.push({ field, message: 'is required and must be a string' });
  else if (v.length === 0) errors.push({ field, message: 'must not be empty' });
  else if (v.length > MAX_PATTERN_LENGTH) errors.push({ field, message: `must be at most ${MAX_PATTERN_LENGTH} characters` });
  else return v;
  return null;
}

function bodyPath(v: unknown, field: string, errors: FieldError[]): string | null {
  if (typeof v !== 'string') errors.push({ field, message: 'is required and must be a string' });
  else if (v.length === 0 || v.length > MAX_NAME_LENGTH) errors.push({ field, message: `must be 1 to ${MAX_NAME_LENGTH} characters` });
  else if (v.split('.').some((s) => s.length === 0)) errors.push({ field, message: 'must be dot-separated keys without empty segments, like data.object.currency' });
  else if (v.split('.').length > MAX_PATH_SEGMENTS) errors.push({ field, message: `must have at most ${MAX_PATH_SEGMENTS} segments` });
  else return v;
  return null;
}
