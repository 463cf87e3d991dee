import { Gauge } from 'prom-client';
import { registry } from './metrics';

export type BreakerStateName = 'closed' | 'half-open' | 'open';

/** The value of `hookline_breaker_state`: 0 closed, 1 half-open, 2 open. */
export const BREAKER_STATE_VALUE: Record<BreakerStateName, number> = { closed: 0, 'half-open': 1, open: 2 };

/**
 * Most destinations `hookline_breaker_state` names. Destinations are created by tenants, so their
 * ids are an unbounded label: only breakers that are not closed are named, and at most this many
 * (`hookline_breakers` counts them all).
 */
export const MAX_NAMED_BREAKERS = 100;

/** The breakers of one process, by destination id. */
export interface BreakerSource {
  states(): Record<string, BreakerStateName>;
  /**
   * Whether the destinations may be named. Destination ids belong to tenants: an endpoint that
   * anyone who reaches the port can read shows counts only.
   */
  nameDestinations: boolean;
}

export interface BreakerSeries {
  counts: Record<BreakerStateName, number>;
  /** Destinations whose breaker is not closed, open ones first, then by id; at most `cap`. */
  named: { destinationId: string; value: number }[];
}

/** The series of the breaker metrics from the states of every breaker: the label cap applied. */
export function breakerSeries(states: Iterable<[destinationId: string, state: BreakerStateName]>, cap = MAX_NAMED_BREAKERS): BreakerSeries {
  const counts: Record<BreakerStateName, number> = { closed: 0, 'half-open': 0, open: 0 };
  const notClosed: { destinationId: string; value: number }[] = [];
  for (const [destinationId, state] of states) {
    counts[state]++;
    if (state !== 'closed') notClosed.push({ destinationId, value: BREAKER_STATE_VALUE[state] });
  }
  notClosed.sort((a, b) => b.value - a.value || (a.destinationId < b.destinationId ? -1 : a.destinationId > b.destinationId ? 1 : 0));
  return { counts, named: notClosed.slice(0, cap) };
}

const sources = new Set<BreakerSource>();

/** Keeps the worse of a destination's states (several sources may hold one destination). */
function keepWorst(into: Map<string, BreakerStateName>, id: string, state: BreakerStateName): void {
  const before = into.get(id);
  if (before === undefined || BREAKER_STATE_VALUE[state] > BREAKER_STATE_VALUE[before]) into.set(id, state);
}

/** The series of every watched source: all counted, only those of sources that may name them named. */
function currentSeries(): BreakerSeries {
  const all = new Map<string, BreakerStateName>();
  const nameable = new Map<string, BreakerStateName>();
  for (const source of sources) {
    for (const [id, state] of Object.entries(source.states())) {
      keepWorst(all, id, state);
      if (source.nameDestinations) keepWorst(nameable, id, state);
    }
  }
  return { counts: breakerSeries(all).counts, named: breakerSeries(nameable).named };
}

new Gauge({
  name: 'hookline_breaker_state',
  help: `Circuit breakers of this process that are not closed, by destination (1 half-open, 2 open): open ones first, at most ${MAX_NAMED_BREAKERS}; only when METRICS_TOKEN guards this endpoint.`,
  labelNames: ['destination_id'] as const,
  registers: [registry],
  collect() {
    this.reset();
    for (const { destinationId, value } of currentSeries().named) this.set({ destination_id: destinationId }, value);
  },
});

new Gauge({
  name: 'hookline_breakers',
  help: 'Circuit breakers this process holds, by state (closed, half-open, open).',
  labelNames: ['state'] as const,
  registers: [registry],
  collect() {
    const { counts } = currentSeries();
    for (const state of Object.keys(counts) as BreakerStateName[]) this.set({ state }, counts[state]);
  },
});

/** Shows the source's breakers in the breaker metrics until the returned function is called. */
export function watchBreakers(source: BreakerSource): () => void {
  sources.add(source);
  return () => {
    sources.delete(source);
  };
}
