/**
 * The lines of ordered destinations in one deliver process. The runner gives an ordered
 * destination one delivery at a time, in the order of its partition; this decides how long one
 * delivery that cannot go yet (a retry, its open breaker, a send slot) may keep the deliveries
 * behind it waiting, instead of leaving its place for the delay topics. docs/ordering.md says
 * what that guarantees.
 *
 * A delivery waits in line while its wait ends within `maxWaitMs` of its first attempt in line.
 * One that must wait longer leaves the line, and the line is broken: until an attempt to the
 * destination is delivered again, each delivery behind it leaves at its first wait too, so that
 * an outage costs one attempt per delivery rather than `maxWaitMs` each. Waits end early, and
 * the delivery leaves the line, once the process stops.
 */
export class OrderedLines {
  private readonly broken = new Set<string>();
  private readonly sleeping = new Set<() => void>();
  private stopped = false;

  constructor(
    /** DELIVERY_ORDERED_WAIT_MS. */
    readonly maxWaitMs: number,
  ) {}

  /** Whether a delivery of the destination whose first attempt in line was at `since` may wait in line until `until` (epoch ms). */
  mayWait(destinationId: string, since: number, until: number): boolean {
    return !this.stopped && !this.broken.has(destinationId) && until - since <= this.maxWaitMs;
  }

  /** A delivery left the line: the ones behind it do not wait in line until one is delivered. */
  left(destinationId: string): void {
    this.broken.add(destinationId);
  }

  /** An attempt was delivered: the destination's line waits again. */
  delivered(destinationId: string): void {
    this.broken.delete(destinationId);
  }

  /** Whether a delivery of the destination left the line and none was delivered since. */
  isBroken(destinationId: string): boolean {
    return this.broken.has(destinationId);
  }

  /** Sleeps `ms`; false when the process began to stop first (or had). */
  wait(ms: number): Promise<boolean> {
    if (this.stopped) return Promise.resolve(false);
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.sleeping.delete(wake);
        resolve(false);
      };
      const timer = setTimeout(() => {
        this.sleeping.delete(wake);
        resolve(true);
      }, Math.max(0, ms));
      this.sleeping.add(wake);
    });
  }

  /** The process stops: every wait in line ends now, and none begins. */
  stop(): void {
    this.stopped = true;
    for (const wake of [...this.sleeping]) wake();
  }
}
