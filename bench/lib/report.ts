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
  /** Kafka records written per delivered event in the end-to-end scenario; null when it did not run. */
  records_per_delivered_event: number | null;
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

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * The ratios as an SVG bar chart: one bar per scenario on a common scale, its target as a mark,
 * green where the target is met and red where it is not (for a lower-is-better ratio the bar
 * must stay left of its mark).
 */
export function chart(r: Results): string {
  const rows = r.scenarios.filter((e) => Number.isFinite(e.ratio));
  const scaleMax = Math.max(1.5, ...rows.map((e) => Math.min(3, Math.max(e.ratio, e.target) * 1.1)));
  const [labelW, barW, rowH, top] = [170, 520, 34, 54];
  const width = labelW + barW + 90;
  const height = top + rows.length * rowH + 44;
  const x = (v: number) => labelW + (Math.min(v, scaleMax) / scaleMax) * barW;
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="13">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="12" y="22" font-size="15" font-weight="bold">${esc(`hookline benchmark: ratio to the baseline measured in the same run${r.quick ? ' (quick mode)' : ''}`)}</text>`,
    `<text x="12" y="40" fill="#555">${esc(`${r.started_at.slice(0, 10)}, commit ${r.git_commit.slice(0, 12)}, ${r.machine.cpus} CPUs; bar: ratio, black mark: target`)}</text>`,
  ];
  for (let t = 0; t <= scaleMax + 1e-9; t += 0.5) {
    out.push(`<line x1="${x(t)}" y1="${top - 6}" x2="${x(t)}" y2="${top + rows.length * rowH}" stroke="#ddd"/>`, `<text x="${x(t)}" y="${top + rows.length * rowH + 18}" text-anchor="middle" fill="#555">${t.toFixed(1)}</text>`);
  }
  rows.forEach((e, i) => {
    const y = top + i * rowH;
    const colour = e.met ? '#2e7d32' : '#c62828';
    out.push(
      `<text x="${labelW - 10}" y="${y + 20}" text-anchor="end">${esc(e.name)}</text>`,
      `<rect x="${labelW}" y="${y + 6}" width="${Math.max(1, x(e.ratio) - labelW)}" height="${rowH - 14}" fill="${colour}"/>`,
      `<line x1="${x(e.target)}" y1="${y + 2}" x2="${x(e.target)}" y2="${y + rowH - 4}" stroke="#000" stroke-width="2"/>`,
      `<text x="${x(Math.max(e.ratio, e.target)) + 8}" y="${y + 20}">${esc(`${num(e.ratio)} (${e.better === 'higher' ? '≥' : '≤'} ${e.target})`)}</text>`,
    );
  });
  out.push(`<text x="12" y="${height - 8}" fill="#555">${esc('ratios above 3 are drawn at the edge; the table in latest.md defines each ratio')}</text>`, '</svg>', '');
  return out.join('\n');
}
