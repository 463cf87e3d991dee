import fc from 'fast-check';
import { MAX_RULES, parseFilters, type FilterLimits, type FilterRule } from '../../core/filters';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { evaluateFilters, globMatch, type FilterInput } from '../../pipeline/filter/evaluate';
import { jsonDepthExceeds } from '../../pipeline/filter/json-depth';

function event(over: Partial<FilterInput> & { json?: unknown } = {}): FilterInput {
  const { json, ...rest } = over;
  return { event_type: null, headers: [], body: Buffer.from(json === undefined ? '{}' : JSON.stringify(json)), ...rest };
}

/** Parses (asserting the rules are valid) and evaluates, so every case also checks the parser. */
function run(rules: unknown[], input: FilterInput, limits?: FilterLimits): ReturnType<typeof evaluateFilters> {
  const { filters, errors, refused } = parseFilters(rules);
  expect([...errors, ...refused]).toEqual([]);
  return evaluateFilters(filters, input, limits);
}

const passes = (rule: unknown, input: FilterInput): boolean => run([rule], input).pass;

function reason(rules: unknown[], input: FilterInput): string {
  const r = run(rules, input);
  if (r.pass || 'unevaluable' in r) throw new Error('expected the filters to fail');
  return r.reason;
}

describe('event_type rules', () => {
  const charge = event({ event_type: 'charge.failed' });

  it('in / not_in', () => {
    expect(passes({ type: 'event_type', op: 'in', values: ['charge.failed', 'x'] }, charge)).toBe(true);
    expect(reason([{ type: 'event_type', op: 'in', values: ['charge.succeeded'] }], charge)).toBe('event type "charge.failed" is not in [charge.succeeded]');
    expect(passes({ type: 'event_type', op: 'not_in', values: ['charge.succeeded'] }, charge)).toBe(true);
    expect(reason([{ type: 'event_type', op: 'not_in', values: ['charge.failed'] }], charge)).toBe('event type "charge.failed" is in [charge.failed]');
  });

  it('prefix and glob, where * spans dots and the rest is literal', () => {
    expect(passes({ type: 'event_type', op: 'prefix', value: 'charge.' }, charge)).toBe(true);
    expect(reason([{ type: 'event_type', op: 'prefix', value: 'invoice.' }], charge)).toBe('event type "charge.failed" does not start with "invoice."');
    expect(passes({ type: 'event_type', op: 'glob', value: 'customer.*' }, event({ event_type: 'customer.subscription.updated' }))).toBe(true);
    expect(passes({ type: 'event_type', op: 'glob', value: '*.failed' }, charge)).toBe(true);
    expect(passes({ type: 'event_type', op: 'glob', value: 'customer.*' }, event({ event_type: 'customer' }))).toBe(false);
    expect(passes({ type: 'event_type', op: 'glob', value: 'charge?failed' }, charge)).toBe(false);
    expect(reason([{ type: 'event_type', op: 'glob', value: 'a*' }], charge)).toBe('event type "charge.failed" does not match "a*"');
  });

  it('without an event type, only not_in passes', () => {
    const none = event();
    expect(reason([{ type: 'event_type', op: 'in', values: ['a'] }], none)).toBe('event type is not set');
    expect(passes({ type: 'event_type', op: 'prefix', value: 'a' }, none)).toBe(false);
    expect(passes({ type: 'event_type', op: 'glob', value: '*' }, none)).toBe(false);
    expect(passes({ type: 'event_type', op: 'not_in', values: ['a'] }, none)).toBe(true);
  });

  it('in and not_in are complements', () => {
    const types = fc.constantFrom('a', 'b', 'a.b', 'c.d.e', 'A');
    fc.assert(
      fc.property(fc.option(types, { nil: null }), fc.uniqueArray(types, { minLength: 1 }), (event_type, values) => {
        const e = event({ event_type });
        expect(passes({ type: 'event_type', op: 'in', values }, e)).toBe(!passes({ type: 'event_type', op: 'not_in', values }, e));
      }),
    );
  });

  it('glob agrees with an equivalent regular expression', () => {
    const chars = fc.constantFrom('a', 'b', '.', '*');
    fc.assert(
      fc.property(fc.string({ unit: chars, maxLength: 8 }), fc.string({ unit: fc.constantFrom('a', 'b', '.', '*'), maxLength: 10 }), (glob, text) => {
        const re = new RegExp(`^${glob.split('*').map((s) => s.replace(/\./g, '\\.')).join('.*')}$`, 's');
        expect(globMatch(glob, text)).toBe(re.test(text));
      }),
    );
  });
});

