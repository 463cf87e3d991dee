import { analyticsParamsOf, MAX_ANALYTICS_BUCKETS } from '../../api/routes/analytics';
import { figuresOf } from '../../platform/clickhouse/analytics';
import { analyticsQueryOf } from '../../cli/analytics';
import { AppError } from '../../core/errors';

/** The fields a refusal names, or the parameters when there is none. */
function fieldsOf(query: Record<string, unknown>, now: number): string[] | ReturnType<typeof analyticsParamsOf> {
  try {
    return analyticsParamsOf(query, now);
  } catch (err) {
    if (!(err instanceof AppError) || err.slug !== 'validation-error') throw err;
    return ((err.extra as { errors: { field: string }[] }).errors ?? []).map((e) => e.field);
  }
}

const NOW = Date.parse('2026-11-27T14:37:21.250Z');
const H = 3_600_000;
const D = 24 * H;

describe('analytics parameters', () => {
  it('defaults to the last 24 h in hour buckets, rounded out to whole hours', () => {
    expect(analyticsParamsOf({}, NOW)).toEqual({
      fromMs: Date.parse('2026-11-26T14:00:00Z'), toMs: Date.parse('2026-11-27T15:00:00Z'), bucket: 'hour', groupBy: null, destinationId: null, eventType: null,
    });
  });

  it('rounds from down and to up to the bucket edges (UTC days for day)', () => {
    const p = analyticsParamsOf({ from: '2026-11-20T10:15:00+02:00', to: '2026-11-22T00:00:00Z', bucket: 'day' }, NOW);
    expect([new Date(p.fromMs).toISOString(), new Date(p.toMs).toISOString()]).toEqual(['2026-11-20T00:00:00.000Z', '2026-11-22T00:00:00.000Z']);
    const m = analyticsParamsOf({ from: '2026-11-27T10:15:30Z', to: '2026-11-27T10:20:00.001Z', bucket: 'minute' }, NOW);
    expect([new Date(m.fromMs).toISOString(), new Date(m.toMs).toISOString()]).toEqual(['2026-11-27T10:15:00.000Z', '2026-11-27T10:21:00.000Z']);
  });

  it('takes every group_by and the filters', () => {
    for (const g of ['destination', 'event_type', 'response_code', 'response_class', 'ingester']) expect(analyticsParamsOf({ group_by: g }, NOW).groupBy).toBe(g);
    expect(analyticsParamsOf({ destination_id: 'dst_1', event_type: 'order.paid' }, NOW)).toMatchObject({ destinationId: 'dst_1', eventType: 'order.paid' });
  });

  it('picks day buckets by default when hours would be too many, and refuses too many buckets naming bucket', () => {
    const from = new Date(NOW - 80 * D).toISOString();
    expect(analyticsParamsOf({ from }, NOW).bucket).toBe('day');
    expect(analyticsParamsOf({ from: new Date(NOW - 60 * D).toISOString() }, NOW).bucket).toBe('hour');
    expect(fieldsOf({ from, bucket: 'hour' }, NOW)).toEqual(['bucket']);
    expect(fieldsOf({ from: new Date(NOW - 2 * D).toISOString(), bucket: 'minute' }, NOW)).toEqual(['bucket']);
    // exactly the most buckets there may be
    const edge = Date.parse('2026-11-27T00:00:00Z');
    const p = analyticsParamsOf({ from: new Date(edge - MAX_ANALYTICS_BUCKETS * 60_000).toISOString(), to: new Date(edge).toISOString(), bucket: 'minute' }, NOW);
    expect((p.toMs - p.fromMs) / 60_000).toBe(MAX_ANALYTICS_BUCKETS);
    expect(fieldsOf({ from: new Date(edge - (MAX_ANALYTICS_BUCKETS + 1) * 60_000).toISOString(), to: new Date(edge).toISOString(), bucket: 'minute' }, NOW)).toEqual(['bucket']);
  });

  it('refuses bad values, naming each parameter', () => {
    const cases: [Record<string, unknown>, string[]][] = [
      [{ from: 'yesterday' }, ['from']],
      [{ to: '2026-02-31T00:00:00Z' }, ['to']],
      [{ from: '2026-11-27T00:00:00Z', to: '2026-11-26T00:00:00Z' }, ['from']],
      [{ from: '2026-11-28T00:00:00Z' }, ['from']],
      [{ from: new Date(NOW - 91 * D).toISOString(), bucket: 'day' }, ['from']],
      [{ bucket: 'week' }, ['bucket']],
      [{ group_by: 'status' }, ['group_by']],
      [{ destination_id: '' }, ['destination_id']],
      [{ event_type: 'x'.repeat(201) }, ['event_type']],
      [{ bucket: ['hour', 'day'] }, ['bucket']],
      [{ groupby: 'destination' }, ['groupby']],
      [{ bucket: 'week', group_by: 'nope', from: 'x' }, ['from', 'bucket', 'group_by']],
    ];
    for (const [query, fields] of cases) expect({ query, fields: fieldsOf(query, NOW) }).toEqual({ query, fields });
  });

  it('computes rates from the counts, null where they divide by nothing', () => {
    expect(figuresOf({ delivered: 6, retrying: 3, failed: 1, dropped: 2 })).toMatchObject({ attempts: 12, success_rate: 0.6, attempts_per_delivered: 10 / 6 });
    expect(figuresOf({ delivered: 0, retrying: 0, failed: 0, dropped: 4 })).toMatchObject({ attempts: 4, success_rate: null, attempts_per_delivered: null });
    expect(figuresOf({ delivered: 0, retrying: 2, failed: 0, dropped: 0 })).toMatchObject({ success_rate: 0, attempts_per_delivered: null });
  });

  it('the CLI sends each option as its parameter, and --last as from and to', () => {
    expect(Object.fromEntries(analyticsQueryOf({ bucket: 'day', 'group-by': 'event_type', destination: 'dst_1', 'event-type': 't' }))).toEqual({ bucket: 'day', group_by: 'event_type', destination_id: 'dst_1', event_type: 't' });
    expect(Object.fromEntries(analyticsQueryOf({ last: '7d' }, NOW))).toEqual({ from: new Date(NOW - 7 * D).toISOString(), to: new Date(NOW).toISOString() });
    expect(() => analyticsQueryOf({ last: '7w' }, NOW)).toThrow(/--last/);
    expect(() => analyticsQueryOf({ last: '7d', from: '2026-11-01T00:00:00Z' }, NOW)).toThrow(/--last/);
  });
});
