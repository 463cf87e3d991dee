import { MAX_TOTAL_PROGRAM_SIZE, parseFilters } from '../../core/filters';
import type { Destination } from '../../core/model';
import { eventTypesProblems, subscribesTo } from '../../core/subscriptions';
import { evaluateFilters, filterContext, type FilterInput } from '../../pipeline/filter/evaluate';
import { subscribed } from '../../pipeline/route/subscriptions';
import { routeStage } from '../../pipeline/route/stage';
import { checkWrites, type StageContext } from '../../pipeline/runtime/stage';
import { topicNames } from '../../core/topics';
import type { DeliveryFlow } from '../../core/model';
import type { DeliveryTask, WebhookEvent } from '../../platform/avro/records';
import { Logger } from '../../core/log';

const now = new Date(0).toISOString();
function destination(over: Partial<Destination> = {}): Destination {
  return { kind: 'destination', id: 'dst_a', tenant_id: 't', name: 'a', url: 'http://127.0.0.1:9/x', status: 'active', signing_secret: 'whsec_AAAA', disabled_reason: null, created_at: now, updated_at: now, ...over };
}
function event(json: unknown, eventType: string | null = null): FilterInput {
  return { event_type: eventType, headers: [], body: Buffer.from(typeof json === 'string' ? json : JSON.stringify(json)) };
}

describe('event type subscriptions', () => {
  it.each([
    [null, 'invoice.paid', true],
    [undefined, null, true],
    [[], 'invoice.paid', false],
    [['invoice.paid'], 'invoice.paid', true],
    [['invoice.paid'], 'invoice.paid.late', false],
    [['invoice.paid'], 'Invoice.paid', false],
    [['invoice.*'], 'invoice.paid', true],
    [['invoice.*'], 'invoice.payment.failed', true],
    [['invoice.*'], 'invoice', false],
    [['invoice*'], 'invoices.x', true],
    [['customer.created', 'invoice.*'], 'customer.created', true],
    [['*'], 'anything', true],
    [['*'], null, true],
    [['invoice.*'], null, false],
    [['invoice.paid'], null, false],
  ] as const)('%j takes %j: %s', (list, type, expected) => {
    expect(subscribesTo(list as readonly string[] | null | undefined, type)).toBe(expected);
  });

  it('checks a list as the API receives it', () => {
    expect(eventTypesProblems(null)).toEqual([]);
    expect(eventTypesProblems(['invoice.*', '*', 'a:b-c_d'])).toEqual([]);
    expect(eventTypesProblems('invoice.*')).toEqual([{ field: 'event_types', message: expect.stringMatching(/array/) }]);
    expect(eventTypesProblems(['ok', 'has space', 'a**', 'ok', 7]).map((e) => e.field)).toEqual(['event_types[1]', 'event_types[2]', 'event_types[3]', 'event_types[4]']);
    expect(eventTypesProblems(Array.from({ length: 101 }, (_, i) => `t${i}`))).toHaveLength(1);
  });
});

