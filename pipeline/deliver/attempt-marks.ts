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

/** What claiming a task's attempt found. */
export type Claim =
  /** The attempt is the caller's to make: nobody had claimed it (or the caller had). */
  | { kind: 'taken' }
  /** The attempt was made: its outcome is written again from this, and nothing is sent. */
  | { kind: 'finished'; attempt: FinishedAttempt }
  /** Another process is making it now (since `since`, epoch ms): its mark follows, or its claim expires. */
  | { kind: 'running'; owner: string; since: number }
  /** The store could not say in time (Redis down or slow): the attempt is made (at-least-once). */
  | { kind: 'unknown' };

/**
 * Claims and marks of attempts, shared by every deliver process of a deployment (Redis), so that
 * a delivery read again for any reason (fetched again by the same consumer, read after a
 * rebalance or a restart, or handled by an old owner that has not heard that the group moved on)
 * is never sent twice. Every attempt is claimed before it is sent (`SET NX`, in pipelines, no
 * round trip of its own); once made, its mark replaces the claim, so a task read again finds
 * either the running claim (and waits for its mark) or the mark (and writes that attempt's
 * outcome again). Claims expire after the longest an attempt can take, so a claim whose process
 * died is taken over; marks are kept for a bounded time. Redis being away makes every attempt
 * go ahead (at-least-once, as without marks).
 */
export interface AttemptMarks {
  /** Claims the attempt of this task's delivery and attempt number, or says who has. */
  claim(task: DeliveryTask): Promise<Claim>;
  /** The finished attempt of this task's delivery and attempt number, if one is marked. */
  recall(task: DeliveryTask): Promise<FinishedAttempt | undefined>;
  /** Marks a finished attempt (written with the next batch): it replaces the claim. */
  note(task: DeliveryTask, attempt: FinishedAttempt): void;
  /** Lets go of a claim whose attempt sent nothing (an open breaker, a transformation that dropped it). */
  release(task: DeliveryTask): void;
}

/** The key of a task's attempt: its delivery and attempt number. */
export const attemptKey = (task: Pick<DeliveryTask, 'delivery_id' | 'attempt'>): string => `${task.delivery_id}:${task.attempt}`;

/** What the marks are kept in: short-lived strings by key, written in batches (platform/redis/batched-marks.ts). */
export interface MarkStore {
  set(key: string, value: string): void;
  get(key: string): Promise<string | undefined>;
  /** SET NX PX GET: null when taken, the value there when not, undefined when the store cannot say. */
  claim(key: string, value: string, ttlMs: number): Promise<string | null | undefined>;
  /** Deletes a key (with the next batch). */
  release(key: string): void;
}

/** Who claims, and for how long a claim holds. */
export interface ClaimOptions {
  /** This process (its claims are its own when it reads one back). */
  owner: string;
  /** How long a claim holds before another process may take it over: longer than an attempt can take. */
  ttlMs: number;
}

/** A claim: who, since when. */
interface StoredClaim {
  c: string;
  t: number;
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

/** What a stored value is: a finished attempt, a claim, or neither (unreadable). */
function parse(raw: string): { finished: FinishedAttempt } | { claim: StoredClaim } | undefined {
  try {
    const s = JSON.parse(raw) as Partial<Stored & StoredClaim>;
    if (s.r !== undefined) return { finished: { result: s.r, durationMs: s.d ?? 0, attemptedAt: s.a ?? 0, ...(s.b === undefined ? {} : { responseBody: Buffer.from(s.b, 'base64') }), ...(s.h === undefined ? {} : { sentSha256: s.h }) } };
    if (typeof s.c === 'string') return { claim: { c: s.c, t: typeof s.t === 'number' ? s.t : 0 } };
  } catch {
    /* neither */
  }
  return undefined;
}

/** Attempt claims and marks kept in `store` under `attempt:<delivery>:<attempt>`. */
export function attemptMarksIn(store: MarkStore, claims: ClaimOptions): AttemptMarks {
  return {
    async claim(task) {
      const answer = await store.claim(`attempt:${attemptKey(task)}`, JSON.stringify({ c: claims.owner, t: Date.now() } satisfies StoredClaim), claims.ttlMs);
      if (answer === undefined) return { kind: 'unknown' };
      if (answer === null) return { kind: 'taken' };
      const found = parse(answer);
      if (found === undefined) return { kind: 'unknown' };
      if ('finished' in found) return { kind: 'finished', attempt: found.finished };
      // this process's own claim read back (its attempt ended without a mark): still its own
      return found.claim.c === claims.owner ? { kind: 'taken' } : { kind: 'running', owner: found.claim.c, since: found.claim.t };
    },
    async recall(task) {
      const raw = await store.get(`attempt:${attemptKey(task)}`);
      if (raw === undefined) return undefined;
      const found = parse(raw);
      return found && 'finished' in found ? found.finished : undefined;
    },
    release(task) {
      store.release(`attempt:${attemptKey(task)}`);
    },
    note(task, attempt) {
      const stored: Stored = { r: attempt.result, d: attempt.durationMs, a: attempt.attemptedAt };
      if (attempt.sentSha256) stored.h = attempt.sentSha256;
      if (attempt.responseBody && attempt.responseBody.length > 0) stored.b = attempt.responseBody.subarray(0, ATTEMPT_MARK_BODY_BYTES).toString('base64');
      store.set(`attempt:${attemptKey(task)}`, JSON.stringify(stored));
    },
  };
}
