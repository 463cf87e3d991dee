import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { REPO_ROOT } from '../support/process';
import { parseExposition, parsePromQL, sampleNames, withoutGrafanaVariables } from '../support/metrics';
import { startTestService, type TestService } from '../support/service';

/**
 * docs/prometheus/alerts.yml and docs/grafana/hookline-dashboard.json as Prometheus and Grafana
 * would read them: every PromQL expression parses with the Prometheus project's own grammar,
 * every metric they name is one a running service exposes on /metrics, the rule file has the
 * shape Prometheus loads, and the dashboard the shape Grafana imports.
 */

type Json = Record<string, any>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const DURATION = /^(\d+(ms|s|m|h|d|w|y))+$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

interface Expr {
  where: string;
  expr: string;
}

/** Metric families of this service and of Node's process metrics; `up` and the like are Prometheus's own. */
const OURS = /^(hookline_|process_|nodejs_)/;

/** What is wrong with these expressions: parse errors, and names of ours that `exposed` does not have. */
function problemsOf(exprs: Expr[], exposed: Set<string>): string[] {
  const problems: string[] = [];
  for (const { where, expr } of exprs) {
    const parsed = parsePromQL(withoutGrafanaVariables(expr));
    for (const e of parsed.errors) problems.push(`${where}: does not parse ${e}`);
    for (const name of parsed.metrics) if (OURS.test(name) && !exposed.has(name)) problems.push(`${where}: ${name} is not on /metrics`);
  }
  return problems;
}

const alertsFile = path.join(REPO_ROOT, 'docs', 'prometheus', 'alerts.yml');
const dashboardFile = path.join(REPO_ROOT, 'docs', 'grafana', 'hookline-dashboard.json');

function ruleExprs(rules: Json): Expr[] {
  return (rules.groups as Json[]).flatMap((g) => (g.rules as Json[]).map((r) => ({ where: `alert ${r.alert}`, expr: String(r.expr) })));
}

function panelsOf(dashboard: Json): Json[] {
  return (dashboard.panels as Json[]).flatMap((p) => [p, ...((p.panels as Json[] | undefined) ?? [])]);
}

function dashboardExprs(dashboard: Json): Expr[] {
  return panelsOf(dashboard).flatMap((p) => ((p.targets as Json[] | undefined) ?? []).map((t) => ({ where: `panel ${p.id} "${p.title}" ${t.refId}`, expr: String(t.expr) })));
}

