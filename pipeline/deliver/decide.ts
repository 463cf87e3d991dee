import { delayBefore } from '../../core/retry-schedule';

/** What one attempt came to, as far as the decision needs it. */
export type AttemptResult =
  | { kind: 'response'; status: number; retryAfterMs: number | null }
  /** A broker destination's broker acknowledged the message. */
  | { kind: 'acked' }
  | { kind: 'error'; message: string; refused: boolean }
  | { kind: 'breaker-open'; reopensAt: number };

export type Decision =
  | { action: 'delivered' }
  /** Try again at `at`, as attempt `attempt`. */
  | { action: 'retry'; at: number; attempt: number; reason: string }
  /** No attempt was made (the breaker is open): wait, keeping the attempt number. */
  | { action: 'wait'; at: number; reason: string }
  /** `exhausted`: the schedule has no attempt left (rather than an answer that is final at once). */
  | { action: 'dead'; reason: string; disableDestination: boolean; exhausted?: true };

/** The longest Retry-After we honour; beyond it the schedule's own wait applies. */
export const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/** Retry-After as delta seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return null;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1_000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

export function describe(result: AttemptResult): string {
  switch (result.kind) {
    case 'response':
      return `the destination answered ${result.status}`;
    case 'acked':
      return 'the broker acknowledged the message';
    case 'error':
      return result.message;
    case 'breaker-open':
      return 'the destination\'s circuit breaker is open';
  }
}

/**
 * The one place that decides what follows an attempt. 2xx (or a broker's acknowledgement) delivers; 410 Gone is final and
 * disables the destination; a refused target (SSRF guard) is final; anything else — other
 * status codes including 3xx, timeouts, connection errors — retries on the schedule, later
 * when a 429 or 503 asks for it with Retry-After, until the schedule is exhausted.
 */
export function decide(result: AttemptResult, attempt: number, schedule: number[], now: number, random = Math.random): Decision {
  if (result.kind === 'breaker-open') {
    return { action: 'wait', at: Math.max(result.reopensAt, now), reason: describe(result) };
  }
  if (result.kind === 'acked' || (result.kind === 'response' && result.status >= 200 && result.status < 300)) return { action: 'delivered' };
  const reason = describe(result);
  if (result.kind === 'response' && result.status === 410) {
    return { action: 'dead', reason: `${reason} (Gone): the destination is disabled`, disableDestination: true };
  }
  if (result.kind === 'error' && result.refused) return { action: 'dead', reason, disableDestination: false };
  const wait = delayBefore(schedule, attempt + 1, 0.1, random);
  if (wait === undefined) {
    return { action: 'dead', reason: `retries exhausted after ${attempt} attempts; last: ${reason}`, disableDestination: false, exhausted: true };
  }
  let delay = wait;
  if (result.kind === 'response' && (result.status === 429 || result.status === 503) && result.retryAfterMs !== null) {
    delay = Math.max(wait, Math.min(result.retryAfterMs, MAX_RETRY_AFTER_MS));
  }
  return { action: 'retry', at: now + delay, attempt: attempt + 1, reason };
}