describe('header rules', () => {
  const h = (...pairs: [string, string][]): FilterInput => event({ headers: pairs.map(([name, value]) => ({ name, value })) });
  const prod = h(['x-env', 'prod-eu']);

  it('value ops, case-sensitive values', () => {
    const rule = (op: string, value: string): unknown => ({ type: 'header', name: 'X-Env', op, value });
    expect(passes(rule('equals', 'prod-eu'), prod)).toBe(true);
    expect(passes(rule('equals', 'PROD-EU'), prod)).toBe(false);
    expect(reason([rule('equals', 'prod')], prod)).toBe('header x-env "prod-eu" does not equal "prod"');
    expect(passes(rule('not_equals', 'prod'), prod)).toBe(true);
    expect(reason([rule('not_equals', 'prod-eu')], prod)).toBe('header x-env equals "prod-eu"');
    expect(passes(rule('prefix', 'prod'), prod)).toBe(true);
    expect(passes(rule('prefix', 'eu'), prod)).toBe(false);
    expect(passes(rule('suffix', '-eu'), prod)).toBe(true);
    expect(reason([rule('suffix', '-us')], prod)).toBe('header x-env "prod-eu" does not end with "-us"');
    expect(passes(rule('contains', 'd-e'), prod)).toBe(true);
    expect(passes(rule('contains', 'x'), prod)).toBe(false);
  });

  it('exists, not_exists, in and matches', () => {
    expect(passes({ type: 'header', name: 'x-env', op: 'exists' }, prod)).toBe(true);
    expect(reason([{ type: 'header', name: 'x-env', op: 'exists' }], h())).toBe('header x-env is missing');
    expect(passes({ type: 'header', name: 'x-env', op: 'not_exists' }, h())).toBe(true);
    expect(reason([{ type: 'header', name: 'X-ENV', op: 'not_exists' }], prod)).toBe('header x-env is present');
    expect(passes({ type: 'header', name: 'x-env', op: 'in', values: ['dev', 'prod-eu'] }, prod)).toBe(true);
    expect(reason([{ type: 'header', name: 'x-env', op: 'in', values: ['dev', 'prod'] }], prod)).toBe('header x-env "prod-eu" is not in [dev, prod]');
    expect(passes({ type: 'header', name: 'x-env', op: 'matches', pattern: '^prod-(eu|us)$' }, prod)).toBe(true);
    expect(reason([{ type: 'header', name: 'x-env', op: 'matches', pattern: '^dev' }], prod)).toBe('header x-env "prod-eu" does not match /^dev/');
  });

  it('positive ops fail on a missing header, not_equals passes', () => {
    for (const op of ['equals', 'prefix', 'suffix', 'contains']) expect(reason([{ type: 'header', name: 'x-env', op, value: 'p' }], h())).toBe('header x-env is missing');
    expect(passes({ type: 'header', name: 'x-env', op: 'in', values: ['p'] }, h())).toBe(false);
    expect(passes({ type: 'header', name: 'x-env', op: 'matches', pattern: '.*' }, h())).toBe(false);
    expect(passes({ type: 'header', name: 'x-env', op: 'not_equals', value: 'p' }, h())).toBe(true);
  });

  it('repeated headers: positive ops pass on any value, not_equals only if none equals', () => {
    const twice = h(['x-env', 'dev'], ['x-other', 'prod'], ['x-env', 'prod']);
    expect(passes({ type: 'header', name: 'x-env', op: 'equals', value: 'prod' }, twice)).toBe(true);
    expect(passes({ type: 'header', name: 'x-env', op: 'equals', value: 'dev' }, twice)).toBe(true);
    expect(passes({ type: 'header', name: 'x-env', op: 'not_equals', value: 'dev' }, twice)).toBe(false);
    expect(passes({ type: 'header', name: 'x-env', op: 'not_equals', value: 'staging' }, twice)).toBe(true);
    expect(passes({ type: 'header', name: 'x-env', op: 'suffix', value: 'od' }, twice)).toBe(true);
    expect(passes({ type: 'header', name: 'x-env', op: 'matches', pattern: '^d' }, twice)).toBe(true);
    expect(reason([{ type: 'header', name: 'x-env', op: 'equals', value: 'qa' }], twice)).toBe('header x-env "dev", "prod" does not equal "qa"');
  });

  it('names are case-insensitive on both sides', () => {
    fc.assert(
      fc.property(fc.constantFrom('x-env', 'X-Env', 'X-ENV', 'x-EnV'), fc.constantFrom('x-env', 'X-Env', 'X-ENV'), (ruleName, sentName) => {
        expect(passes({ type: 'header', name: ruleName, op: 'equals', value: 'v' }, h([sentName, 'v']))).toBe(true);
      }),
    );
  });

  it('equals and not_equals are complements on a single header', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom('a', 'b', 'c'), { maxLength: 1 }), fc.constantFrom('a', 'b'), (sent, value) => {
        const e = h(...sent.map((v): [string, string] => ['x-k', v]));
        expect(passes({ type: 'header', name: 'x-k', op: 'equals', value }, e)).toBe(!passes({ type: 'header', name: 'x-k', op: 'not_equals', value }, e));
      }),
    );
  });
});

