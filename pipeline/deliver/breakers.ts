import CircuitBreaker from 'opossum';

export interface BreakerSettings {
  /** Failures in the rolling window, in percent, that open the breaker. */
  errorThresholdPercentage: number;
  /** Attempts in the rolling window before the percentage counts. */
  volumeThreshold: number;
  /** How long an open breaker waits before letting one trial through (half-open). */
  resetTimeoutMs: number;
  rollingWindowMs: number;
}

export type BreakerState = 'closed' | 'open' | 'half-open';

/** Thrown by an attempt to mark it as a failure of the destination: 5xx, 429, 408, timeouts, connection errors. */
export class DestinationUnhealthy extends Error {}

/**
 * One opossum breaker per destination, kept in this process. While a destination's breaker is
 * open its deliveries are not attempted at all; the other destinations have their own.
 */
export class Breakers {
  private readonly byDestination = new Map<string, { breaker: CircuitBreaker<[() => Promise<unknown>], unknown>; openedAt: number }>();

  constructor(
    private readonly settings: BreakerSettings,
    private readonly onChange: (destinationId: string, state: BreakerState, tenantId: string) => void = () => undefined,
  ) {}

  private entry(destinationId: string, tenantId: string) {
    let e = this.byDestination.get(destinationId);
    if (!e) {
      const breaker = new CircuitBreaker(async (action: () => Promise<unknown>) => action(), {
        timeout: false,
        errorThresholdPercentage: this.settings.errorThresholdPercentage,
        volumeThreshold: this.settings.volumeThreshold,
        resetTimeout: this.settings.resetTimeoutMs,
        rollingCountTimeout: this.settings.rollingWindowMs,
        rollingCountBuckets: 10,
        // only signs of an unhealthy destination count; a 404 or 400 is about the request
        errorFilter: (err: unknown) => !(err instanceof DestinationUnhealthy),
      });
      const created = { breaker, openedAt: 0 };
      breaker.on('open', () => {
        created.openedAt = Date.now();
        this.onChange(destinationId, 'open', tenantId);
      });
      breaker.on('halfOpen', () => this.onChange(destinationId, 'half-open', tenantId));
      breaker.on('close', () => this.onChange(destinationId, 'closed', tenantId));
      this.byDestination.set(destinationId, created);
      e = created;
    }
    return e;
  }

  /** Runs `action` through the destination's breaker; rejects with code EOPENBREAKER when open. */
  run<T>(destination: { id: string; tenant_id: string }, action: () => Promise<T>): Promise<T> {
    return this.entry(destination.id, destination.tenant_id).breaker.fire(action) as Promise<T>;
  }

  state(destinationId: string): BreakerState {
    const e = this.byDestination.get(destinationId);
    if (!e) return 'closed';
    return e.breaker.opened ? 'open' : e.breaker.halfOpen ? 'half-open' : 'closed';
  }

  /** When an open breaker will let a trial through. */
  reopensAt(destinationId: string): number {
    const e = this.byDestination.get(destinationId);
    return e ? e.openedAt + this.settings.resetTimeoutMs : Date.now();
  }

  states(): Record<string, BreakerState> {
    const out: Record<string, BreakerState> = {};
    for (const id of this.byDestination.keys()) out[id] = this.state(id);
    return out;
  }

  shutdown(): void {
    for (const e of this.byDestination.values()) e.breaker.shutdown();
    this.byDestination.clear();
  }
}

export function isOpenBreaker(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'EOPENBREAKER';
}
