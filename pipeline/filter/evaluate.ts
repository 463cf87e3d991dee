import { DEFAULT_FILTER_LIMITS, type AnyRule, type BodyRule, type EventTypeRule, type FilterLimits, type FilterRule, type HeaderRule, type JsonScalar } from '../../core/filters';
import { compilePattern } from '../../core/regex';
import { jsonDepthExceeds } from './json-depth';

/** What the filter stage knows about a verified webhook. Header names arrive lower-case. */
export interface FilterInput {
  event_type: string | null;
  headers: { name: string; value: string }[];
  body: Buffer;
}

/**
 * Passed, dropped by the first failing rule, or not judged: a rule needed more of the event
 * than the limits allow. An unevaluable event is neither passed nor dropped; the stage sends it
 * to the dead-letter topic with the reason.
 */
export type FilterResult =
  | { pass: true }
  | { pass: false; rule_index: number; rule: FilterRule; reason: string }
  | { pass: false; unevaluable: true; rule_index: number; rule: FilterRule; reason: string };

/**
 * All rules must pass; the first one that does not is reported with a short reason. Given a
 * {@link FilterContext} instead of the event, the rules share its decoded body with every other
 * list evaluated on it (routing evaluates one list per destination on the same event).
 */
export function evaluateFilters(filters: FilterRule[], event: FilterInput | FilterContext, limits: FilterLimits = DEFAULT_FILTER_LIMITS): FilterResult {
  const ctx = event instanceof Context ? event : new Context(event, limits);
  for (const [rule_index, rule] of filters.entries()) {
    let reason: string | null;
    try {
      reason = check(rule, ctx);
    } catch (err) {
      if (err instanceof Unevaluable) return { pass: false, unevaluable: true, rule_index, rule, reason: err.message };
      throw err;
    }
    if (reason !== null) return { pass: false, rule_index, rule, reason };
  }
  return { pass: true };
}

/** Thrown where a rule would read past a limit; it ends the evaluation of the whole list. */
class Unevaluable extends Error {}

const NOT_JSON = Symbol('not JSON');

/** What rules read of one event, decoded at most once, and only when a rule asks. */
export type FilterContext = Context;

/** A context to evaluate several rule lists on one event: its body is parsed once for all of them. */
export function filterContext(event: FilterInput, limits: FilterLimits = DEFAULT_FILTER_LIMITS): FilterContext {
  return new Context(event, limits);
}

/** Per-event state, so the body is decoded at most once and only when a body rule asks. */
class Context {
  private parsed: unknown = undefined;
  private done = false;
  /** Why the body cannot be read within the limits, once a rule found out (kept for the next lists). */
  private unreadable: string | null = null;
  constructor(
    readonly event: FilterInput,
    private readonly limits: FilterLimits,
  ) {}

  body(): unknown {
    if (this.unreadable !== null) throw new Unevaluable(this.unreadable);
    if (!this.done) {
      const { body } = this.event;
      const { maxBodyBytes, maxJsonDepth } = this.limits;
      if (body.length > maxBodyBytes) this.unreadable = `body is ${body.length} bytes, more than the ${maxBodyBytes} a body rule reads (FILTER_MAX_BODY_BYTES)`;
      // checked on the bytes, before anything builds the nested values
      else if (jsonDepthExceeds(body, maxJsonDepth)) this.unreadable = `body nests arrays and objects more than ${maxJsonDepth} levels deep, the most a body rule reads (FILTER_MAX_JSON_DEPTH)`;
      if (this.unreadable !== null) throw new Unevaluable(this.unreadable);
      this.done = true;
      try {
        // A UTF-8 byte order mark is legal in front of JSON text but not for JSON.parse.
        this.parsed = JSON.parse(body.toString('utf8').replace(/^\uFEFF/, ''));
      } catch {
        this.parsed = NOT_JSON;
      }
    }
    return this.parsed;
  }

  header(name: string): string[] {
    const wanted = name.toLowerCase();
    return this.event.headers.filter((h) => h.name.toLowerCase() === wanted).map((h) => h.value);
  }

  /** The values a pattern may read: the regex work grows with their length. */
  boundedForPattern(name: string, values: string[]): string[] {
    const bytes = values.reduce((n, v) => n + Buffer.byteLength(v), 0);
    const max = this.limits.maxHeaderBytes;
    if (bytes > max) throw new Unevaluable(`header ${name} carries ${bytes} bytes, more than the ${max} a matches rule reads (FILTER_MAX_HEADER_BYTES)`);
    return values;
  }
}

/** The reason the rule fails, or null when it passes. */
function check(rule: FilterRule, ctx: Context): string | null {
  switch (rule.type) {
    case 'event_type':
      return checkEventType(rule, ctx.event.event_type);
    case 'header': {
      const values = ctx.header(rule.name);
      return checkHeader(rule, rule.op === 'matches' ? ctx.boundedForPattern(rule.name.toLowerCase(), values) : values);
    }
    case 'body':
      return checkBody(rule, ctx.body());
    case 'any':
      return checkAny(rule, ctx);
  }
}

function checkEventType(rule: EventTypeRule, type: string | null): string | null {
  // Without an event type nothing can be in the list, so not_in stays the exact complement of in.
  if (rule.op === 'not_in') return type !== null && rule.values.includes(type) ? `event type ${show(type)} is in ${list(rule.values)}` : null;
  if (type === null) return 'event type is not set';
  switch (rule.op) {
    case 'in':
      return rule.values.includes(type) ? null : `event type ${show(type)} is not in ${list(rule.values)}`;
    case 'prefix':
      return type.startsWith(rule.value) ? null : `event type ${show(type)} does not start with ${show(rule.value)}`;
    case 'glob':
      return globMatch(rule.value, type) ? null : `event type ${show(type)} does not match ${show(rule.value)}`;
  }
}