describe('matches on RE2 semantics', () => {
  const h = (value: string): FilterInput => event({ headers: [{ name: 'x-v', value }] });
  const matches = (pattern: string, value: string) => passes({ type: 'header', name: 'x-v', op: 'matches', pattern }, h(value));

  it('searches anywhere unless anchored, with RE2 classes and flags', () => {
    expect(matches('prod', 'eu-prod-1')).toBe(true);
    expect(matches('^prod$', 'eu-prod-1')).toBe(false);
    expect(matches('^\\d+$', '123')).toBe(true);
    expect(matches('(?i)^PROD$', 'prod')).toBe(true);
    expect(matches('^[[:upper:]]+$', 'ABC')).toBe(true);
    expect(matches('^\\p{Greek}+$', 'αβγ')).toBe(true);
    expect(matches('^(?P<v>v)\\d$', 'v1')).toBe(true);
    // \d is ASCII in RE2, where JavaScript's u-less \d is too; \s does not include a no-break space
    expect(matches('^\\d$', '٣')).toBe(false);
    expect(matches('\\s', '\u00a0')).toBe(false);
  });

  it('answers the patterns that backtrack exponentially in V8 at once', () => {
    const cases: [string, string][] = [['^(a|a)*$', `${'a'.repeat(8000)}!`], ['(a+)+$', `${'a'.repeat(8000)}!`], ['(x+x+)+y', 'x'.repeat(8000)], ['^(([a-z])+.)+[A-Z]([a-z])+$', `${'a'.repeat(8000)}!`]];
    for (const [pattern, value] of cases) {
      const started = performance.now();
      expect(matches(pattern, value)).toBe(false);
      // V8 needs longer than the age of the universe here; the bound only catches a regression to backtracking
      expect(performance.now() - started).toBeLessThan(2_000);
    }
    expect(matches('^(a|a)*$', 'aaaa')).toBe(true);
    expect(matches('(x+x+)+y', 'xxxy')).toBe(true);
  });

  it('cannot be written to a V8 RegExp in any way', () => {
    const source = readFileSync(path.join(__dirname, '../../pipeline/filter/evaluate.ts'), 'utf8') + readFileSync(path.join(__dirname, '../../core/filters.ts'), 'utf8');
    expect(source).not.toMatch(/new RegExp|RegExp\(/);
  });
});

describe('limits: what the filters read of an event', () => {
  const limits: FilterLimits = { maxBodyBytes: 100, maxJsonDepth: 3, maxHeaderBytes: 10 };
  const bodyRule = { type: 'body', path: 'a', op: 'exists' };
  const unevaluable = (rules: unknown[], input: FilterInput) => {
    const r = run(rules, input, limits);
    if (!('unevaluable' in r)) throw new Error(`expected the event to be unevaluable, got ${JSON.stringify(r)}`);
    return r;
  };

  it('a body rule does not read a body larger than the bound, nor one nested deeper', () => {
    expect(unevaluable([bodyRule], event({ body: Buffer.from(`{"a":"${'x'.repeat(100)}"}`) }))).toEqual({
      pass: false, unevaluable: true, rule_index: 0, rule: bodyRule, reason: 'body is 108 bytes, more than the 100 a body rule reads (FILTER_MAX_BODY_BYTES)',
    });
    expect(unevaluable([bodyRule], event({ json: { a: [[[1]]] } })).reason).toBe('body nests arrays and objects more than 3 levels deep, the most a body rule reads (FILTER_MAX_JSON_DEPTH)');
    expect(run([bodyRule], event({ json: { a: [[1]] } }), limits)).toEqual({ pass: true });
    expect(run([bodyRule], event({ json: { a: '[[[[[[' } }), limits)).toEqual({ pass: true });
  });

  it('only a rule that reads the body meets its bounds, in rule order', () => {
    const big = event({ event_type: 'x', body: Buffer.from(`[${'['.repeat(50)}`) });
    expect(run([{ type: 'event_type', op: 'in', values: ['x'] }], big, limits)).toEqual({ pass: true });
    expect(run([{ type: 'event_type', op: 'in', values: ['y'] }, bodyRule], big, limits)).toMatchObject({ pass: false, rule_index: 0, reason: 'event type "x" is not in [y]' });
    expect(run([{ type: 'any', rules: [{ type: 'event_type', op: 'in', values: ['x'] }, bodyRule] }], big, limits)).toEqual({ pass: true });
    expect(unevaluable([{ type: 'event_type', op: 'in', values: ['x'] }, { type: 'any', rules: [{ type: 'event_type', op: 'in', values: ['y'] }, bodyRule] }], big).rule_index).toBe(1);
  });

  it('a matches rule does not read a header longer than the bound, all its values together', () => {
    const matchesRule = { type: 'header', name: 'X-V', op: 'matches', pattern: '^a' };
    const twice = event({ headers: [{ name: 'x-v', value: 'a'.repeat(6) }, { name: 'x-v', value: 'b'.repeat(5) }] });
    expect(unevaluable([matchesRule], twice).reason).toBe('header x-v carries 11 bytes, more than the 10 a matches rule reads (FILTER_MAX_HEADER_BYTES)');
    expect(run([matchesRule], event({ headers: [{ name: 'x-v', value: 'a'.repeat(10) }] }), limits)).toEqual({ pass: true });
    // plain comparisons cost no more than reading the value, and are not bounded
    expect(run([{ type: 'header', name: 'x-v', op: 'prefix', value: 'a' }], twice, limits)).toEqual({ pass: true });
  });

  it('defaults: 256 KiB of body, 32 levels, 8 KiB of header', () => {
    const deep = (n: number) => Buffer.from(`${'['.repeat(n)}${']'.repeat(n)}`);
    expect(evaluateFilters([{ type: 'body', path: 'x', op: 'not_exists' }], event({ body: deep(32) }))).toEqual({ pass: true });
    expect(evaluateFilters([{ type: 'body', path: 'x', op: 'not_exists' }], event({ body: deep(33) }))).toMatchObject({ unevaluable: true });
    const header = (value: string) => event({ headers: [{ name: 'x-v', value }] });
    expect(evaluateFilters([{ type: 'header', name: 'x-v', op: 'matches', pattern: 'a$' }], header('a'.repeat(8_192)))).toEqual({ pass: true });
    expect(evaluateFilters([{ type: 'header', name: 'x-v', op: 'matches', pattern: 'a$' }], header('a'.repeat(8_193)))).toMatchObject({ unevaluable: true });
    expect(evaluateFilters([{ type: 'body', path: 'a', op: 'exists' }], event({ body: Buffer.from(`{"a":"${'x'.repeat(262_137)}"}`) }))).toMatchObject({ unevaluable: true });
    expect(evaluateFilters([{ type: 'body', path: 'a', op: 'exists' }], event({ body: Buffer.from(`{"a":"${'x'.repeat(262_136)}"}`) }))).toEqual({ pass: true });
  });
});

describe('jsonDepthExceeds', () => {
  /** The nesting depth by the book, recursively, on parsed values (small ones only). */
  const depthOf = (v: unknown): number => (typeof v === 'object' && v !== null ? 1 + Math.max(0, ...Object.values(v).map(depthOf)) : 0);

  it('agrees with the depth of the parsed value, whitespace, strings and escapes included', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 9 }), fc.boolean(), (value, max, pretty) => {
        const text = JSON.stringify(value, null, pretty ? 2 : undefined);
        expect(jsonDepthExceeds(Buffer.from(text), max)).toBe(depthOf(value) > max);
      }),
    );
  });

  it('ignores brackets in strings and after escaped quotes, and text that is not JSON', () => {
    expect(jsonDepthExceeds(Buffer.from('["[[[[", "\\"[[[["]'), 1)).toBe(false);
    expect(jsonDepthExceeds(Buffer.from('\uFEFF  [[[]]]'), 2)).toBe(true);
    expect(jsonDepthExceeds(Buffer.from('a=[[[[[[[[[['), 2)).toBe(false);
    expect(jsonDepthExceeds(Buffer.from('"[[[[[["'), 2)).toBe(false);
    expect(jsonDepthExceeds(Buffer.alloc(0), 0)).toBe(false);
  });

  it('reads a million open brackets without recursion', () => {
    expect(jsonDepthExceeds(Buffer.from('['.repeat(1_000_000)), 32)).toBe(true);
  });
});

