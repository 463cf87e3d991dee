// The page's own SVG charts: stacked bars of attempts per bucket, and the error rate as a line.
// Drawn from numbers only; labels go in as text nodes.

import { s } from './dom.js';
import { clock, count, percent } from './format.js';

const M = { top: 14, right: 14, bottom: 26, left: 46 };

/** A round upper bound for an axis and its tick step: 0-1-2-5 steps, about four ticks. */
export function niceScale(max, ticks = 4) {
  if (!(max > 0)) return { max: ticks, step: 1 };
  const raw = max / ticks;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((v) => v >= raw) ?? 10 * magnitude;
  return { max: Math.ceil(max / step) * step, step };
}

function frame(width, height, label) {
  return s('svg', { viewBox: `0 0 ${width} ${height}`, class: 'chart', role: 'img', 'aria-label': label });
}

function axes(svg, { width, height, yMax, yStep, yLabel, buckets, x }) {
  const plotH = height - M.top - M.bottom;
  const y = (v) => M.top + plotH - (v / yMax) * plotH;
  for (let v = 0; v <= yMax + 1e-9; v += yStep) {
    svg.append(s('line', { x1: M.left, x2: width - M.right, y1: y(v), y2: y(v), class: v === 0 ? 'axis' : 'grid' }));
    svg.append(s('text', { x: M.left - 8, y: y(v) + 4, class: 'tick', 'text-anchor': 'end' }, yLabel(v)));
  }
  const every = Math.max(1, Math.ceil(buckets.length / 7));
  buckets.forEach((b, i) => {
    if (i % every !== 0) return;
    svg.append(s('text', { x: x(i), y: height - 8, class: 'tick', 'text-anchor': 'middle' }, clock(b.start)));
  });
  return y;
}

/** Attempts per bucket, stacked: delivered, retrying, failed. */
export function throughputChart(buckets, { width = 780, height = 230 } = {}) {
  const svg = frame(width, height, 'Delivery attempts per bucket by outcome');
  const totals = buckets.map((b) => b.delivered + b.retrying + b.failed);
  const { max: yMax, step } = niceScale(Math.max(0, ...totals));
  const plotW = width - M.left - M.right;
  const slot = plotW / Math.max(1, buckets.length);
  const barW = Math.max(1, Math.min(28, slot * 0.72));
  const x = (i) => M.left + slot * i + slot / 2;
  const y = axes(svg, { width, height, yMax, yStep: step, yLabel: (v) => count(v), buckets, x });
  buckets.forEach((b, i) => {
    const group = s('g', { class: 'bar' }, s('title', {}, `${clock(b.start)}: ${count(b.delivered)} delivered, ${count(b.retrying)} retrying, ${count(b.failed)} failed`));
    let base = 0;
    for (const [key, cls] of [['delivered', 'ok'], ['retrying', 'warn'], ['failed', 'bad']]) {
      const v = b[key];
      if (v <= 0) continue;
      group.append(s('rect', { x: x(i) - barW / 2, y: y(base + v), width: barW, height: Math.max(0.5, y(base) - y(base + v)), class: `fill-${cls}`, rx: Math.min(2, barW / 4) }));
      base += v;
    }
    // the whole slot answers the hover, not only the bar
    group.append(s('rect', { x: M.left + slot * i, y: M.top, width: slot, height: height - M.top - M.bottom, class: 'hover' }));
    svg.append(group);
  });
  if (totals.every((t) => t === 0)) svg.append(s('text', { x: M.left + plotW / 2, y: M.top + (height - M.top - M.bottom) / 2, class: 'empty', 'text-anchor': 'middle' }, 'No delivery attempts in this window'));
  return svg;
}

