// Throughput and error rate over the window, the pipeline's lag per stage and the breakers of the
// tenant's destinations: GET /v1/tenants/{tenant}/stats; attempts per destination and per event
// type over the same window: GET /v1/tenants/{tenant}/analytics.

import { h, replace } from '../dom.js';
import { errorRateChart, groupBars, meter, throughputChart } from '../charts.js';
import { ago, count, percent, short } from '../format.js';

/** What a stage's consumer group does, for the lag table. */
const STAGE_NOTES = {
  validate: 'verify, filter and route',
  deliver: 'HTTP delivery',
  release: 'held deliveries',
  retry: 'delay tiers',
  'evidence-sequencer': 'evidence log',
  sink: 'ClickHouse copies',
};

function card(title, subtitle, ...body) {
  return h('section', { class: 'card' }, h('header', { class: 'card-head' }, h('h2', {}, title), subtitle ? h('span', { class: 'muted small' }, subtitle) : null), ...body);
}

function kpi(name, label, value, note, cls = '') {
  return h('div', { class: `kpi ${cls}`, 'data-kpi': name }, h('div', { class: 'kpi-label' }, label), h('div', { class: 'kpi-value' }, value), h('div', { class: 'kpi-note' }, note));
}

export class Overview {
  constructor(api) {
    this.api = api;
    this.element = h('div', { class: 'overview' }, h('p', { class: 'muted' }, 'Loading…'));
    this.destinations = [];
  }

  async refresh(window) {
    let stats;
    let byDestination;
    let byType;
    try {
      // minute buckets: the widest window (24 h) holds 1,440 of them
      const range = { from: new Date(Date.now() - windowSeconds(window) * 1000).toISOString(), bucket: 'minute' };
      [stats, byDestination, byType] = await Promise.all([
        this.api.get('/stats', { window }),
        this.api.get('/analytics', { ...range, group_by: 'destination' }),
        this.api.get('/analytics', { ...range, group_by: 'event_type' }),
      ]);
    } catch (err) {
      replace(this.element, h('section', { class: 'card' }, h('p', { class: 'form-error' }, `Stats: ${err.message}`)));
      return;
    }
    this.destinations = stats.breakers ?? [];
    const t = stats.totals;
    const maxLag = stats.lag ? Math.max(0, ...stats.lag.stages.map((st) => st.lag)) : null;
    const open = (stats.breakers ?? []).filter((b) => b.state !== 'closed').length;
    const names = new Map((stats.breakers ?? []).map((b) => [b.destination_id, b.name]));
    const bucket = stats.bucket_seconds >= 3600 ? `${stats.bucket_seconds / 3600} h` : `${stats.bucket_seconds / 60} min`;
    replace(
      this.element,
      h(
        'div',
        { class: 'kpis' },
        kpi('attempts', 'Attempts', count(t.attempts), `in the last ${windowText(stats.window_seconds)}`),
        kpi('delivered', 'Delivered', count(t.delivered), t.attempts ? `${percent(t.delivered / t.attempts)} of attempts` : 'no attempts yet', 'tone-ok'),
        kpi('not-delivered', 'Retrying · failed', `${count(t.retrying)} · ${count(t.failed)}`, 'attempts that did not deliver', t.failed > 0 ? 'tone-bad' : t.retrying > 0 ? 'tone-warn' : ''),
        kpi('error-rate', 'Error rate', percent(t.error_rate), 'of attempts in the window', t.error_rate > 0.05 ? 'tone-bad' : t.error_rate > 0 ? 'tone-warn' : 'tone-ok'),
        kpi('lag', 'Pipeline lag', maxLag === null ? '–' : count(maxLag), maxLag === null ? 'Kafka did not answer' : 'records waiting, busiest stage', maxLag > 1000 ? 'tone-warn' : ''),
        kpi('breakers', 'Open breakers', String(open), `of ${count(stats.destinations)} destinations`, open > 0 ? 'tone-bad' : 'tone-ok'),
      ),
      h(
        'div',
        { class: 'grid-charts' },
        card('Throughput', `attempts per ${bucket}`, h('div', { class: 'legend' }, legend('ok', 'delivered'), legend('warn', 'retrying'), legend('bad', 'failed')), throughputChart(stats.buckets)),
        card('Error rate', `per ${bucket}`, h('div', { class: 'legend' }, legend('bad', 'attempts that did not deliver')), errorRateChart(stats.buckets)),
      ),
      h(
        'div',
        { class: 'grid-two', 'data-analytics': 'groups' },
        card('By destination', groupNote(byDestination), groupBars(byDestination.groups, (g) => (g.other ? 'other destinations' : (names.get(g.key) ?? g.key ?? '(none)')))),
        card('By event type', groupNote(byType), groupBars(byType.groups, (g) => (g.other ? 'other types' : (g.key ?? '(no type)')))),
      ),
      h('div', { class: 'grid-two' }, card('Pipeline lag', stats.lag ? `measured ${ago(stats.lag.measured_at)} · all tenants` : 'unavailable', lagTable(stats.lag)), card('Destinations and breakers', `${count(stats.destinations)} destinations`, breakerTable(stats.breakers))),
    );
  }
}

