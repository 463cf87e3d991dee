import { Counter, Histogram, Registry } from 'prom-client';
import { HotHistogram, PendingCount } from '../../platform/metrics/hot';
import { parseExposition } from '../support/metrics';

const sorted = (text: string) => parseExposition(text).samples.map((s) => JSON.stringify([s.name, Object.entries(s.labels).sort(), s.value])).sort();

describe('hot-path metrics', () => {
  it('a histogram of plain numbers reads as prom-client\'s own given the same observations, and resets with the registry', async () => {
    const bounds = [0.005, 0.01, 0.025, 0.05, 0.1, 1];
    const theirs = new Registry();
    const ours = new Registry();
    const reference = new Histogram({ name: 'h_seconds', help: 'durations', labelNames: ['outcome'] as const, buckets: bounds, registers: [theirs] });
    const hot = new HotHistogram('h_seconds', 'durations', 'outcome', bounds, ours);
    // a series asked for and never observed is there at 0, as a zeroed child is
    reference.zero({ outcome: 'idle' });
    hot.series('idle');
    const values = [0, 0.005, 0.0051, 0.01, 0.3, 1, 7, 0.049];
    for (const [i, v] of values.entries()) {
      const outcome = i % 3 === 0 ? 'retrying' : 'delivered';
      reference.labels(outcome).observe(v);
      hot.series(outcome).observe(v);
    }
    expect(sorted(await ours.metrics())).toEqual(sorted(await theirs.metrics()));
    expect(parseExposition(await ours.metrics()).types.get('h_seconds')).toBe('histogram');
    ours.resetMetrics();
    theirs.resetMetrics();
    for (const outcome of ['idle', 'retrying', 'delivered']) reference.zero({ outcome });
    expect(sorted(await ours.metrics())).toEqual(sorted(await theirs.metrics()));
  });

  it('counts kept as numbers reach the counter when the registry is read, once', async () => {
    const registry = new Registry();
    const pending: PendingCount[] = [];
    const counter = new Counter({ name: 'c_total', help: 'things', labelNames: ['kind'] as const, registers: [registry], collect: () => pending.forEach((p) => p.flush()) });
    pending.push(new PendingCount(counter.labels('a')), new PendingCount(counter.labels('b')));
    pending[0]!.n += 3;
    pending[1]!.n++;
    expect(sorted(await registry.metrics())).toEqual(sorted('c_total{kind="a"} 3\nc_total{kind="b"} 1\n'));
    pending[0]!.n++;
    expect(sorted(await registry.metrics())).toEqual(sorted('c_total{kind="a"} 4\nc_total{kind="b"} 1\n'));
  });
});