/** The share of attempts that did not deliver, per bucket; buckets without attempts leave a gap. */
export function errorRateChart(buckets, { width = 510, height = 230 } = {}) {
  const svg = frame(width, height, 'Error rate per bucket');
  const rates = buckets.map((b) => {
    const all = b.delivered + b.retrying + b.failed;
    return all === 0 ? null : (b.retrying + b.failed) / all;
  });
  const top = Math.max(0.05, ...rates.filter((r) => r !== null));
  const { max: yMax, step } = niceScale(top * 100, 3);
  const plotW = width - M.left - M.right;
  const slot = plotW / Math.max(1, buckets.length);
  const x = (i) => M.left + slot * i + slot / 2;
  const y = axes(svg, { width, height, yMax: yMax / 100, yStep: step / 100, yLabel: (v) => `${Math.round(v * 100)}%`, buckets, x });
  let run = [];
  const flush = () => {
    if (run.length === 0) return;
    const baseY = y(0);
    const points = run.map(([i, r]) => `${x(i).toFixed(1)},${y(r).toFixed(1)}`);
    if (run.length > 1) svg.append(s('polygon', { points: `${x(run[0][0]).toFixed(1)},${baseY} ${points.join(' ')} ${x(run[run.length - 1][0]).toFixed(1)},${baseY}`, class: 'area-bad' }));
    svg.append(s('polyline', { points: points.join(' '), class: 'line-bad' }));
    run = [];
  };
  rates.forEach((r, i) => {
    if (r === null) return flush();
    run.push([i, r]);
    svg.append(s('circle', { cx: x(i), cy: y(r), r: 2.5, class: 'dot-bad' }, s('title', {}, `${clock(buckets[i].start)}: ${percent(r)} of attempts did not deliver`)));
  });
  flush();
  return svg;
}

/** A small horizontal bar of `value` out of `max`, for tables. */
export function meter(value, max, cls = 'ok') {
  const width = 120;
  const svg = s('svg', { viewBox: `0 0 ${width} 8`, class: 'meter', 'aria-hidden': 'true' });
  svg.append(s('rect', { x: 0, y: 0, width, height: 8, rx: 4, class: 'meter-track' }));
  const w = max > 0 ? Math.max(value > 0 ? 3 : 0, (value / max) * width) : 0;
  if (w > 0) svg.append(s('rect', { x: 0, y: 0, width: w, height: 8, rx: 4, class: `fill-${cls}` }));
  return svg;
}

/**
 * Attempts per group over the window (GET .../analytics with group_by), one row each: the name,
 * a bar stacked by outcome on a scale shared by the rows, and the success rate and p95 latency.
 */
export function groupBars(groups, labelOf, { width = 510, row = 26, label = 150 } = {}) {
  const height = Math.max(1, groups.length) * row + 6;
  const svg = frame(width, height, 'Delivery attempts per group by outcome');
  const note = 130;
  const plotW = width - label - note - 12;
  const max = Math.max(1, ...groups.map((g) => g.totals.attempts));
  groups.forEach((g, i) => {
    const t = g.totals;
    const top = 3 + i * row;
    const name = labelOf(g);
    const group = s('g', { class: 'bar', 'data-group': g.other ? 'other' : (g.key ?? '') }, s('title', {}, `${name}: ${count(t.delivered)} delivered, ${count(t.retrying)} retrying, ${count(t.failed)} failed; p50 ${t.attempt_latency_ms.p50 ?? '–'} ms, p95 ${t.attempt_latency_ms.p95 ?? '–'} ms`));
    group.append(s('text', { x: label - 8, y: top + row / 2 + 4, class: 'tick', 'text-anchor': 'end' }, name.length > 22 ? `${name.slice(0, 21)}…` : name));
    let base = 0;
    for (const [key, cls] of [['delivered', 'ok'], ['retrying', 'warn'], ['failed', 'bad']]) {
      const v = t[key];
      if (v <= 0) continue;
      group.append(s('rect', { x: label + (base / max) * plotW, y: top + 4, width: Math.max(0.5, (v / max) * plotW), height: row - 10, class: `fill-${cls}`, rx: 2 }));
      base += v;
    }
    const p95 = t.attempt_latency_ms.p95;
    group.append(s('text', { x: width - 4, y: top + row / 2 + 4, class: 'tick', 'text-anchor': 'end' }, `${t.success_rate === null ? '–' : percent(t.success_rate)} · p95 ${p95 === null ? '–' : `${count(p95)} ms`}`));
    svg.append(group);
  });
  if (groups.length === 0) svg.append(s('text', { x: width / 2, y: row / 2 + 6, class: 'empty', 'text-anchor': 'middle' }, 'No delivery attempts in this window'));
  return svg;
}
