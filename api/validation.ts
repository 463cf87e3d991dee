import Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { validationError, type FieldError } from '../core/errors';
import { openApiDocument, requestBodyComponents } from './openapi';

/** The operations whose JSON body a route reads; the document names the component of each. */
export const BODY_OPERATIONS = ['createDestination', 'createIngester', 'updateIngester', 'createDeliveryFlow', 'updateDeliveryFlow', 'createSavedPayload', 'createApiKey', 'patchDestination', 'replaceDestination', 'rotateDestinationSecret', 'createReplay', 'createEventType', 'replaceEventType', 'testDestinationTransformation', 'createTenant', 'updateTenant', 'createPortalSession', 'sendTestEvent', 'openPortalSession'] as const;
export type BodyOperation = (typeof BODY_OPERATIONS)[number];

let validators: Map<BodyOperation, ValidateFunction> | undefined;
/** The document's schemas by name: a discriminator's branches are `$ref`s to them. */
let componentSchemas: Record<string, Branch> = {};

type Branch = { $ref?: string; properties?: { type?: { const?: string } } };

/**
 * The components as ajv takes them: it reads a discriminator's tags from each branch's `const`,
 * and refuses OpenAPI's `mapping`, which names the same branches for Redoc and client generators.
 */
function withoutMappings(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutMappings);
  if (typeof v !== 'object' || v === null) return v;
  if ('propertyName' in v && 'mapping' in v) return { ...v, mapping: undefined };
  return Object.fromEntries(Object.entries(v).map(([k, child]) => [k, withoutMappings(child)]));
}

/** Compiled once, from the component schemas of the document the API serves. */
function validatorOf(operation: BodyOperation): ValidateFunction {
  if (!validators) {
    const doc = openApiDocument({ errorBase: '' });
    // verbose: messages read the failing schema (`x-pattern-message`, `x-problem-of-array`, discriminator tags)
    const ajv = new Ajv2020({ strict: false, allErrors: true, verbose: true, discriminator: true });
    addFormats(ajv);
    componentSchemas = (doc.components as { schemas: Record<string, Branch> }).schemas;
    ajv.addSchema({ $id: 'hookline', components: withoutMappings(doc.components) });
    const components = requestBodyComponents(doc);
    validators = new Map(BODY_OPERATIONS.map((op) => [op, ajv.compile({ $ref: `hookline#/components/schemas/${components[op]}` })]));
  }
  return validators.get(operation)!;
}