describe('body rules', () => {
  const stripe = event({ json: { type: 'charge.succeeded', data: { object: { currency: 'usd', amount: 1, live: false, refunds: [{ id: 're_1' }], note: null } } } });

  it('equals, not_equals, in, exists, not_exists along a dotted path', () => {
    expect(passes({ type: 'body', path: 'data.object.currency', op: 'equals', value: 'usd' }, stripe)).toBe(true);
    expect(reason([{ type: 'body', path: 'data.object.currency', op: 'equals', value: 'eur' }], stripe)).toBe('body data.object.currency is "usd", not "eur"');
    expect(passes({ type: 'body', path: 'data.object.currency', op: 'not_equals', value: 'eur' }, stripe)).toBe(true);
    expect(reason([{ type: 'body', path: 'data.object.currency', op: 'not_equals', value: 'usd' }], stripe)).toBe('body data.object.currency is "usd"');
    expect(passes({ type: 'body', path: 'data.object.currency', op: 'in', values: ['eur', 'usd'] }, stripe)).toBe(true);
    expect(reason([{ type: 'body', path: 'data.object.currency', op: 'in', values: ['eur', 1] }], stripe)).toBe('body data.object.currency is "usd", not in ["eur", 1]');
    expect(passes({ type: 'body', path: 'data.object.live', op: 'equals', value: false }, stripe)).toBe(true);
    expect(passes({ type: 'body', path: 'data.object.note', op: 'exists' }, stripe)).toBe(true);
    expect(passes({ type: 'body', path: 'data.object.note', op: 'equals', value: null }, stripe)).toBe(true);
    expect(reason([{ type: 'body', path: 'data.object.missing', op: 'exists' }], stripe)).toBe('body data.object.missing is missing');
    expect(passes({ type: 'body', path: 'data.object.missing', op: 'not_exists' }, stripe)).toBe(true);
    expect(passes({ type: 'body', path: 'data.object.missing', op: 'not_equals', value: 'x' }, stripe)).toBe(true);
    expect(reason([{ type: 'body', path: 'data', op: 'not_exists' }], stripe)).toBe('body data is present');
    expect(reason([{ type: 'body', path: 'data.object', op: 'equals', value: 'x' }], stripe)).toBe('body data.object is an object, not "x"');
  });

  it('numeric segments index arrays, and are keys on objects', () => {
    expect(passes({ type: 'body', path: 'data.object.refunds.0.id', op: 'equals', value: 're_1' }, stripe)).toBe(true);
    expect(passes({ type: 'body', path: 'data.object.refunds.1', op: 'exists' }, stripe)).toBe(false);
    expect(passes({ type: 'body', path: 'data.object.refunds.id', op: 'exists' }, stripe)).toBe(false);
    expect(passes({ type: 'body', path: '0', op: 'equals', value: 'a' }, event({ json: ['a'] }))).toBe(true);
    expect(passes({ type: 'body', path: '0', op: 'equals', value: 'a' }, event({ json: { '0': 'a' } }))).toBe(true);
    expect(passes({ type: 'body', path: 'a.01', op: 'exists' }, event({ json: { a: [1, 2] } }))).toBe(false);
  });

  it('does not reach inherited properties', () => {
    expect(passes({ type: 'body', path: 'a.constructor', op: 'exists' }, event({ json: { a: {} } }))).toBe(false);
    expect(passes({ type: 'body', path: 'a.length', op: 'exists' }, event({ json: { a: 'abc' } }))).toBe(false);
  });

  it('compares JSON scalars strictly', () => {
    const body = event({ json: { n: 1, s: '1', b: true, z: null } });
    expect(passes({ type: 'body', path: 'n', op: 'equals', value: '1' }, body)).toBe(false);
    expect(passes({ type: 'body', path: 's', op: 'equals', value: 1 }, body)).toBe(false);
    expect(reason([{ type: 'body', path: 's', op: 'equals', value: 1 }], body)).toBe('body s is "1", not 1');
    expect(passes({ type: 'body', path: 'b', op: 'equals', value: 'true' }, body)).toBe(false);
    expect(passes({ type: 'body', path: 'z', op: 'equals', value: 'null' }, body)).toBe(false);
    expect(passes({ type: 'body', path: 'n', op: 'in', values: ['1', true] }, body)).toBe(false);
    expect(passes({ type: 'body', path: 'n', op: 'equals', value: 1.0 }, body)).toBe(true);
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 5 }), fc.integer(), fc.boolean(), fc.constant(null)), fc.oneof(fc.string({ maxLength: 5 }), fc.integer(), fc.boolean(), fc.constant(null)), (sent, value) => {
        const e = event({ json: { v: sent } });
        expect(passes({ type: 'body', path: 'v', op: 'equals', value }, e)).toBe(sent === value);
        expect(passes({ type: 'body', path: 'v', op: 'not_equals', value }, e)).toBe(sent !== value);
      }),
    );
  });

  it('fail every body rule, negative ones included, when the body is not JSON', () => {
    const text = event({ body: Buffer.from('payload=a&b=c') });
    for (const op of ['exists', 'not_exists']) expect(reason([{ type: 'body', path: 'a', op }], text)).toBe('body is not JSON, so body.a cannot be tested');
    expect(passes({ type: 'body', path: 'a', op: 'not_equals', value: 1 }, text)).toBe(false);
    expect(passes({ type: 'body', path: 'a', op: 'exists' }, event({ body: Buffer.alloc(0) }))).toBe(false);
    // Other rules still see the event.
    expect(run([{ type: 'event_type', op: 'in', values: ['x'] }], { ...text, event_type: 'x' }).pass).toBe(true);
  });

  it('accepts a UTF-8 byte order mark in front of JSON', () => {
    expect(passes({ type: 'body', path: 'a', op: 'equals', value: 1 }, event({ body: Buffer.from('\uFEFF{"a":1}') }))).toBe(true);
  });

  it('decodes the body lazily and at most once', () => {
    const body = event({ json: { a: 1, b: 2 }, event_type: 'x' });
    const decode = jest.spyOn(body.body, 'toString');
    run([{ type: 'event_type', op: 'in', values: ['x'] }, { type: 'header', name: 'x', op: 'not_exists' }], body);
    expect(decode).not.toHaveBeenCalled();
    run([{ type: 'body', path: 'a', op: 'equals', value: 1 }, { type: 'any', rules: [{ type: 'body', path: 'b', op: 'equals', value: 3 }, { type: 'body', path: 'a', op: 'exists' }] }], body);
    expect(decode).toHaveBeenCalledTimes(1);
  });
});