function checkHeader(rule: HeaderRule, values: string[]): string | null {
  const name = `header ${rule.name.toLowerCase()}`;
  if (rule.op === 'not_exists') return values.length === 0 ? null : `${name} is present`;
  if (rule.op === 'not_equals') return values.includes(rule.value) ? `${name} equals ${show(rule.value)}` : null;
  if (values.length === 0) return `${name} is missing`;
  const got = `${name} ${values.map(show).join(', ')}`;
  switch (rule.op) {
    case 'exists':
      return null;
    case 'equals':
      return values.includes(rule.value) ? null : `${got} does not equal ${show(rule.value)}`;
    case 'prefix':
      return values.some((v) => v.startsWith(rule.value)) ? null : `${got} does not start with ${show(rule.value)}`;
    case 'suffix':
      return values.some((v) => v.endsWith(rule.value)) ? null : `${got} does not end with ${show(rule.value)}`;
    case 'contains':
      return values.some((v) => v.includes(rule.value)) ? null : `${got} does not contain ${show(rule.value)}`;
    case 'in':
      return values.some((v) => rule.values.includes(v)) ? null : `${got} is not in ${list(rule.values)}`;
    case 'matches': {
      const re = compilePattern(rule.pattern);
      if (typeof re === 'string') return `${name} pattern ${rule.pattern} ${re}`;
      return values.some((v) => re.test(v)) ? null : `${got} does not match /${rule.pattern}/`;
    }
  }
}

function checkBody(rule: BodyRule, body: unknown): string | null {
  if (body === NOT_JSON) return `body is not JSON, so body.${rule.path} cannot be tested`;
  const at = resolve(body, rule.path);
  const name = `body ${rule.path}`;
  if (rule.op === 'not_exists') return at.found ? `${name} is present` : null;
  if (rule.op === 'not_equals') return at.found && at.value === rule.value ? `${name} is ${json(rule.value)}` : null;
  if (!at.found) return `${name} is missing`;
  switch (rule.op) {
    case 'exists':
      return null;
    // Strict: the string "1" is not the number 1, and objects or arrays equal no scalar.
    case 'equals':
      return at.value === rule.value ? null : `${name} is ${json(at.value)}, not ${json(rule.value)}`;
    case 'in':
      return rule.values.some((v) => v === at.value) ? null : `${name} is ${json(at.value)}, not in [${rule.values.map(json).join(', ')}]`;
    case 'matches': {
      // only strings: a number or boolean matched as text would make `^1$` match both 1 and "1"
      if (typeof at.value !== 'string') return `${name} is ${json(at.value)}, not a string to match /${rule.pattern}/`;
      const re = compilePattern(rule.pattern);
      if (typeof re === 'string') return `${name} pattern ${rule.pattern} ${re}`;
      // the string came from a body within FILTER_MAX_BODY_BYTES, and RE2 is linear in it
      return re.test(at.value) ? null : `${name} is ${show(at.value)}, which does not match /${rule.pattern}/`;
    }
  }
}

function checkAny(rule: AnyRule, ctx: Context): string | null {
  const reasons: string[] = [];
  for (const r of rule.rules) {
    const reason = check(r, ctx);
    if (reason === null) return null;
    reasons.push(reason);
  }
  return `none of ${reasons.length} alternatives passed: ${reasons.join('; ')}`;
}

/** Follows a dotted path; numeric segments index arrays, on objects they are ordinary keys. */
function resolve(root: unknown, path: string): { found: true; value: unknown } | { found: false } {
  let cur = root;
  for (const seg of path.split('.')) {
    if (Array.isArray(cur)) {
      if (!/^(0|[1-9][0-9]*)$/.test(seg) || Number(seg) >= cur.length) return { found: false };
      cur = cur[Number(seg)];
    } else if (typeof cur === 'object' && cur !== null && Object.hasOwn(cur, seg)) {
      cur = (cur as Record<string, unknown>)[seg];
    } else {
      return { found: false };
    }
  }
  return { found: true, value: cur };
}

/**
 * `*` matches any run of characters, dots included; everything else is literal. Greedy matching
 * with one backtrack point bounds the work by pattern × text length, however many stars there
 * are, where a regex built from the glob could backtrack far worse.
 */
export function globMatch(glob: string, text: string): boolean {
  let g = 0;
  let t = 0;
  let star = -1;
  let resume = 0;
  while (t < text.length) {
    if (g < glob.length && glob[g] === '*') {
      star = g++;
      resume = t;
    } else if (g < glob.length && glob[g] === text[t]) {
      g++;
      t++;
    } else if (star >= 0) {
      g = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (g < glob.length && glob[g] === '*') g++;
  return g === glob.length;
}

const SHOWN = 80;

// Reasons end up in event transitions; long header or body values are cut so they stay short.
function show(s: string): string {
  return JSON.stringify(s.length > SHOWN ? `${s.slice(0, SHOWN)}…` : s);
}

function list(values: string[]): string {
  const shown = values.slice(0, 10).join(', ');
  return `[${values.length > 10 ? `${shown}, … ${values.length - 10} more` : shown}]`;
}

function json(v: unknown): string {
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object' && v !== null) return 'an object';
  if (typeof v === 'string') return show(v);
  return String(v as Exclude<JsonScalar, string>);
}
