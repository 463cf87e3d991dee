import { AppError } from '../../core/errors';
import type { SearchFilters } from '../../platform/clickhouse/deliveries-list';

/** Longest `q` and `event_type` the search takes. */
export const MAX_SEARCH_TEXT = 200;

/** RFC 3339 date-time: a date, `T`, a time with optional fraction, `Z` or an offset. */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const RESPONSE_CODE = /^([1-5])(\d\d|xx|XX)$/;

type Problem = { field: string; message: string };

/** An RFC 3339 time as ClickHouse takes a DateTime64(3) in UTC, or null when it is not one. */
export function clickHouseTimeOf(raw: string): string | null {
  const m = RFC3339.exec(raw);
  if (!m) return null;
  const [, y, mo, d, h, mi, s] = m.map(Number) as number[];
  // Date.parse would roll 2026-02-31 over to March
  const daysInMonth = new Date(Date.UTC(y!, mo!, 0)).getUTCDate();
  if (mo! < 1 || mo! > 12 || d! < 1 || d! > daysInMonth || h! > 23 || mi! > 59 || s! > 59) return null;
  const ms = Date.parse(raw.toUpperCase());
  if (!Number.isFinite(ms)) return null;
  const date = new Date(ms);
  if (date.getUTCFullYear() < 1900 || date.getUTCFullYear() > 2299) return null;
  return date.toISOString().replace('T', ' ').replace('Z', '');
}

/**
 * The search filters of GET .../deliveries from its query string, every problem at once
 * (400 validation-error naming each parameter). `status` keeps its own answer (422).
 */
export function searchFiltersOf(query: Record<string, unknown>): SearchFilters {
  const errors: Problem[] = [];
  const single = singleParamOf(query, errors);
  const text = textParamOf(single, errors);
  const time = (name: string): string | null => {
    const v = single(name);
    if (v === undefined) return null;
    const t = clickHouseTimeOf(v);
    if (t === null) errors.push({ field: name, message: 'must be an RFC 3339 date-time (2026-01-02T03:04:05Z)' });
    return t;
  };

  const destinationId = text('destination_id');
  const eventType = text('event_type');
  const from = time('from');
  const to = time('to');
  if (from !== null && to !== null && from >= to) errors.push({ field: 'to', message: 'must be later than from' });
  let responseCode: SearchFilters['responseCode'] = null;
  const code = single('response_code');
  if (code !== undefined) {
    const m = RESPONSE_CODE.exec(code);
    if (!m) errors.push({ field: 'response_code', message: 'must be an HTTP status (100 to 599) or a class (1xx to 5xx)' });
    else if (m[2]!.toLowerCase() === 'xx') responseCode = { min: Number(m[1]) * 100, max: Number(m[1]) * 100 + 99 };
    else responseCode = { min: Number(code), max: Number(code) };
  }
  const q = text('q');
  if (errors.length > 0) throw new AppError('validation-error', errors.map((e) => `${e.field} ${e.message}`).join('; '), { errors });
  return { destinationId, eventType, from, to, responseCode, text: q };
}

/**
 * What a cursor is bound to: the filters that were given (absent ones are left out, so a cursor
 * of the status-only list stays what it was).
 */
export function cursorFiltersOf(status: string | null, f: SearchFilters): Record<string, unknown> {
  const given: Record<string, unknown> = {
    destination_id: f.destinationId,
    event_type: f.eventType,
    from: f.from,
    to: f.to,
    response_code: f.responseCode ? `${f.responseCode.min}-${f.responseCode.max}` : null,
    q: f.text,
  };
  return { status, ...Object.fromEntries(Object.entries(given).filter(([, v]) => v !== null)) };
}

/** A reader of query parameters given at most once: a repeated one is noted in `errors` and read as absent. */
export function singleParamOf(query: Record<string, unknown>, errors: Problem[]): (name: string) => string | undefined {
  return (name) => {
    const v = query[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'string') {
      errors.push({ field: name, message: 'must be given once' });
      return undefined;
    }
    return v;
  };
}

/** A reader of a text parameter of 1 to MAX_SEARCH_TEXT characters; null when absent or refused (noted in `errors`). */
export function textParamOf(single: (name: string) => string | undefined, errors: Problem[]): (name: string) => string | null {
  return (name) => {
    const v = single(name);
    if (v === undefined) return null;
    if (v.length < 1 || v.length > MAX_SEARCH_TEXT) {
      errors.push({ field: name, message: `must be 1 to ${MAX_SEARCH_TEXT} characters` });
      return null;
    }
    return v;
  };
}
