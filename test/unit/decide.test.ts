import fc from 'fast-check';
import { decide, parseRetryAfter, MAX_RETRY_AFTER_MS } from '../../pipeline/deliver/decide';

const schedule = [0, 1_000, 2_000];
const noJitter = () => 0.5;

describe('what follows a delivery attempt', () => {
  it('delivers on any 2xx', () => {
    fc.assert(fc.property(fc.integer({ min: 200, max: 299 }), (status) => decide({ kind: 'response', status, retryAfterMs: null }, 1, schedule, 0, noJitter).action === 'delivered'));
  });

  it('retries 3xx, 4xx and 5xx (but 410) on the schedule, and gives up when it is exhausted', () => {
    for (const status of [301, 302, 307, 400, 404, 408, 500, 502]) {
      expect(decide({ kind: 'response', status, retryAfterMs: null }, 1, schedule, 0, noJitter)).toEqual({ action: 'retry', at: 1_000, attempt: 2, reason: `the destination answered ${status}` });
      expect(decide({ kind: 'response', status, retryAfterMs: null }, 3, schedule, 0, noJitter)).toMatchObject({ action: 'dead', disableDestination: false, reason: expect.stringMatching(/retries exhausted after 3 attempts/) });
    }
  });

  it('disables the destination on 410 and never retries a refused target', () => {
    expect(decide({ kind: 'response', status: 410, retryAfterMs: null }, 1, schedule, 0)).toMatchObject({ action: 'dead', disableDestination: true });
    expect(decide({ kind: 'error', message: 'refused: loopback', refused: true }, 1, schedule, 0)).toMatchObject({ action: 'dead', disableDestination: false });
    expect(decide({ kind: 'error', message: 'timeout', refused: false }, 1, schedule, 0, noJitter)).toMatchObject({ action: 'retry', attempt: 2 });
  });

  it('waits at least Retry-After on 429 and 503, capped at a day, and not on other codes', () => {
    expect(decide({ kind: 'response', status: 429, retryAfterMs: 60_000 }, 1, schedule, 0, noJitter)).toMatchObject({ action: 'retry', at: 60_000 });
    expect(decide({ kind: 'response', status: 503, retryAfterMs: 10 }, 1, schedule, 0, noJitter)).toMatchObject({ action: 'retry', at: 1_000 });
    expect(decide({ kind: 'response', status: 429, retryAfterMs: 10 * MAX_RETRY_AFTER_MS }, 1, schedule, 0, noJitter)).toMatchObject({ at: MAX_RETRY_AFTER_MS });
    expect(decide({ kind: 'response', status: 500, retryAfterMs: 60_000 }, 1, schedule, 0, noJitter)).toMatchObject({ at: 1_000 });
  });

  it('keeps the attempt number while the breaker is open', () => {
    expect(decide({ kind: 'breaker-open', reopensAt: 5_000 }, 2, schedule, 1_000)).toEqual({ action: 'wait', at: 5_000, reason: "the destination's circuit breaker is open" });
  });

  it('spreads retries by ±10%', () => {
    fc.assert(fc.property(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (r) => {
      const d = decide({ kind: 'response', status: 500, retryAfterMs: null }, 1, schedule, 0, () => r);
      return d.action === 'retry' && d.at >= 900 && d.at <= 1_100;
    }));
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(parseRetryAfter('120', 0)).toBe(120_000);
    expect(parseRetryAfter(new Date(30_000).toUTCString(), 0)).toBe(30_000);
    expect(parseRetryAfter('soon', 0)).toBeNull();
    expect(parseRetryAfter(undefined, 0)).toBeNull();
  });
});