describe('lists and any', () => {
  const e = event({ event_type: 'order.paid', headers: [{ name: 'x-shop', value: 'one' }] });
  const ok: unknown = { type: 'event_type', op: 'prefix', value: 'order.' };
  const bad: unknown = { type: 'header', name: 'x-shop', op: 'equals', value: 'two' };

  it('a list passes only when every rule passes, and reports the first failure', () => {
    expect(run([ok, ok], e)).toEqual({ pass: true });
    const r = run([ok, bad, { type: 'header', name: 'x-none', op: 'exists' }], e);
    expect(r).toEqual({ pass: false, rule_index: 1, rule: bad, reason: 'header x-shop "one" does not equal "two"' });
  });

  it('an empty list passes everything', () => {
    fc.assert(
      fc.property(fc.option(fc.string(), { nil: null }), fc.array(fc.record({ name: fc.string(), value: fc.string() })), fc.uint8Array(), (event_type, headers, body) => {
        expect(evaluateFilters([], { event_type, headers, body: Buffer.from(body) })).toEqual({ pass: true });
      }),
    );
  });

  it('a list is the AND of its rules', () => {
    const rules = [ok, bad, { type: 'header', name: 'x-shop', op: 'exists' }, { type: 'event_type', op: 'in', values: ['x'] }];
    fc.assert(
      fc.property(fc.subarray(rules), (subset) => {
        expect(run(subset, e).pass).toBe(subset.every((r) => run([r], e).pass));
      }),
    );
  });

  it('any passes when one of its rules passes and reports all reasons otherwise', () => {
    expect(passes({ type: 'any', rules: [bad, ok] }, e)).toBe(true);
    expect(reason([{ type: 'any', rules: [bad, { type: 'event_type', op: 'in', values: ['x'] }] }], e)).toBe(
      'none of 2 alternatives passed: header x-shop "one" does not equal "two"; event type "order.paid" is not in [x]',
    );
    expect(passes({ type: 'any', rules: [bad, { type: 'any', rules: [bad, ok] }] }, e)).toBe(true);
  });

  it('cuts long values in reasons', () => {
    const long = 'v'.repeat(500);
    const r = reason([{ type: 'header', name: 'x-k', op: 'equals', value: 'a' }], event({ headers: [{ name: 'x-k', value: long }] }));
    expect(r.length).toBeLessThan(150);
  });
});

