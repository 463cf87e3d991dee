import { derivedId, isId, newId } from '../../core/ids';
import { decodeCursor, encodeCursor } from '../../api/cursor';
import { correlationIdOf } from '../../pipeline/ingest/correlation';

describe('ids', () => {
  it('are typed ULIDs that sort by time', () => {
    const a = newId('event', 1_700_000_000_000);
    const b = newId('event', 1_700_000_000_001);
    expect(isId('event', a)).toBe(true);
    expect(isId('delivery', a)).toBe(false);
    expect(a < b).toBe(true);
  });

  it('derive the same id from the same seed, and different ids otherwise', () => {
    expect(derivedId('delivery', 5, 'evt/dst')).toBe(derivedId('delivery', 5, 'evt/dst'));
    expect(derivedId('delivery', 5, 'evt/dst')).not.toBe(derivedId('delivery', 5, 'evt/dst2'));
  });
});

describe('cursors', () => {
  it('round-trip and refuse other filters or tampering', () => {
    const c = encodeCursor(['2026-01-01 00:00:00.000', 'dlv_x', 2], { status: 'failed' });
    expect(decodeCursor(c, { status: 'failed' })).toEqual(['2026-01-01 00:00:00.000', 'dlv_x', 2]);
    expect(() => decodeCursor(c, { status: null })).toThrow(/other filters/);
    expect(() => decodeCursor('not-a-cursor', { status: 'failed' })).toThrow(/not one this API issued/);
  });
});

describe('correlation ids', () => {
  it('come from X-Correlation-Id, else traceparent, else are new', () => {
    expect(correlationIdOf({ 'x-correlation-id': 'abc-123' })).toBe('abc-123');
    expect(correlationIdOf({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' })).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(correlationIdOf({ 'x-correlation-id': 'has space' })).toMatch(/^cor_/);
    expect(correlationIdOf({})).toMatch(/^cor_/);
  });
});
