import { clickHouseTimeOf, cursorFiltersOf, searchFiltersOf } from '../../api/routes/deliveries-query';
import { AppError } from '../../core/errors';
import { likePattern, NO_SEARCH } from '../../platform/clickhouse/deliveries-list';

const fieldsOf = (query: Record<string, unknown>): string[] => {
  try {
    searchFiltersOf(query);
    return [];
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return ((err as AppError).extra.errors as { field: string }[]).map((e) => e.field);
  }
};

describe('search filters', () => {
  it.each([
    ['2026-01-02T03:04:05Z', '2026-01-02 03:04:05.000'],
    ['2026-01-02t03:04:05.5z', '2026-01-02 03:04:05.500'],
    ['2026-01-02T03:04:05.123456+02:00', '2026-01-02 01:04:05.123'],
    ['2024-02-29T00:00:00-01:30', '2024-02-29 01:30:00.000'],
  ])('reads the RFC 3339 time %s as UTC %s', (raw, want) => {
    expect(clickHouseTimeOf(raw)).toBe(want);
  });

  it.each(['2026-01-02', '2026-01-02 03:04:05Z', '2026-02-29T00:00:00Z', '2026-13-01T00:00:00Z', '2026-01-02T24:00:00Z', '2026-01-02T03:04:05', 'now', '1800-01-01T00:00:00Z'])('refuses %s as a time', (raw) => {
    expect(clickHouseTimeOf(raw)).toBeNull();
  });

  it('reads codes and classes, and names every bad parameter at once', () => {
    expect(searchFiltersOf({ response_code: '5xx' }).responseCode).toEqual({ min: 500, max: 599 });
    expect(searchFiltersOf({ response_code: '404' }).responseCode).toEqual({ min: 404, max: 404 });
    expect(searchFiltersOf({})).toEqual(NO_SEARCH);
    expect(fieldsOf({ response_code: '600' })).toEqual(['response_code']);
    expect(fieldsOf({ destination_id: ['a', 'b'], event_type: '', from: 'x', to: 'y', response_code: '5', q: 'x'.repeat(201) })).toEqual(['destination_id', 'event_type', 'from', 'to', 'response_code', 'q']);
    expect(fieldsOf({ from: '2026-01-02T00:00:00Z', to: '2026-01-02T00:00:00Z' })).toEqual(['to']);
  });

  it('binds cursors to the given filters only', () => {
    expect(cursorFiltersOf(null, NO_SEARCH)).toEqual({ status: null });
    expect(cursorFiltersOf('failed', { ...NO_SEARCH, responseCode: { min: 500, max: 599 }, text: 'x' })).toEqual({ status: 'failed', response_code: '500-599', q: 'x' });
  });

  it('matches text literally and ignoring case', () => {
    expect(likePattern('Quota 50%_off\\')).toBe('%quota 50\\%\\_off\\\\%');
  });
});