describe('body matches', () => {
  const rule = (path: string, pattern: string) => ({ type: 'body', path, op: 'matches', pattern });
  const check = (rules: unknown[], input: FilterInput) => {
    const { filters, errors, refused } = parseFilters(rules, 'filter');
    expect([...errors, ...refused]).toEqual([]);
    return evaluateFilters(filters, input);
  };

  it('matches a string at the path, anywhere unless anchored; other values and absent paths fail', () => {
    const body = { data: { object: { id: 'in_1234', amount: 1200, tags: ['vip', 'eu'] } } };
    expect(check([rule('data.object.id', '^in_[0-9]+$')], event(body)).pass).toBe(true);
    expect(check([rule('data.object.id', '123')], event(body)).pass).toBe(true);
    expect(check([rule('data.object.tags.1', '(?i)^EU$')], event(body)).pass).toBe(true);
    const notString = check([rule('data.object.amount', '^1200$')], event(body));
    expect(notString).toMatchObject({ pass: false, reason: 'body data.object.amount is 1200, not a string to match /^1200$/' });
    expect(check([rule('data.object.id', '^ch_')], event(body))).toMatchObject({ pass: false, reason: 'body data.object.id is "in_1234", which does not match /^ch_/' });
    expect(check([rule('data.nope', '.')], event(body))).toMatchObject({ pass: false, reason: 'body data.nope is missing' });
    expect(check([rule('a', '.')], event('not json'))).toMatchObject({ pass: false, reason: expect.stringMatching(/not JSON/) });
  });

  it('is validated like header patterns, names the list it is in, and counts toward the total program size', () => {
    const refused = parseFilters([rule('a', '(?=x)')], 'filter');
    expect(refused.refused).toEqual([{ field: 'filter[0].pattern', message: expect.stringMatching(/RE2/) }]);
    expect(parseFilters([{ type: 'body', path: 'a', op: 'matches' }], 'filter').errors).toEqual([{ field: 'filter[0].pattern', message: expect.any(String) }]);
    expect(parseFilters([{ type: 'body', path: 'a', op: 'matches', pattern: 'x', value: 1 }]).errors).toEqual([{ field: 'filters[0].value', message: expect.any(String) }]);
    // each pattern alone within bounds (92 instructions), together beyond MAX_TOTAL_PROGRAM_SIZE
    const big = '[0-9a-f]{90}';
    const many = Array.from({ length: 6 }, (_, i) => rule(`k${i}`, big));
    const total = parseFilters(many, 'filter');
    expect(total.refused).toEqual([{ field: 'filter', message: expect.stringMatching(new RegExp(`more than ${MAX_TOTAL_PROGRAM_SIZE}`)) }]);
    // header and body patterns share the budget
    const mixed = parseFilters([...many.slice(0, 3), ...Array.from({ length: 3 }, () => ({ type: 'header', name: 'x', op: 'matches', pattern: big }))]);
    expect(mixed.refused).toHaveLength(1);
  });

  it('answers patterns that backtrack exponentially in V8 at once, on a large body value', () => {
    const cases: [string, string][] = [['^(a|a)*$', `${'a'.repeat(100_000)}!`], ['(a+)+$', `${'a'.repeat(100_000)}!`], ['^(([a-z])+.)+[A-Z]([a-z])+$', `${'a'.repeat(100_000)}!`]];
    for (const [pattern, value] of cases) {
      const started = performance.now();
      const result = check([rule('s', pattern)], event({ s: value }));
      const ms = performance.now() - started;
      expect(result.pass).toBe(false);
      // a backtracking engine takes longer than the universe on these; RE2 is linear
      expect(ms).toBeLessThan(2_000);
    }
  });
});

describe('subscribed', () => {
  const paid = event({ type: 'invoice.paid', data: { amount: 5000, currency: 'eur' } }, 'invoice.paid');

  it('needs the event type and every rule of the filter', () => {
    const d = destination({ event_types: ['invoice.*'], filter: [{ type: 'body', path: 'data.currency', op: 'equals', value: 'eur' }, { type: 'body', path: 'data.currency', op: 'matches', pattern: '^[a-z]{3}$' }] });
    expect(subscribed(d, 'invoice.paid', filterContext(paid))).toBeNull();
    expect(subscribed(d, 'customer.created', filterContext(paid))).toEqual({ reason: 'event type "customer.created" is not in event_types' });
    expect(subscribed(d, null, filterContext(paid))).toMatchObject({ reason: expect.stringMatching(/no event type/) });
    const usd = event({ data: { currency: 'usd' } });
    expect(subscribed(d, 'invoice.paid', filterContext(usd))).toMatchObject({ rule_index: 0, reason: expect.stringMatching(/usd/) });
    expect(subscribed(destination(), null, filterContext(usd))).toBeNull();
    expect(subscribed(destination({ event_types: null, filter: null }), 'x', filterContext(usd))).toBeNull();
  });

  it('parses the body once for all destinations, and fails body rules on a body beyond the limits', () => {
    const ctx = filterContext(paid);
    const parse = jest.spyOn(JSON, 'parse');
    try {
      for (let i = 0; i < 20; i++) expect(subscribed(destination({ id: `dst_${i}`, filter: [{ type: 'body', path: 'data.amount', op: 'in', values: [5000] }] }), 'invoice.paid', ctx)).toBeNull();
      expect(parse).toHaveBeenCalledTimes(1);
    } finally {
      parse.mockRestore();
    }
    const big = filterContext(event({ s: 'x'.repeat(300_000) }));
    const d = destination({ filter: [{ type: 'body', path: 's', op: 'exists' }] });
    expect(subscribed(d, null, big)).toMatchObject({ reason: expect.stringMatching(/^filter not evaluated: body is \d+ bytes/) });
    expect(subscribed(d, null, big)).toMatchObject({ reason: expect.stringMatching(/FILTER_MAX_BODY_BYTES/) });
    // header rules still read an event whose body is too large
    expect(subscribed(destination({ filter: [{ type: 'header', name: 'x', op: 'not_exists' }] }), null, big)).toBeNull();
    const deep = filterContext(event(`${'['.repeat(40)}${']'.repeat(40)}`), { maxBodyBytes: 1000, maxJsonDepth: 32, maxHeaderBytes: 100 });
    expect(subscribed(d, null, deep)).toMatchObject({ reason: expect.stringMatching(/FILTER_MAX_JSON_DEPTH/) });
  });

  it('keeps every event from a destination whose stored filter no longer parses', () => {
    expect(subscribed(destination({ filter: [{ type: 'nope' }] }), 'x', filterContext(paid))).toMatchObject({ invalid: true, reason: expect.stringMatching(/^the stored filter is invalid: filter\[0\]\.type/) });
  });
});

