/** The shape of bench/results/latest.json and its Markdown rendering. */

export interface Spread {
  min: number;
  max: number;
}

export interface Entry {
  name: string;
  metric: string;
  unit: string;
  /** Median over the repetitions. */
  value: number;
  spread: Spread;
  repetitions: number;
  baseline: { name: string; value: number; spread: Spread; unit: string };
  /** Defined per scenario in `notes`; `better` says which way is good. */
  ratio: number;
  target: number;
  better: 'higher' | 'lower';
  met: boolean;
  notes: string;
  details?: Record<string, unknown>;
}

export interface Results {
  started_at: string;
  finished_at: string;
  quick: boolean;
  machine: { cpus: number; cpu_model: string; /** Bytes. */ memory: number; node: string; platform: string };
  git_commit: string;
  git_dirty: boolean;
  settings: Record<string, number | string>;
  durations: Record<string, number>;
  scenarios: Entry[];
  failures: { scenario: string; error: string }[];
}

export function met(ratio: number, target: number, better: 'higher' | 'lower'): boolean {
  return Number.isFinite(ratio) && (better === 'higher' ? ratio >= target : ratio <= target);
}

const num = (x: number) => (Number.isFinite(x) ? (Math.abs(x) >= 100 ? Math.round(x).toLocaleString('en-US') : String(+x.toFixed(2))) : 'n/a');
const withSpread = (v: number, s: Spread) => `${num(v)} (${num(s.min)}–${num(s.max)})`;

export function markdown(r: Results): string {
  const lines = [
    `# hookline benchmark${r.quick ? ' (quick mode: sizes shrunk, not comparable)' : ''}`,
    '',
    `Started ${r.started_at}, took ${Math.round(r.durations.total ?? 0)} s. Commit ${r.git_commit.slice(0, 12)}${r.git_dirty ? ' (with local changes)' : ''}; ${r.machine.cpus} CPUs (${r.machine.cpu_model}), ${(r.machine.memory / 2 ** 30).toFixed(1)} GiB, Node ${r.machine.node}.`,
    'Values are medians over the repetitions with (min–max); baselines are measured in the same run. The machine is shared, so the ratio is the figure that counts.',
    '',
    '| scenario | metric | value (min–max) | baseline (min–max) | ratio | target | met |',
    '| --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const e of r.scenarios) {
    lines.push(`| ${e.name} | ${e.metric} [${e.unit}] | ${withSpread(e.value, e.spread)} | ${e.baseline.name}: ${withSpread(e.baseline.value, e.baseline.spread)} ${e.baseline.unit} | ${num(e.ratio)} | ${e.better === 'higher' ? '≥' : '≤'} ${e.target} | ${e.met ? 'yes' : '**no**'} |`);
  }
  lines.push('');
  for (const e of r.scenarios) lines.push(`- **${e.name}** (${e.repetitions} repetition${e.repetitions === 1 ? '' : 's'}): ${e.notes}`);
  if (r.failures.length > 0) {
    lines.push('', '## Scenarios that failed', '');
    for (const f of r.failures) lines.push(`- ${f.scenario}: ${f.error.split('\n')[0]}`);
  }
  lines.push('', `Durations (s): ${Object.entries(r.durations).map(([k, v]) => `${k} ${Math.round(v)}`).join(', ')}.`, '');
  return lines.join('\n');
}
