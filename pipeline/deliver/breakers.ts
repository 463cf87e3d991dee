import CircuitBreaker from 'opossum';
import type { PeerAdmission } from './peer-breakers';

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

/** The breakers of the other deliver processes, asked before an attempt this process's breaker lets through. */
export interface PeerBreakersPort {
  admit(destinationId: string): PeerAdmission;
  settle(destinationId: string, admission: PeerAdmission, healthy: boolean): void;
}

/** A delivery held because another process's breaker is open: it waits as behind this process's own. */
export class HeldByPeer extends Error {
  readonly code = 'EOPENBREAKER';
  constructor(readonly reopensAt: number) {
    super('the destination\'s circuit breaker is open in another deliver process');
  }
}

/**
 * One opossum breaker per destination, kept in this process. While a destination's breaker is
 * open its deliveries are not attempted at all; the other destinations have their own. While
 * this process's breaker is closed, the breakers other deliver processes hold for the
 * destination (`peers`) may hold its deliveries too.
 */
export class Breakers {
  private readonly byDestination = new Map<string, { breaker: CircuitBreaker<[() => Promise<unknown>], unknown>; openedAt: number }>();

  constructor(
    private readonly settings: BreakerSettings,
    private readonly onChange: (destinationId: string, state: BreakerState, tenantId: string) => void = () => undefined,
    private readonly peers?: PeerBreakersPort,
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

  /** Runs `action` through the destination's breaker; rejects with code EOPENBREAKER when open here or held by a peer. */
  async run<T>(destination: { id: string; tenant_id: string }, action: () => Promise<T>): Promise<T> {
    const { breaker } = this.entry(destination.id, destination.tenant_id);
    // this process's own open or half-open breaker decides alone: it knows the destination first-hand
    if (!this.peers || !breaker.closed) return breaker.fire(action) as Promise<T>;
    const admission = this.peers.admit(destination.id);
    if (admission.kind === 'hold') throw new HeldByPeer(admission.until);
    let healthy = false;
    try {
      const result = (await breaker.fire(action)) as T;
      healthy = true;
      return result;
    } finally {
      this.peers.settle(destination.id, admission, healthy);
    }
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

/** When a delivery held by a peer's breaker may be tried again; undefined for this process's own breaker. */
export function peerReopensAt(err: unknown): number | undefined {
  return err instanceof HeldByPeer ? err.reopensAt : undefined;
}

export function isOpenBreaker(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'EOPENBREAKER';
}
