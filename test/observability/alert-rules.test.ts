import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { REPO_ROOT } from '../support/process';

/**
 * docs/prometheus/alerts.yml under Prometheus's own promtool: `promtool check rules` loads it as
 * Prometheus would (expressions, durations, annotation templates), and `promtool test rules` runs
 * docs/prometheus/alerts.test.yml, which says when each alert fires and when it must not. promtool
 * comes from scripts/promtool.cjs (npm test's pretest) or the PATH; without it every test fails
 * with the line that says how to get it.
 */

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { promtoolPath, HOWTO } = require('../../scripts/promtool.cjs') as { promtoolPath: () => string | undefined; HOWTO: string };

type Json = Record<string, any>;

const rulesDir = path.join(REPO_ROOT, 'docs', 'prometheus');
const rulesText = readFileSync(path.join(rulesDir, 'alerts.yml'), 'utf8');
const testsText = readFileSync(path.join(rulesDir, 'alerts.test.yml'), 'utf8');

function promtool(...args: string[]): { status: number | null; output: string } {
  const bin = promtoolPath();
  if (bin === undefined) throw new Error(HOWTO);
  const r = spawnSync(bin, args, { encoding: 'utf8', timeout: 60_000 });
  if (r.error) throw r.error;
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** `text` with `from` replaced once; fails when `from` is not there, so a copy never goes unchanged. */
function replaceOnce(text: string, from: string, to: string): string {
  const at = text.indexOf(from);
  if (at < 0) throw new Error(`${JSON.stringify(from)} is not in the file`);
  return text.slice(0, at) + to + text.slice(at + from.length);
}

describe('alert rules under promtool', () => {
  const alerts = (parse(rulesText) as Json).groups.flatMap((g: Json) => (g.rules as Json[]).map((r) => String(r.alert))) as string[];
  let tmp: string;

  beforeAll(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'hookline-alerts-'));
  });

  afterAll(() => {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  /** Writes the rule file and the test file (changed or not) side by side, as alerts.test.yml names its rule file. */
  function copies(rules: string, tests = testsText): { rules: string; tests: string } {
    const dir = mkdtempSync(path.join(tmp, 'copy-'));
    writeFileSync(path.join(dir, 'alerts.yml'), rules);
    writeFileSync(path.join(dir, 'alerts.test.yml'), tests);
    return { rules: path.join(dir, 'alerts.yml'), tests: path.join(dir, 'alerts.test.yml') };
  }

  it('promtool check rules loads every alert', () => {
    const r = promtool('check', 'rules', path.join(rulesDir, 'alerts.yml'));
    expect(r.output).toContain(`SUCCESS: ${alerts.length} rules found`);
    expect(r.status).toBe(0);
  });

  it('promtool check rules refuses a broken expression and a broken annotation template', () => {
    const expr = copies(replaceOnce(rulesText, 'max by (destination_id) (hookline_breaker_state', 'max by (destination_id (hookline_breaker_state'));
    const bad = promtool('check', 'rules', expr.rules);
    expect(bad.status).not.toBe(0);
    expect(bad.output).toMatch(/FAILED/);

    const template = copies(replaceOnce(rulesText, '{{ $value | humanize }} records', '{{ $value | humanise }} records'));
    const badTemplate = promtool('check', 'rules', template.rules);
    expect(badTemplate.status).not.toBe(0);
    expect(badTemplate.output).toMatch(/humanise/);
  });

  it('promtool test rules passes alerts.test.yml', () => {
    const r = promtool('test', 'rules', path.join(rulesDir, 'alerts.test.yml'));
    expect(r.output).toContain('SUCCESS');
    expect(r.status).toBe(0);
  });

  it('alerts.test.yml sees every alert fire and every alert stay quiet', () => {
    const cases = (parse(testsText) as Json).tests.flatMap((t: Json) => t.alert_rule_test as Json[]) as Json[];
    const fires = new Set(cases.filter((c) => (c.exp_alerts as Json[]).length > 0).map((c) => String(c.alertname)));
    const quiet = new Set(cases.filter((c) => (c.exp_alerts as Json[]).length === 0).map((c) => String(c.alertname)));
    expect(alerts.length).toBeGreaterThan(0);
    expect(alerts.filter((a) => !fires.has(a))).toEqual([]);
    expect(alerts.filter((a) => !quiet.has(a))).toEqual([]);
    // every firing expectation gives the annotations as rendered, not just the labels
    for (const c of cases) for (const a of c.exp_alerts as Json[]) expect(Object.keys(a.exp_annotations ?? {}).sort()).toEqual(['description', 'summary']);
  });

  it('promtool test rules fails on a wrong expectation and on a rule that no longer does what it says', () => {
    // the lag summed over both processes of the stage, as without the deduplication
    const expectation = copies(rulesText, replaceOnce(testsText, '3.5k records not committed', '7k records not committed'));
    const wrong = promtool('test', 'rules', expectation.tests);
    expect(wrong.status).not.toBe(0);
    expect(wrong.output).toMatch(/FAILED[\s\S]*alertname: HooklineConsumerLagGrowing/);

    // a single 503 would page
    const rule = copies(replaceOnce(rulesText, ') > 0.5\n', ') > 0\n'));
    const loose = promtool('test', 'rules', rule.tests);
    expect(loose.status).not.toBe(0);
    expect(loose.output).toMatch(/FAILED[\s\S]*alertname: HooklineIngestUnavailable, time: 12m/);
  });
});