describe('parseFilters', () => {
  const errorsOf = (input: unknown) => parseFilters(input).errors;

  it('accepts every rule shape and returns it unchanged', () => {
    const rules: FilterRule[] = [
      { type: 'event_type', op: 'in', values: ['a'] },
      { type: 'event_type', op: 'not_in', values: ['a'] },
      { type: 'event_type', op: 'prefix', value: 'a.' },
      { type: 'event_type', op: 'glob', value: 'a.*' },
      ...(['equals', 'not_equals', 'prefix', 'suffix', 'contains'] as const).map((op): FilterRule => ({ type: 'header', name: 'X-A', op, value: 'v' })),
      { type: 'header', name: 'x-a', op: 'equals', value: '' },
      { type: 'header', name: 'x-a', op: 'exists' },
      { type: 'header', name: 'x-a', op: 'not_exists' },
      { type: 'header', name: 'x-a', op: 'in', values: ['a', ''] },
      { type: 'header', name: 'x-a', op: 'matches', pattern: '^(?:prod|staging)-\\d+$' },
      { type: 'body', path: 'a.0.b', op: 'equals', value: null },
      { type: 'body', path: 'a', op: 'not_equals', value: 1.5 },
      { type: 'body', path: 'a', op: 'in', values: ['1', 1, true, null] },
      { type: 'body', path: 'a', op: 'exists' },
      { type: 'body', path: 'a', op: 'not_exists' },
      { type: 'any', rules: [{ type: 'any', rules: [{ type: 'body', path: 'a', op: 'exists' }] }] },
    ];
    expect(parseFilters(JSON.parse(JSON.stringify(rules)))).toEqual({ filters: rules, errors: [], refused: [] });
    expect(parseFilters(undefined)).toEqual({ filters: [], errors: [], refused: [] });
    expect(parseFilters([])).toEqual({ filters: [], errors: [], refused: [] });
  });

  it('reports every problem with its field path and keeps no rule', () => {
    const result = parseFilters([
      { type: 'event_type', op: 'in', values: ['a'] },
      'rule',
      { type: 'event_type', op: 'equals', value: 'a' },
      { type: 'header', name: 'bad name', op: 'equals' },
      { type: 'body', path: 'a..b', op: 'in', values: [1, { x: 1 }, [2]] },
      { type: 'nope' },
      { type: 'event_type', op: 'in', value: 'a' },
    ]);
    expect(result.filters).toEqual([]);
    expect(result.errors.map((e) => e.field)).toEqual([
      'filters[1]',
      'filters[2].op',
      'filters[3].name',
      'filters[3].value',
      'filters[4].path',
      'filters[4].values[1]',
      'filters[4].values[2]',
      'filters[5].type',
      'filters[6].value',
      'filters[6].values',
    ]);
    expect(result.errors[2]).toEqual({ field: 'filters[3].name', message: 'must be a valid HTTP header name' });
  });

  it('refuses what is not a list, and too many rules', () => {
    expect(errorsOf({})).toEqual([{ field: 'filters', message: 'must be an array of rules' }]);
    expect(errorsOf(null)).toEqual([{ field: 'filters', message: 'must be an array of rules' }]);
    const rule = { type: 'header', name: 'a', op: 'exists' };
    expect(errorsOf(Array.from({ length: MAX_RULES }, () => rule))).toEqual([]);
    expect(errorsOf(Array.from({ length: MAX_RULES + 1 }, () => rule))).toEqual([{ field: 'filters', message: 'must hold at most 50 rules, got 51' }]);
    // Nested rules count too.
    const wide = { type: 'any', rules: Array.from({ length: 30 }, () => rule) };
    expect(errorsOf([wide])).toEqual([]);
    expect(errorsOf([wide, wide])).toEqual([{ field: 'filters', message: 'must hold at most 50 rules including nested ones, got 62' }]);
  });

  it('limits nesting to three levels', () => {
    const leaf = { type: 'header', name: 'a', op: 'exists' };
    expect(errorsOf([{ type: 'any', rules: [{ type: 'any', rules: [leaf] }] }])).toEqual([]);
    expect(errorsOf([leaf, { type: 'any', rules: [{ type: 'any', rules: [{ type: 'any', rules: [leaf] }] }] }])).toEqual([
      { field: 'filters[1].rules[0].rules[0].rules', message: 'rules may nest at most 3 levels deep' },
    ]);
  });

  it('checks the members each op needs', () => {
    expect(errorsOf([{ type: 'event_type', op: 'in', values: [] }])).toEqual([{ field: 'filters[0].values', message: 'must hold at least one item' }]);
    expect(errorsOf([{ type: 'event_type', op: 'in', values: [1] }]).map((e) => e.field)).toEqual(['filters[0].values[0]']);
    expect(errorsOf([{ type: 'event_type', op: 'prefix', value: '' }]).map((e) => e.field)).toEqual(['filters[0].value']);
    expect(errorsOf([{ type: 'event_type', op: 'glob' }]).map((e) => e.field)).toEqual(['filters[0].value']);
    expect(errorsOf([{ type: 'header', name: 'a', op: 'prefix', value: '' }]).map((e) => e.field)).toEqual(['filters[0].value']);
    expect(errorsOf([{ type: 'header', name: 'a', op: 'exists', value: 'x' }])).toEqual([{ field: 'filters[0].value', message: 'is not allowed with type header and op exists' }]);
    expect(errorsOf([{ type: 'header', op: 'exists' }]).map((e) => e.field)).toEqual(['filters[0].name']);
    expect(errorsOf([{ type: 'header', name: 'a', op: 'between' }]).map((e) => e.field)).toEqual(['filters[0].op']);
    expect(errorsOf([{ type: 'body', path: 'a', op: 'equals' }])).toEqual([{ field: 'filters[0].value', message: 'is required' }]);
    expect(errorsOf([{ type: 'body', path: 'a', op: 'prefix', value: 'x' }]).map((e) => e.field)).toEqual(['filters[0].op']);
    expect(errorsOf([{ type: 'body', path: '', op: 'exists' }]).map((e) => e.field)).toEqual(['filters[0].path']);
    expect(errorsOf([{ type: 'any', rules: [] }]).map((e) => e.field)).toEqual(['filters[0].rules']);
    expect(errorsOf([{ type: 'any', rules: [{ type: 'body', path: 'a', op: 'in', values: 'x' }] }]).map((e) => e.field)).toEqual(['filters[0].rules[0].values']);
  });

  it('checks the pattern member as a string within its length (400)', () => {
    const m = (pattern: unknown) => errorsOf([{ type: 'header', name: 'a', op: 'matches', pattern }]);
    expect(m('^ok$')).toEqual([]);
    expect(m('a'.repeat(256))).toEqual([]);
    expect(m('a'.repeat(257))).toEqual([{ field: 'filters[0].pattern', message: 'must be at most 256 characters' }]);
    expect(m('')).toEqual([{ field: 'filters[0].pattern', message: 'must not be empty' }]);
    expect(m(7)).toEqual([{ field: 'filters[0].pattern', message: 'is required and must be a string' }]);
  });

  it('refuses what RE2 cannot compile apart from malformed input (422), naming the field', () => {
    const refused = (pattern: string) => parseFilters([{ type: 'header', name: 'a', op: 'exists' }, { type: 'any', rules: [{ type: 'header', name: 'a', op: 'matches', pattern }] }]);
    for (const p of ['(a)\\1', '(?=x)', '(?!x)y', '(?<=x)y', '(?<!x)', 'a*+', 'a++', '\\k<n>', '[a-z', '(', 'a{1001}', '\\Z', '\\u0041']) {
      const r = refused(p);
      expect(r.filters).toEqual([]);
      expect(r.errors).toEqual([]);
      expect(r.refused).toEqual([{ field: 'filters[1].rules[0].pattern', message: expect.stringMatching(/^is not a valid RE2 regular expression: /) }]);
    }
    expect(refused('(?=x)').refused[0]!.message).toBe('is not a valid RE2 regular expression: invalid or unsupported Perl syntax `(?=` (RE2 has no backreferences, lookaround or possessive quantifiers)');
    expect(refused('[a-z').refused[0]!.message).toBe('is not a valid RE2 regular expression: missing closing ] `[a-z`');
    // malformed members are reported as such, and a refused pattern beside them waits for them
    const both = parseFilters([{ type: 'header', name: 'a', op: 'matches', pattern: '(?=x)' }, { type: 'header', name: 'a', op: 'between' }]);
    expect(both.errors.map((e) => e.field)).toEqual(['filters[1].op']);
    expect(both.refused.map((e) => e.field)).toEqual(['filters[0].pattern']);
  });

  it('accepts nested quantifiers, which RE2 runs in linear time', () => {
    for (const p of ['^(a|a)*$', '(a+)+$', '(x+x+)+y', '^(([a-z])+.)+[A-Z]([a-z])+$', '(a*)*b', '(?:x\\d+)*', '(?<n>a+)+', '(?P<n>a)', '(?i)^prod$', '\\p{Greek}+', '[[:alpha:]]+', '\\x{41}']) {
      expect(parseFilters([{ type: 'header', name: 'a', op: 'matches', pattern: p }])).toMatchObject({ errors: [], refused: [] });
    }
  });

  it('bounds the compiled size of a pattern and of all patterns together', () => {
    const rule = (pattern: string) => ({ type: 'header', name: 'a', op: 'matches', pattern });
    expect(parseFilters([rule('^[0-9a-f]{64}$')]).refused).toEqual([]);
    expect(parseFilters([rule('[0-9a-f]{300}')]).refused).toEqual([{ field: 'filters[0].pattern', message: expect.stringMatching(/^compiles to \d+ RE2 instructions, more than 200;/) }]);
    // five patterns of ~150 instructions each pass one by one, not together
    const big = (i: number) => rule(`^${String.fromCharCode(97 + i)}[0-9]{148}$`);
    expect(parseFilters([big(0), big(1), big(2)]).refused).toEqual([]);
    expect(parseFilters([big(0), big(1), big(2), { type: 'any', rules: [big(3)] }]).refused).toEqual([{ field: 'filters', message: expect.stringMatching(/^patterns compile to \d+ RE2 instructions together, more than 500$/) }]);
  });

  it('never throws, whatever the input', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (input) => {
        const { filters, errors, refused } = parseFilters(input);
        expect(filters.length === 0 || errors.length + refused.length === 0).toBe(true);
        expect(() => evaluateFilters(filters, event({ event_type: 'x' }))).not.toThrow();
      }),
    );
    fc.assert(
      fc.property(fc.array(fc.record({ type: fc.constantFrom('event_type', 'header', 'body', 'any'), op: fc.string(), value: fc.jsonValue(), values: fc.jsonValue(), name: fc.string(), path: fc.string(), rules: fc.jsonValue() }, { requiredKeys: ['type'] })), (input) => {
        const { errors, refused } = parseFilters(input);
        for (const e of [...errors, ...refused]) expect(e.field).toMatch(/^filters(\[\d+\])?/);
      }),
    );
  });
});