/** `15m`, `6h` in seconds. */
function windowSeconds(window) {
  const m = /^(\d+)([mh])$/.exec(window ?? '1h');
  return m ? Number(m[1]) * (m[2] === 'h' ? 3600 : 60) : 3600;
}

function groupNote(a) {
  const p = a.totals.end_to_end_latency_ms.p95;
  return `attempts, success rate, p95 latency · end to end p95 ${p === null ? '–' : `${count(p)} ms`}`;
}

function windowText(seconds) {
  return seconds % 3600 === 0 ? `${seconds / 3600} h` : `${seconds / 60} min`;
}

function legend(cls, text) {
  return h('span', { class: 'legend-item' }, h('span', { class: `swatch fill-${cls}` }), text);
}

function lagTable(lag) {
  if (!lag) return h('p', { class: 'muted' }, 'Kafka did not answer; the lag is shown again once it does.');
  // a scale of at least 100 records, so that one waiting record does not fill a bar
  const max = Math.max(100, ...lag.stages.map((st) => st.lag));
  return h(
    'table',
    { class: 'table compact' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Stage'), h('th', {}, ''), h('th', { class: 'num' }, 'Waiting'))),
    h(
      'tbody',
      {},
      lag.stages.map((st) =>
        h('tr', { 'data-stage': st.stage }, h('td', {}, h('span', { class: 'mono' }, st.stage), ' ', h('span', { class: 'muted small' }, STAGE_NOTES[st.stage] ?? '')), h('td', { class: 'meter-cell' }, meter(st.lag, max, st.lag > 1000 ? 'warn' : 'accent')), h('td', { class: 'num' }, count(st.lag))),
      ),
    ),
  );
}

function breakerTable(breakers) {
  if (!breakers) return h('p', { class: 'muted' }, 'Redis did not answer; breaker states are shown again once it does.');
  if (breakers.length === 0) return h('p', { class: 'muted' }, 'No destination yet.');
  return h(
    'table',
    { class: 'table compact' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Destination'), h('th', {}, 'Status'), h('th', {}, 'Breaker'))),
    h(
      'tbody',
      {},
      breakers.map((b) =>
        h(
          'tr',
          { 'data-destination': b.destination_id },
          h('td', {}, h('span', { class: 'strong' }, b.name), ' ', h('span', { class: 'mono muted small', title: b.destination_id }, short(b.destination_id, 12))),
          h('td', {}, h('span', { class: `pill ${b.status === 'active' ? 'pill-ok' : 'pill-muted'}` }, b.status)),
          h('td', {}, h('span', { class: `pill ${b.state === 'closed' ? 'pill-ok' : b.state === 'open' ? 'pill-bad' : 'pill-warn'}`, title: b.since ? `since ${b.since}` : 'closed' }, b.state), b.since ? h('span', { class: 'muted small' }, ` ${ago(b.since)}`) : null),
        ),
      ),
    ),
  );
}
