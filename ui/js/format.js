// How times, numbers and ids read on the page.

const pad = (n) => String(n).padStart(2, '0');

/** `2026-01-02 03:04:05` in local time, and the ISO text it came from as a tooltip. */
export function dateTime(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso ?? '');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** `05:47:48` today, `2026-01-02 05:47` another day: for table cells (the full time goes in the title). */
export function when(iso, now = new Date()) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso ?? '');
  const today = d.getFullYear() === now.getFullYear() && d.getMonth() === now.getMonth() && d.getDate() === now.getDate();
  return today ? `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}` : `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function clock(iso) {
  const d = new Date(iso);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** "4 s ago", "3 min ago", "2 h ago". */
export function ago(iso, now = Date.now()) {
  const s = Math.max(0, Math.round((now - new Date(iso).getTime()) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86_400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86_400)} d ago`;
}

export function count(n) {
  return new Intl.NumberFormat('en').format(n);
}

export function percent(rate) {
  if (rate === null || rate === undefined) return '–';
  const p = rate * 100;
  return `${p === 0 || p >= 10 ? p.toFixed(0) : p.toFixed(1)}%`;
}

/** A long id or hash shortened for a table cell (the whole one is in its title). */
export function short(id, keep = 10) {
  const text = String(id ?? '');
  return text.length <= keep + 6 ? text : `${text.slice(0, keep)}…${text.slice(-4)}`;
}

export function bytes(n) {
  if (n === null || n === undefined) return '–';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** A value of an <input type="datetime-local"> (local time) as RFC 3339, or null when empty. */
export function localInputToIso(value) {
  if (!value) return null;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}
