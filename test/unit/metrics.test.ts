import type { Admin } from 'kafkajs';
import { AppError } from '../../core/errors';
import { ConfigError, loadConfig } from '../../core/config';
import { bearerMatches } from '../../api/routes/metrics';
import { refusalReasonOf } from '../../pipeline/ingest/router';
import { breakerSeries, MAX_NAMED_BREAKERS, watchBreakers, type BreakerStateName } from '../../platform/metrics/breaker-states';
import { watchConsumerLag } from '../../platform/metrics/consumer-lag';
import { recordDelivery, recordIngestRefused, registry } from '../../platform/metrics/metrics';
import { parseExposition, valueOf } from '../support/metrics';

const scrape = async () => parseExposition(await registry.metrics());
const named = (e: Awaited<ReturnType<typeof scrape>>, metric: string) => e.samples.filter((s) => s.name === metric);

describe('breaker label cap', () => {
  const id = (i: number) => `dst_${String(i).padStart(26, '0')}`;

  it('names only breakers that are not closed, open ones first, at most MAX_NAMED_BREAKERS, and counts them all', () => {
    const states: [string, BreakerStateName][] = [];
    for (let i = 0; i < 1000; i++) states.push([id(i), 'closed']);
    for (let i = 1000; i < 1030; i++) states.push([id(i), 'half-open']);
    // open ones added last and out of order: the cap keeps them, sorted by id
    for (let i = 1179; i >= 1030; i--) states.push([id(i), 'open']);
    const series = breakerSeries(states);
    expect(series.counts).toEqual({ closed: 1000, 'half-open': 30, open: 150 });
    expect(MAX_NAMED_BREAKERS).toBe(100);
    expect(series.named).toHaveLength(100);
    expect(series.named.every((n) => n.value === 2)).toBe(true);
    expect(series.named.map((n) => n.destinationId)).toEqual(Array.from({ length: 100 }, (_, i) => id(1030 + i)));
  });

  it('below the cap names every breaker that is not closed, with its value', () => {
    const series = breakerSeries([[id(1), 'closed'], [id(2), 'half-open'], [id(3), 'open']], 5);
    expect(series.named).toEqual([{ destinationId: id(3), value: 2 }, { destinationId: id(2), value: 1 }]);
    expect(breakerSeries([[id(2), 'half-open'], [id(3), 'open']], 1).named).toEqual([{ destinationId: id(3), value: 2 }]);
  });

  it('a process that may not name destinations shows only the counts; one that may, names them', async () => {
    const states: Record<string, BreakerStateName> = { [id(1)]: 'open', [id(2)]: 'closed', [id(3)]: 'half-open' };
    const unwatch = watchBreakers({ states: () => states, nameDestinations: false });
    try {
      const e = await scrape();
      expect(named(e, 'hookline_breaker_state')).toEqual([]);
      expect(e.types.get('hookline_breaker_state')).toBe('gauge');
      expect([valueOf(e, 'hookline_breakers', { state: 'open' }), valueOf(e, 'hookline_breakers', { state: 'half-open' }), valueOf(e, 'hookline_breakers', { state: 'closed' })]).toEqual([1, 1, 1]);
    } finally {
      unwatch();
    }
    const unwatchNamed = watchBreakers({ states: () => states, nameDestinations: true });
    try {
      const e = await scrape();
      expect(named(e, 'hookline_breaker_state').map((s) => [s.labels.destination_id, s.value])).toEqual([[id(1), 2], [id(3), 1]]);
      // closed again: the series goes
      states[id(1)] = 'closed';
      expect(named(await scrape(), 'hookline_breaker_state').map((s) => s.labels.destination_id)).toEqual([id(3)]);
    } finally {
      unwatchNamed();
    }
    expect(named(await scrape(), 'hookline_breaker_state')).toEqual([]);
    expect(valueOf(await scrape(), 'hookline_breakers', { state: 'half-open' })).toBe(0);
  });
});

describe('consumer lag', () => {
  /** An admin client whose answers the test sets: committed offsets per partition, and log ends. */
  function fakeAdmin(committed: Record<number, number>, ends: Record<number, number>) {
    let reads = 0;
    const admin = {
      fetchOffsets: async ({ topics }: { topics: string[] }) => {
        reads++;
        return topics.map((topic) => ({ topic, partitions: Object.entries(committed).map(([p, o]) => ({ partition: Number(p), offset: String(o) })) }));
      },
      fetchTopicOffsets: async () => Object.entries(ends).map(([p, high]) => ({ partition: Number(p), offset: String(high), high: String(high), low: '0' })),
    };
    return { admin: admin as unknown as Admin, reads: () => reads };
  }

  it('is read from Kafka at scrape time, once for scrapes close together, and leaves with its group', async () => {
    const kafka = fakeAdmin({ 0: 5, 1: -1 }, { 0: 12, 1: 4 });
    const broken = { ...fakeAdmin({}, {}).admin, fetchOffsets: async () => Promise.reject(new Error('broker away')) } as unknown as Admin;
    const unwatch = watchConsumerLag({ stage: 'deliver', groupId: 'g.deliver', topics: ['t.deliveries'], admin: kafka.admin });
    const unwatchBroken = watchConsumerLag({ stage: 'sink', groupId: 'g.sink', topics: ['t.logs'], admin: broken });
    try {
      expect(kafka.reads()).toBe(0);
      const e = await scrape();
      // partition 1 has no commit: everything it retains counts
      expect(named(e, 'hookline_consumer_lag').map((s) => [s.labels.stage, s.labels.topic, s.labels.partition, s.value])).toEqual([
        ['deliver', 't.deliveries', '0', 7],
        ['deliver', 't.deliveries', '1', 4],
      ]);
      await scrape();
      expect(kafka.reads()).toBe(1);
    } finally {
      unwatch();
      unwatchBroken();
    }
    expect(named(await scrape(), 'hookline_consumer_lag')).toEqual([]);
  });
});