describe('routing with subscriptions', () => {
  const topics = topicNames('s.');
  const lines: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
  class Recording extends Logger {
    override debug(msg: string, fields: Record<string, unknown> = {}) { lines.push({ level: 'debug', msg, fields }); }
    override warn(msg: string, fields: Record<string, unknown> = {}) { lines.push({ level: 'warn', msg, fields }); }
  }
  const ctx: StageContext = { log: new Recording('debug'), position: { partition: 0, offset: '1' }, source: { topic: 'in', key: Buffer.from('k'), value: Buffer.from('v') }, configVersion: 0n };
  const webhook = (type: string | null, json: unknown): WebhookEvent => ({
    event_id: 'evt_1', tenant_id: 't', ingester_id: 'ing_1', correlation_id: 'cor_1', received_at: 1_790_000_000_000, method: 'POST', query: '',
    headers: [], content_type: 'application/json', body: Buffer.from(JSON.stringify(json)), source_ip: null, event_type: type, hops: 0,
  });
  const dests = [
    destination({ id: 'dst_all' }),
    destination({ id: 'dst_invoices', event_types: ['invoice.*'], filter: [{ type: 'body', path: 'amount', op: 'in', values: [1, 2] }] }),
    destination({ id: 'dst_none', event_types: [] }),
    destination({ id: 'dst_broken', filter: [{ type: 'no-such-rule' }] }),
  ];
  const flow: DeliveryFlow = { kind: 'flow', id: 'flw_1', tenant_id: 't', name: 'f', ingester_id: 'ing_1', destination_ids: dests.map((d) => d.id), created_at: now, updated_at: now };
  const stage = routeStage(topics, { list: () => [flow, { ...flow, id: 'flw_2' }], get: (_k, _t, id) => dests.find((d) => d.id === id) }, 50);
  const route = async (e: WebhookEvent) => {
    lines.length = 0;
    const outs = await stage.handle(e, ctx);
    checkWrites(stage, outs);
    return outs.map((o) => (o.value as DeliveryTask).destination_id);
  };

  it('makes a task only for the destinations that subscribe, logging the others at debug and a broken filter as a warning', async () => {
    expect(await route(webhook('invoice.paid', { amount: 1 }))).toEqual(['dst_all', 'dst_invoices']);
    expect(lines.filter((l) => l.level === 'debug').map((l) => l.fields.destination_id)).toEqual(['dst_none']);
    expect(lines.filter((l) => l.level === 'warn').map((l) => l.fields.destination_id)).toEqual(['dst_broken']);
    expect(await route(webhook('invoice.paid', { amount: 3 }))).toEqual(['dst_all']);
    expect(lines.find((l) => l.fields.destination_id === 'dst_invoices')).toMatchObject({ level: 'debug', fields: { rule_index: 0, reason: expect.stringMatching(/not in/) } });
    expect(await route(webhook(null, { amount: 1 }))).toEqual(['dst_all']);
  });

  it('goes no further, at debug level, when no destination subscribes', async () => {
    const only = routeStage(topics, { list: () => [{ ...flow, destination_ids: ['dst_none'] }], get: (_k, _t, id) => dests.find((d) => d.id === id) }, 50);
    lines.length = 0;
    expect(await only.handle(webhook('x', {}), ctx)).toEqual([]);
    expect(lines.map((l) => l.level)).toEqual(['debug', 'debug']);
  });
});
