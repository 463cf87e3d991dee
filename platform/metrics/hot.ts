import type { Metric, Registry } from 'prom-client';

/**
 * Series updated on the hot path (every webhook, delivery and Kafka request) as plain numbers,
 * written into the registry's output only when it is read: prom-client's own counters and
 * histograms hash and check the labels of a bound child again on every update.
 */

/** Increments of one counter series since the registry was last read. */
export class PendingCount {
  n = 0;
  constructor(private readonly series: { inc(value: number): void }) {}

  /** Adds what was counted to the series: from the counter's `collect`, as the registry is read. */
  flush(): void {
    if (this.n === 0) return;
    this.series.inc(this.n);
    this.n = 0;
  }
}

/** One series of a {@link HotHistogram}: observations per bucket (the last past every bound), their sum and count. */
export class HistogramSeries {
  readonly counts: number[];
  sum = 0;
  count = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Array<number>(bounds.length + 1).fill(0);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

/**
 * A Prometheus histogram with one label, its series kept as {@link HistogramSeries}, exposed in
 * the form prom-client writes histograms (`_bucket` with `le`, cumulative, then `_sum`, `_count`).
 */
export class HotHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly all = new Map<string, HistogramSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelName: string,
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    // prom-client's registry reads any object with its metrics' name, help, type and get()
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series of one label value, at 0 from the first time it is asked for. */
  series(value: string): HistogramSeries {
    let series = this.all.get(value);
    if (!series) this.all.set(value, (series = new HistogramSeries(this.bounds)));
    return series;
  }

  async get() {
    const values: { metricName: string; labels: Record<string, string | number>; value: number }[] = [];
    for (const [value, series] of this.all) {
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += series.counts[i]!;
        values.push({ metricName: `${this.name}_bucket`, labels: { [this.labelName]: value, le }, value: cumulative });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { [this.labelName]: value, le: '+Inf' }, value: series.count });
      values.push({ metricName: `${this.name}_sum`, labels: { [this.labelName]: value }, value: series.sum });
      values.push({ metricName: `${this.name}_count`, labels: { [this.labelName]: value }, value: series.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** The registry's reset: every series back to 0 (the series themselves stay bound where they are used). */
  reset(): void {
    for (const series of this.all.values()) {
      series.counts.fill(0);
      series.sum = 0;
      series.count = 0;
    }
  }
}
