import type { Destination } from '../../core/model';
import type { DeliveryTask } from '../../platform/avro/records';

/**
 * What pacing needs of the deployment-wide limiter: the destination's next send slot, as epoch
 * ms of the limiter's clock (hosts are assumed to keep their clocks in step, as for `not_before`).
 */
export interface SendSlots {
  reserve(destinationId: string, ratePerSecond: number): Promise<number>;
}

export interface PaceOptions {
  /**
   * Longest wait for a slot spent in this process; a longer one is spent in the delay topics and
   * the task comes back this long before its slot. More than the shortest delay tier, so that the
   * last hop (which may overshoot by up to that tier) lands before the slot with room for lag.
   */
  shortWaitMs: number;
  /**
   * The most a send may lag its slot and still go on it (see lateAllowance): late sends (a batch
   * of late returns from the delay topics, timers that fire late on a busy event loop) would
   * otherwise go out together.
   */
  lateMs: number;
  /** With the limiter unreachable, the task waits this long in the delay topics and asks again. */
  unreachableWaitMs: number;
}

/** Go now with the slot held (`task.slot_at` set), or wait in the delay topics as `task` says. */
export type Paced = { action: 'go'; task: DeliveryTask } | { action: 'wait'; task: DeliveryTask; reason: string };

/**
 * How late after its slot a send may still go on it: half an interval, but at least 100 ms (a
 * timer on a busy event loop, a batch back from the delay topics), and never more than `capMs`.
 * A send later than that takes a new slot; within it, the sends of any second stay within the
 * slots of that second and the 100 ms before it, so at most about a tenth over the limit, while
 * the average never exceeds it. A tighter allowance wastes slots (each late send gives one up)
 * and keeps a busy destination well under its limit.
 */
export function lateAllowance(capMs: number, ratePerSecond: number): number {
  return Math.min(capMs, Math.max(100, 500 / ratePerSecond));
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A destination's rate limit (rate_limit_per_s) for every deliver process at once: each attempt
 * holds one send slot reserved in Redis (one call per attempt; an attempt that holds a slot
 * does not reserve again) and is not made before it. Deliveries wait, they are never dropped;
 * destinations without a limit cost nothing. Redis away: the attempt waits and asks again, it
 * never goes over the limit unmetered.
 */
export class Pacer {
  constructor(
    private readonly slots: SendSlots,
    private readonly options: PaceOptions,
    private readonly now: () => number = Date.now,
  ) {}

  /** True when the destination has a limit to keep. */
  static limits(destination: Destination): destination is Destination & { rate_limit_per_s: number } {
    return typeof destination.rate_limit_per_s === 'number' && destination.rate_limit_per_s > 0;
  }

  /** The slot the task holds, or a new one; undefined when the limiter does not answer. */
  private async slotOf(task: DeliveryTask, destination: Destination & { rate_limit_per_s: number }): Promise<number | undefined> {
    const lateMs = lateAllowance(this.options.lateMs, destination.rate_limit_per_s);
    if (task.slot_at != null && this.now() - task.slot_at <= lateMs) return task.slot_at;
    try {
      // Avro longs: whole milliseconds, never before the slot
      return Math.ceil(await this.slots.reserve(destination.id, destination.rate_limit_per_s));
    } catch {
      return undefined;
    }
  }

  /**
   * Before the attempt, outside the per-destination concurrency (the runner's `prepare`): a task
   * due now takes its slot and sleeps until it when it is near, so that a paced destination's
   * waits hold none of the requests it may have in flight. Anything else is left to `pace`.
   */
  async prepare(task: DeliveryTask, destination: Destination | undefined): Promise<DeliveryTask> {
    if (!destination || destination.status !== 'active' || !Pacer.limits(destination) || task.not_before > this.now() + 50) return task;
    const slot = await this.slotOf(task, destination);
    if (slot === undefined) return task;
    const wait = slot - this.now();
    if (wait > 0 && wait <= this.options.shortWaitMs) await sleep(wait);
    return { ...task, slot_at: slot };
  }

  /** Right before the attempt: go (after a short wait for the slot) or wait in the delay topics. */
  async pace(task: DeliveryTask, destination: Destination & { rate_limit_per_s: number }): Promise<Paced> {
    const slot = await this.slotOf(task, destination);
    if (slot === undefined) {
      return { action: 'wait', task: { ...task, slot_at: null, not_before: this.now() + this.options.unreachableWaitMs }, reason: 'rate limiter not reachable' };
    }
    const wait = slot - this.now();
    if (wait > this.options.shortWaitMs) return { action: 'wait', task: { ...task, slot_at: slot, not_before: slot - this.options.shortWaitMs }, reason: 'rate limit' };
    if (wait > 0) {
      await sleep(wait);
      // a timer that fired late is a late send: the slot is checked again
      if (this.now() - slot > lateAllowance(this.options.lateMs, destination.rate_limit_per_s)) return this.pace({ ...task, slot_at: slot }, destination);
    }
    return { action: 'go', task: { ...task, slot_at: slot } };
  }
}
