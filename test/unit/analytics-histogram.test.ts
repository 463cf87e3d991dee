import { readFileSync } from 'node:fs';
import path from 'node:path';
import { BUCKETS_PER_DOUBLING, bucketValue, latencyBucketSql, MAX_RELATIVE_ERROR, QUANTILES, TOP_BUCKET } from '../../platform/clickhouse/analytics';

/** The bucket of a value, as latencyBucketSql computes it in the views. */
const bucketOf = (v: number) => (v < 1 ? 0 : Math.min(1 + Math.floor(BUCKETS_PER_DOUBLING * Math.log2(v)), TOP_BUCKET));

/** A seeded generator (mulberry32): the samples are the same on every run. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Each quantile estimated from the histogram of `values`, as the analytics compute it: bucket at position floor(q * n), narrowed to [min, max]. */
function estimates(values: number[]): number[] {
  const counts = new Map<number, number>();
  for (const v of values) counts.set(bucketOf(v), (counts.get(bucketOf(v)) ?? 0) + 1);
  const keys = [...counts.keys()].sort((a, b) => a - b);
  const min = Math.min(...values);
  const max = Math.max(...values);
  return QUANTILES.map((q) => {
    const position = Math.floor(q * values.length);
    let seen = 0;
    const b = keys.find((k) => (seen += counts.get(k)!) > position)!;
    return bucketValue(b, min, max);
  });
}

/** The exact quantiles: the value at 0-based position floor(q * n) of the sorted values (ClickHouse's quantileExact). */
const exact = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return QUANTILES.map((q) => sorted[Math.floor(q * sorted.length)]!);
};

describe('latency histograms', () => {
  it('bounds the relative error of every quantile by half a bucket (about 4.4%) on random samples', () => {
    expect(MAX_RELATIVE_ERROR).toBeCloseTo(0.0443, 4);
    const next = random(2026);
    // log-normal latencies around 50 ms to 5 s, uniform integers, and a spread from 1 ms to 12 days
    const shapes: Record<string, () => number> = {
      lognormal: () => Math.round(Math.exp(Math.log(50) + 1.5 * Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next()))),
      uniform: () => 1 + Math.floor(next() * 2_000),
      wide: () => Math.floor(2 ** (next() * 30)),
      bimodal: () => (next() < 0.9 ? 20 + Math.floor(next() * 300) : 1_500 + Math.floor(next() * 300)),
    };
    let checked = 0;
    let worst = 0;
    for (const [name, draw] of Object.entries(shapes)) {
      for (const n of [1, 2, 3, 7, 20, 101, 1_000, 20_000]) {
        for (let round = 0; round < 5; round++) {
          const values = Array.from({ length: n }, draw).map((v) => Math.max(0, v));
          const want = exact(values);
          const got = estimates(values);
          for (let i = 0; i < QUANTILES.length; i++) {
            const error = want[i]! === 0 ? got[i]! : Math.abs(got[i]! - want[i]!) / want[i]!;
            if (!(error <= MAX_RELATIVE_ERROR + 1e-12)) throw new Error(`${name}, n=${n}, q=${QUANTILES[i]}: estimate ${got[i]} for ${want[i]} (error ${error})`);
            // the answer rounds to whole ms: half a bucket plus half a ms
            expect(Math.abs(Math.round(got[i]!) - want[i]!)).toBeLessThanOrEqual(MAX_RELATIVE_ERROR * want[i]! + 0.5);
            worst = Math.max(worst, error);
            checked++;
          }
        }
      }
    }
    expect(checked).toBe(4 * 8 * 5 * 3);
    // the bound is reached, not loose by far: buckets are where the error comes from
    expect(worst).toBeGreaterThan(MAX_RELATIVE_ERROR / 4);
  });

  it('is exact for one value, and for a set of equal values', () => {
    for (const v of [0, 1, 7, 403, 1_500, 86_400_000, 2 ** 31]) {
      expect(estimates([v])).toEqual([v, v, v]);
      expect(estimates([v, v, v, v])).toEqual([v, v, v]);
    }
  });

  it('puts values under 1 ms (and negative end-to-end times of skewed clocks) at 0, and each power of two at its bucket edge', () => {
    expect([bucketOf(0), bucketOf(0.5), bucketOf(-20)]).toEqual([0, 0, 0]);
    expect(estimates([0, 0, 5]).map(Math.round)).toEqual([0, 5, 5]);
    for (let k = 0; k < 30; k++) {
      expect(bucketOf(2 ** k)).toBe(BUCKETS_PER_DOUBLING * k + 1);
      expect(bucketOf(2 ** k - 0.001)).toBe(k === 0 ? 0 : BUCKETS_PER_DOUBLING * k);
    }
    // from 2^30 ms (12.4 days) on, everything shares the top bucket: its estimate lies between 2^30 and the largest value
    expect(bucketOf(2 ** 30)).toBe(TOP_BUCKET);
    expect(bucketOf(2 ** 40)).toBe(TOP_BUCKET);
    expect(estimates([2 ** 30, 2 ** 32])[2]).toBe(2 ** 31);
  });

  it('computes the buckets in the views as here (migration 013 holds the same expression)', () => {
    const migration = readFileSync(path.join(__dirname, '../../platform/clickhouse/migrations/013_delivery_analytics.sql'), 'utf8');
    for (const v of ['duration_ms', 'e2e']) expect(migration.split(latencyBucketSql(v)).length - 1).toBe(4);
    expect(latencyBucketSql('x')).toBe(`if(x < 1, 0, toUInt8(least(1 + floor(${BUCKETS_PER_DOUBLING} * log2(x)), ${TOP_BUCKET})))`);
  });
});
