// the package is ESM with a CommonJS build: typed as the one, loaded as the other
type LezerPromQL = typeof import('@prometheus-io/lezer-promql', { with: { 'resolution-mode': 'import' } });
const { parser } = require('@prometheus-io/lezer-promql') as LezerPromQL;

/** One sample of the Prometheus text format. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples and the declared metric types of a Prometheus text exposition. */
export interface Exposition {
  samples: Sample[];
  /** `# TYPE` lines: metric name → counter, gauge, histogram, ... */
  types: Map<string, string>;
}

const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Parses the Prometheus text format (0.0.4) as prom-client writes it. */
export function parseExposition(text: string): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.startsWith('# TYPE ')) {
      const [name, type] = line.slice(7).split(' ');
      types.set(name!, type!);
      continue;
    }
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_s, c: string) => (c === 'n' ? '\n' : c));
    samples.push({ name: m[1]!, labels, value: m[3] === '+Inf' ? Infinity : Number(m[3]) });
  }
  return { samples, types };
}

/** The value of the one sample with this name whose labels include `labels` (0 when there is none). */
export function valueOf(e: Exposition, name: string, labels: Record<string, string> = {}): number {
  const found = e.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${found.length} samples`);
  return found[0]?.value ?? 0;
}

/** Sample names a metric family shows under (a histogram's `_bucket`, `_sum` and `_count`). */
export function sampleNames(e: Exposition): Set<string> {
  const names = new Set<string>();
  for (const [name, type] of e.types) {
    names.add(name);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`);
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(`${name}${suffix}`);
  }
  return names;
}

/** Grafana's interval variables stand where PromQL takes a duration; others stand inside label strings. */
export function withoutGrafanaVariables(expr: string): string {
  return expr.replace(/\$__(rate_interval|interval|range)\b|\$\{__(rate_interval|interval|range)\}/g, '5m');
}

export interface ParsedPromQL {
  /** Where the parser found the expression invalid: its error nodes, with the text around each. */
  errors: string[];
  /** The metric names the expression selects. */
  metrics: string[];
}

/** Parses a PromQL expression with the Prometheus project's own grammar (@prometheus-io/lezer-promql). */
export function parsePromQL(expr: string): ParsedPromQL {
  const tree = parser.parse(expr);
  const errors: string[] = [];
  const metrics: string[] = [];
  if (expr.trim() === '') errors.push('empty expression');
  tree.iterate({
    enter(node) {
      if (node.type.isError) errors.push(`at ${node.from}: …${expr.slice(Math.max(0, node.from - 20), node.to + 20)}…`);
      if (node.name === 'Identifier' && node.node.parent?.name === 'VectorSelector') metrics.push(expr.slice(node.from, node.to));
    },
  });
  return { errors, metrics };
}
