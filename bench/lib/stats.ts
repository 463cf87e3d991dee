/** Small statistics over samples, shared by the benchmarks. */

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The q-quantile by nearest rank (no interpolation: every value reported was observed). */
export function quantile(xs: number[], q: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

export function median(xs: number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export const round = (x: number, digits = 2) => (Number.isFinite(x) ? +x.toFixed(digits) : x);

export function summary(xs: number[]) {
  // a loop, not Math.max(...xs): a saturated run has more samples than a call takes arguments
  return { p50: round(quantile(xs, 0.5)), p99: round(quantile(xs, 0.99)), max: round(xs.reduce((m, x) => (x > m ? x : m), xs.length ? -Infinity : Number.NaN)), n: xs.length };
}

/** Median and min/max of one figure over repetitions. */
export function overReps(values: number[], digits = 2): { value: number; spread: { min: number; max: number } } {
  return { value: round(median(values), digits), spread: { min: round(Math.min(...values), digits), max: round(Math.max(...values), digits) } };
}

/** Least-squares slope of y over x (units of y per unit of x); 0 for fewer than two points. */
export function slope(points: { x: number; y: number }[]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((a, p) => a + p.x, 0) / n;
  const my = points.reduce((a, p) => a + p.y, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.x - mx) * (p.y - my);
    den += (p.x - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}