/** `/delivery_flows/0/name` as the API names fields: `delivery_flows[0].name`; the root is `body`. */
function fieldOf(pointer: string, member?: string): string {
  const segments = [...pointer.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~')), ...(member === undefined ? [] : [member])];
  if (segments.length === 0) return 'body';
  return segments.map((s, i) => (/^\d+$/.test(s) ? `[${s}]` : i === 0 ? s : `.${s}`)).join('');
}

const TYPE_NAMES: Record<string, string> = { object: 'an object', array: 'an array', string: 'a string', integer: 'an integer', number: 'a number', boolean: 'a boolean' };
const FORMAT_MESSAGES: Record<string, string> = { uri: 'must be an absolute URL', 'date-time': 'must be an RFC 3339 date-time with a time zone' };

/** A problem as the API reports it; an item whose schema says so is reported on its array. */
function problemOf(e: ErrorObject): FieldError {
  const p = problemAt(e);
  return e.parentSchema?.['x-problem-of-array'] === true ? { field: p.field.replace(/\[\d+\]$/, ''), message: `each item ${p.message}` } : p;
}

function problemAt(e: ErrorObject): FieldError {
  const field = fieldOf(e.instancePath);
  const p = e.params as Record<string, unknown>;
  const limit = p.limit as number;
  switch (e.keyword) {
    case 'additionalProperties':
      return { field: fieldOf(e.instancePath, String(p.additionalProperty)), message: 'is not a member of this body' };
    case 'required':
      return { field: fieldOf(e.instancePath, String(p.missingProperty)), message: 'is required' };
    case 'discriminator':
      return { field: fieldOf(e.instancePath, String(p.tag)), message: `must be one of ${tagsOf(e.parentSchema).join(', ')}` };
    case 'type':
      if (field === 'body') return { field, message: 'must be a JSON object' };
      return { field, message: `must be ${[p.type].flat().map((t) => TYPE_NAMES[String(t)] ?? String(t)).join(' or ')}` };
    case 'minLength':
      return { field, message: limit === 1 ? 'must not be empty' : `must be at least ${limit} characters` };
    case 'maxLength':
      return { field, message: `must be at most ${limit} characters` };
    case 'minItems':
      return { field, message: `must hold at least ${limit} item${limit === 1 ? '' : 's'}` };
    case 'maxItems':
      return { field, message: `must hold at most ${limit} items` };
    case 'minimum':
      return { field, message: `must be at least ${limit}` };
    case 'maximum':
      return { field, message: `must be at most ${limit}` };
    case 'uniqueItems':
      return { field, message: 'must not hold the same value twice' };
    case 'enum':
      return { field, message: `must be one of ${(p.allowedValues as unknown[]).join(', ')}` };
    case 'pattern':
      return { field, message: String(e.parentSchema?.['x-pattern-message'] ?? `must match ${String(p.pattern)}`) };
    case 'format':
      return { field, message: FORMAT_MESSAGES[String(p.format)] ?? `must be a ${String(p.format)}` };
    default:
      return { field, message: e.message ?? 'is not valid' };
  }
}

function tagsOf(schema: Record<string, unknown> | undefined): string[] {
  const branches = (schema?.oneOf ?? []) as Branch[];
  return branches.map((b) => String((b.$ref ? componentSchemas[b.$ref.replace('#/components/schemas/', '')] : b)?.properties?.type?.const));
}

/** `b` is `a` or a member or item inside it. */
const within = (a: string, b: string): boolean => b === a || b.startsWith(`${a}.`) || b.startsWith(`${a}[`);

/**
 * A request body checked against its component, collecting the route's own checks beside the
 * schema's so that every problem of the body is reported together.
 */
export class BodyCheck<T> {
  readonly errors: FieldError[];

  constructor(
    readonly body: T,
    private readonly schemaErrors: FieldError[],
    /** Members that matched none of the forms the schema allows, unless a check names what is wrong inside them. */
    private readonly unmatched: FieldError[],
  ) {
    this.errors = [...schemaErrors];
  }

  /** Whether the schema found this member, and everything in it, well-formed: the route's own checks may read it as typed. */
  usable(field: string): boolean {
    return !this.schemaErrors.some((e) => e.field === 'body' || within(e.field, field) || within(field, e.field));
  }

  fail(field: string, message: string): void {
    this.errors.push({ field, message });
  }

  /** Throws a 400 validation-error listing every problem found, one per field. */
  done(): void {
    const explained = (u: FieldError) => this.errors.some((e) => u.field === 'body' || within(u.field, e.field));
    const errors = [...this.errors, ...this.unmatched.filter((u) => !explained(u))];
    const seen = new Set<string>();
    const first = errors.filter((e) => !seen.has(e.field) && seen.add(e.field));
    if (first.length > 0) throw validationError(first);
  }
}

/**
 * Checks a request body against the component the document gives the operation. The forms of a
 * `oneOf` without a discriminator (filter rules) and the conditions of an `if` (provider secrets)
 * would be reported by ajv as every branch's complaint; those members are left to the parser that
 * reads them, which names the field at fault, and are refused as a whole only when it finds nothing.
 */
export function validateBody<T>(operation: BodyOperation, body: unknown): BodyCheck<T> {
  const validate = validatorOf(operation);
  const raw = validate(body) ? [] : (validate.errors ?? []);
  // a nullable member is `anyOf: [its schema, null]`: the null branch and the anyOf only repeat the other's complaint
  const nullable = new Set(raw.filter((e) => e.keyword === 'type' && (e.params as { type: unknown }).type === 'null').map((e) => e.instancePath));
  const composites = raw.filter((e) => (e.keyword === 'oneOf' || e.keyword === 'anyOf') && !nullable.has(e.instancePath)).map((e) => e.instancePath);
  const insideComposite = (e: ErrorObject) => composites.some((c) => e.instancePath === c || e.instancePath.startsWith(`${c}/`));
  const conditional = (e: ErrorObject) => e.keyword === 'if' || /\/(then|else)\//.test(e.schemaPath);
  const schemaErrors: FieldError[] = [];
  const unmatched: FieldError[] = [];
  for (const e of raw) {
    if (nullable.has(e.instancePath) && (e.keyword === 'anyOf' || (e.keyword === 'type' && (e.params as { type: unknown }).type === 'null'))) continue;
    if (conditional(e) || insideComposite(e)) {
      if (e.keyword === 'if' || e.keyword === 'oneOf' || e.keyword === 'anyOf') unmatched.push({ field: fieldOf(e.instancePath), message: 'matches none of the forms this member may take' });
      continue;
    }
    schemaErrors.push(problemOf(e));
  }
  const object = typeof body === 'object' && body !== null && !Array.isArray(body);
  return new BodyCheck<T>((object ? body : {}) as T, schemaErrors, unmatched);
}

const memberValidators = new WeakMap<object, ValidateFunction>();

/**
 * The problems of one member of a body against a schema of its own (a destination type's
 * config), named as the body's problems are (`config.topic`).
 */
export function memberProblems(schema: Record<string, unknown>, value: unknown, member: string): FieldError[] {
  let validate = memberValidators.get(schema);
  if (!validate) {
    const ajv = new Ajv2020({ strict: false, allErrors: true, verbose: true });
    addFormats(ajv);
    validate = ajv.compile(schema);
    memberValidators.set(schema, validate);
  }
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => problemOf({ ...e, instancePath: `/${member}${e.instancePath}` }));
}