describe('metric recorders', () => {
  it('count into the series bound at start, which exist at 0 before the first', async () => {
    const before = await scrape();
    expect(named(before, 'hookline_deliveries_total').map((s) => s.labels.outcome).sort()).toEqual(['breaker_open', 'delivered', 'dropped', 'exhausted', 'gone', 'held', 'inactive', 'paced', 'refused', 'retrying']);
    recordDelivery('delivered', 0.02);
    recordDelivery('held');
    recordIngestRefused('rate_limited');
    const after = await scrape();
    expect(valueOf(after, 'hookline_deliveries_total', { outcome: 'delivered' }) - valueOf(before, 'hookline_deliveries_total', { outcome: 'delivered' })).toBe(1);
    expect(valueOf(after, 'hookline_delivery_duration_seconds_bucket', { outcome: 'delivered', le: '0.025' }) - valueOf(before, 'hookline_delivery_duration_seconds_bucket', { outcome: 'delivered', le: '0.025' })).toBe(1);
    expect(valueOf(after, 'hookline_delivery_duration_seconds_bucket', { outcome: 'delivered', le: '0.01' })).toBe(valueOf(before, 'hookline_delivery_duration_seconds_bucket', { outcome: 'delivered', le: '0.01' }));
    // no attempt, no duration: the histogram has no series for held
    expect(after.samples.some((s) => s.name === 'hookline_delivery_duration_seconds_count' && s.labels.outcome === 'held')).toBe(false);
    expect(valueOf(after, 'hookline_ingest_requests_total', { outcome: 'refused', reason: 'rate_limited' })).toBe(valueOf(before, 'hookline_ingest_requests_total', { outcome: 'refused', reason: 'rate_limited' }) + 1);
  });

  it('name a Hook URL refusal by the status it is answered with', () => {
    const cases: [unknown, string][] = [
      [new AppError('rate-limit-exceeded', 'x'), 'rate_limited'],
      [new AppError('payload-too-large', 'x'), 'too_large'],
      [Object.assign(new Error('request entity too large'), { type: 'entity.too.large', status: 413 }), 'too_large'],
      [new AppError('not-found', 'x'), 'unknown_hook'],
      [new AppError('unprocessable-entity', 'x'), 'too_many_hops'],
      [new AppError('validation-error', 'x'), 'invalid'],
      [Object.assign(new Error('unsupported content encoding'), { type: 'encoding.unsupported', status: 415 }), 'invalid'],
      [new AppError('service-unavailable', 'x'), 'unavailable'],
      [new Error('boom'), 'error'],
      [undefined, 'error'],
    ];
    for (const [err, reason] of cases) expect({ err: String(err), reason: refusalReasonOf(err) }).toEqual({ err: String(err), reason });
  });
});

describe('metrics token', () => {
  const token = 'a-metrics-token-of-some-length';
  it('matches only the exact token, as a bearer credential', () => {
    expect(bearerMatches(`Bearer ${token}`, token)).toBe(true);
    expect(bearerMatches(`bearer ${token}`, token)).toBe(true);
    for (const header of [undefined, '', 'Bearer', 'Bearer ', `Basic ${token}`, `Bearer ${token}x`, `Bearer ${token.slice(0, -1)}`, `Bearer ${token} extra`, token]) {
      expect({ header, matches: bearerMatches(header, token) }).toEqual({ header, matches: false });
    }
  });

  it('METRICS_TOKEN is optional, and refused when too short or with spaces, without echoing it', () => {
    const base = { SECRETS_KEK: process.env.SECRETS_KEK };
    expect(loadConfig(base).metricsToken).toBeUndefined();
    expect(loadConfig({ ...base, METRICS_TOKEN: token }).metricsToken).toBe(token);
    for (const bad of ['short-token', 'a token with spaces in it']) {
      const err = (() => {
        try {
          loadConfig({ ...base, METRICS_TOKEN: bad });
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(err).toBeInstanceOf(ConfigError);
      expect(String((err as ConfigError).message)).toMatch(/METRICS_TOKEN: must be 16 to 1024 visible ASCII characters/);
      expect(String((err as ConfigError).message)).not.toContain(bad);
    }
  });
});