describe('alert rules and dashboard', () => {
  const rules = parse(readFileSync(alertsFile, 'utf8')) as Json;
  const dashboard = JSON.parse(readFileSync(dashboardFile, 'utf8')) as Json;
  let svc: TestService;
  let exposed: Set<string>;

  beforeAll(async () => {
    svc = await startTestService();
    const res = await fetch(`${svc.url}/metrics`);
    expect(res.status).toBe(200);
    exposed = sampleNames(parseExposition(await res.text()));
  }, 120_000);

  afterAll(async () => {
    await svc?.stop();
  });

  it('the check itself fails on a broken expression and on a metric the service does not have', () => {
    const known = new Set(['hookline_deliveries_total', 'hookline_delivery_duration_seconds_bucket']);
    expect(problemsOf([{ where: 'ok', expr: 'histogram_quantile(0.99, sum by (le) (rate(hookline_delivery_duration_seconds_bucket[$__rate_interval])))' }], known)).toEqual([]);
    expect(problemsOf([{ where: 'broken', expr: 'sum(rate(hookline_deliveries_total[5m])' }], known)).toEqual([expect.stringMatching(/^broken: does not parse/)]);
    expect(problemsOf([{ where: 'bad duration', expr: 'rate(hookline_deliveries_total[5x])' }], known)).not.toEqual([]);
    expect(problemsOf([{ where: 'unknown function', expr: 'rated(hookline_deliveries_total[5m])' }], known)).not.toEqual([]);
    expect(problemsOf([{ where: 'grouping', expr: 'sum by (a b) (hookline_deliveries_total)' }], known)).not.toEqual([]);
    expect(problemsOf([{ where: 'empty', expr: ' ' }], known)).not.toEqual([]);
    expect(problemsOf([{ where: 'typo', expr: 'sum(rate(hookline_delivery_total[5m]))' }], known)).toEqual(['typo: hookline_delivery_total is not on /metrics']);
    // `up` is Prometheus's own; the histogram's _count is not on /metrics unless the family is a histogram
    expect(problemsOf([{ where: 'up', expr: 'up{job="hookline"} == 0' }], known)).toEqual([]);
    expect(problemsOf([{ where: 'count', expr: 'hookline_delivery_duration_seconds_count' }], known)).toEqual(['count: hookline_delivery_duration_seconds_count is not on /metrics']);
  });

  it('/metrics of a running service has every metric family of the documentation', () => {
    for (const name of ['hookline_deliveries_total', 'hookline_delivery_duration_seconds_bucket', 'hookline_ingest_requests_total', 'hookline_consumer_lag', 'hookline_breaker_state', 'hookline_breakers', 'hookline_kafka_produce_duration_seconds_count', 'hookline_kafka_requests_total', 'hookline_sink_rows_total', 'hookline_sink_flush_duration_seconds_sum', 'hookline_evidence_tree_size', 'hookline_evidence_seal_duration_seconds_bucket', 'hookline_sealed_bodies_unopenable_total', 'hookline_body_sealing_seconds_total', 'process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes']) {
      expect({ name, exposed: exposed.has(name) }).toEqual({ name, exposed: true });
    }
  });

  it('every alert expression and dashboard query parses as PromQL and names only exposed metrics', () => {
    const exprs = [...ruleExprs(rules), ...dashboardExprs(dashboard)];
    expect(exprs.length).toBeGreaterThan(20);
    expect(problemsOf(exprs, exposed)).toEqual([]);
  });

  it('the rule file has the structure Prometheus loads', () => {
    expect(Object.keys(rules)).toEqual(['groups']);
    expect(Array.isArray(rules.groups) && rules.groups.length > 0).toBe(true);
    const groupNames = new Set<string>();
    const alertNames = new Set<string>();
    for (const group of rules.groups as unknown[]) {
      expect(isObject(group)).toBe(true);
      const g = group as Json;
      for (const key of Object.keys(g)) expect(['name', 'interval', 'limit', 'query_offset', 'labels', 'rules']).toContain(key);
      expect(typeof g.name).toBe('string');
      expect(groupNames.has(g.name)).toBe(false);
      groupNames.add(g.name);
      if (g.interval !== undefined) expect(g.interval).toMatch(DURATION);
      expect(Array.isArray(g.rules) && g.rules.length > 0).toBe(true);
      for (const rule of g.rules as unknown[]) {
        expect(isObject(rule)).toBe(true);
        const r = rule as Json;
        const where = `rule ${String(r.alert)}`;
        for (const key of Object.keys(r)) expect({ where, key }).toEqual({ where, key: expect.stringMatching(/^(alert|expr|for|keep_firing_for|labels|annotations)$/) });
        expect(typeof r.alert).toBe('string');
        expect(r.alert).toMatch(/^Hookline[A-Za-z0-9]+$/);
        expect(alertNames.has(r.alert)).toBe(false);
        alertNames.add(r.alert);
        expect({ where, expr: typeof r.expr }).toEqual({ where, expr: 'string' });
        expect({ where, for: r.for }).toEqual({ where, for: expect.stringMatching(DURATION) });
        expect(isObject(r.labels)).toBe(true);
        for (const [k, v] of Object.entries(r.labels as Json)) {
          expect(k).toMatch(LABEL_NAME);
          expect(typeof v).toBe('string');
        }
        expect({ where, severity: (r.labels as Json).severity }).toEqual({ where, severity: expect.stringMatching(/^(critical|warning|info)$/) });
        expect(isObject(r.annotations)).toBe(true);
        for (const [k, v] of Object.entries(r.annotations as Json)) {
          expect(k).toMatch(LABEL_NAME);
          expect(typeof v).toBe('string');
        }
        expect(Object.keys(r.annotations as Json)).toEqual(expect.arrayContaining(['summary', 'description']));
      }
    }
    // the conditions the operations guide promises an alert for
    for (const name of ['HooklineProcessDown', 'HooklineConsumerLagGrowing', 'HooklineBreakerOpen', 'HooklineDeliveryErrorRateHigh', 'HooklineIngestRefusalsSpiking']) expect(alertNames).toContain(name);
  });

  it('the dashboard has the structure Grafana imports, and shows every hookline metric', () => {
    expect(typeof dashboard.title).toBe('string');
    expect(typeof dashboard.uid).toBe('string');
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(39);
    const variables = (dashboard.templating as Json).list as Json[];
    const datasource = variables.find((v) => v.type === 'datasource');
    expect(datasource).toMatchObject({ name: 'datasource', query: 'prometheus' });

    const panels = panelsOf(dashboard);
    expect(panels.length).toBeGreaterThan(10);
    const ids = new Set<number>();
    const boxes: { id: number; x: number; y: number; w: number; h: number }[] = [];
    for (const p of panels) {
      const where = `panel ${String(p.id)} "${String(p.title)}"`;
      expect({ where, id: Number.isInteger(p.id) && p.id > 0 }).toEqual({ where, id: true });
      expect(ids.has(p.id)).toBe(false);
      ids.add(p.id);
      expect(typeof p.type).toBe('string');
      expect(typeof p.title).toBe('string');
      const g = p.gridPos as Json;
      expect({ where, gridPos: ['x', 'y', 'w', 'h'].every((k) => Number.isInteger(g?.[k]) && g[k] >= 0) }).toEqual({ where, gridPos: true });
      expect(g.w).toBeGreaterThan(0);
      expect(g.h).toBeGreaterThan(0);
      expect(g.x + g.w).toBeLessThanOrEqual(24);
      boxes.push({ id: p.id, x: g.x, y: g.y, w: g.w, h: g.h });
      if (p.type === 'row') continue;
      expect({ where, datasource: p.datasource }).toEqual({ where, datasource: { type: 'prometheus', uid: '${datasource}' } });
      expect({ where, targets: Array.isArray(p.targets) && p.targets.length > 0 }).toEqual({ where, targets: true });
      const refIds = new Set<string>();
      for (const t of p.targets as Json[]) {
        expect(typeof t.refId).toBe('string');
        expect(refIds.has(t.refId)).toBe(false);
        refIds.add(t.refId);
        expect(typeof t.expr).toBe('string');
        expect(t.expr.trim()).not.toBe('');
      }
    }
    // no two panels cover the same cell
    for (const a of boxes) {
      for (const b of boxes) {
        if (a.id >= b.id) continue;
        const overlap = a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
        expect({ a: a.id, b: b.id, overlap }).toEqual({ a: a.id, b: b.id, overlap: false });
      }
    }
    // every hookline metric the service exposes has a panel that shows it
    const shown = new Set(dashboardExprs(dashboard).flatMap((e) => parsePromQL(withoutGrafanaVariables(e.expr)).metrics.map((m) => m.replace(/_(bucket|sum|count)$/, ''))));
    const families = [...exposed].filter((n) => n.startsWith('hookline_') && !/_(bucket|sum|count)$/.test(n));
    expect(families.filter((f) => !shown.has(f))).toEqual([]);
  });
});
