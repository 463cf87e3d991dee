import type { DeliveryTask } from '../../platform/avro/records';
import type { AttemptResult } from './decide';

/** What one finished attempt came to: enough to write its outcome again without sending it again. */
export interface FinishedAttempt {
  result: Exclude<AttemptResult, { kind: 'breaker-open' }>;
  durationMs: number;
  attemptedAt: number;
  /** The start of the response body (ATTEMPT_MARK_BODY_BYTES at most). */
  responseBody?: Buffer;
  /** SHA-256 of the body sent, when a transformation made it another than the task's. */
  sentSha256?: string;
}

/** Bytes of a response body a mark keeps: an outcome written again from a mark shows this much. */
export const ATTEMPT_MARK_BODY_BYTES = 256;

/**
 * Marks of finished attempts, shared by every deliver process of a deployment (Redis), so that
 * a delivery read again after a rebalance, a coordinator move or a restart is not sent again
 * when its attempt had finished. Marks are written in batches (no call per attempt) and kept for
 * a bounded time; they are read only for uncertain inputs (StageContext.uncertain). Both are
 * best effort: a mark not written or not read in time means the attempt is made again
 * (at-least-once, as without marks).
 */
export interface AttemptMarks {
  /** The finished attempt of this task's delivery and attempt number, if one is marked. */
  recall(task: DeliveryTask): Promise<FinishedAttempt | undefined>;
  /** Marks a finished attempt (written with the next batch). */
  note(task: DeliveryTask, attempt: FinishedAttempt): void;
}

/** The key of a task's attempt: its delivery and attempt number. */
export const attemptKey = (task: Pick<DeliveryTask, 'delivery_id' | 'attempt'>): string => `${task.delivery_id}:${task.attempt}`;

/** What the marks are kept in: short-lived strings by key, written in batches (platform/redis/batched-marks.ts). */
export interface MarkStore {
  set(key: string, value: string): void;
  get(key: string): Promise<string | undefined>;
}

interface Stored {
  /** The result. */
  r: FinishedAttempt['result'];
  /** Duration, ms. */
  d: number;
  /** Attempted at, epoch ms. */
  a: number;
  /** The start of the response body, base64. */
  b?: string;
  /** SHA-256 of the body sent, when not the task's. */
  h?: string;
}

/** Attempt marks kept in `store` under `attempt:<delivery>:<attempt>`. */
export function attemptMarksIn(store: MarkStore): AttemptMarks {
  return {
    async recall(task) {
      const raw = await store.get(`attempt:${attemptKey(task)}`);
      if (raw === undefined) return undefined;
      try {
        const s = JSON.parse(raw) as Stored;
        return { result: s.r, durationMs: s.d, attemptedAt: s.a, ...(s.b === undefined ? {} : { responseBody: Buffer.from(s.b, 'base64') }), ...(s.h === undefined ? {} : { sentSha256: s.h }) };
      } catch {
        return undefined;
      }
    },
    note(task, attempt) {
      const stored: Stored = { r: attempt.result, d: attempt.durationMs, a: attempt.attemptedAt };
      if (attempt.sentSha256) stored.h = attempt.sentSha256;
      if (attempt.responseBody && attempt.responseBody.length > 0) stored.b = attempt.responseBody.subarray(0, ATTEMPT_MARK_BODY_BYTES).toString('base64');
      store.set(`attempt:${attemptKey(task)}`, JSON.stringify(stored));
    },
  };
}
