/** A breaker that another deliver process holds open or half-open, as its board shows it. */
export interface PeerBreaker {
  destination_id: string;
  state: 'open' | 'half-open';
  /** When it entered that state (ms since epoch, by the owner's clock). */
  since: number;
  /** The deliver process that holds it. */
  instance: string;
}

export interface PeerTiming {
  /** BREAKER_RESET_MS: how long an open breaker holds before its owner's trial. */
  resetMs: number;
  /** How long the owner's trial may take before this process stops waiting for its answer. */
  trialMs: number;
}

/** What this process did itself about one destination that peers hold. */
export interface TrialState {
  /** When this process last made a trial on the peers' account. */
  lastAt: number | undefined;
  inFlight: boolean;
  /** Peer breakers that a successful trial of this process answered: they hold nothing here any more. */
  cleared: ReadonlySet<string>;
}

export type PeerAdmission =
  | { kind: 'pass' }
  /** Hold the delivery until `until` (it waits on the delay topics, as behind a local open breaker). */
  | { kind: 'hold'; until: number }
  /** Let this one attempt through as a trial; on success, `answers` are cleared. */
  | { kind: 'trial'; answers: string[] };

/** One breaker episode of one owner: a breaker that opens again is a new one. */
export function peerKey(b: Pick<PeerBreaker, 'instance' | 'since'>): string {
  return `${b.instance}@${b.since}`;
}

/**
 * Whether a delivery to a destination goes ahead given the breakers other processes hold for it.
 * An open peer breaker holds every process for its reset period; then its owner makes the trial
 * (half-open) and the others wait `trialMs` for the answer: a close takes the breaker off the
 * board, a failure opens it again as a new episode. An owner that makes no trial (it no longer
 * gets the destination's deliveries) must not hold the destination for ever: past that wait,
 * this process makes one trial of its own per reset period, so a deployment of N processes
 * makes at most N trials per reset period.
 */
export function admitPastPeers(peers: readonly PeerBreaker[], trial: TrialState, now: number, timing: PeerTiming): PeerAdmission {
  const holding = peers.filter((p) => !trial.cleared.has(peerKey(p)));
  if (holding.length === 0) return { kind: 'pass' };
  let until: number | undefined;
  for (const p of holding) {
    const trialFrom = p.state === 'open' ? p.since + timing.resetMs : p.since;
    // the owner's reset period: back when its trial is due
    if (now < trialFrom) until = Math.max(until ?? now, trialFrom);
    // the owner's trial: back at the pace of the shortest delay, as behind a local half-open breaker
    else if (now < trialFrom + timing.trialMs) until = Math.max(until ?? now, now);
  }
  if (until !== undefined) return { kind: 'hold', until };
  if (trial.inFlight) return { kind: 'hold', until: now };
  if (trial.lastAt !== undefined && now < trial.lastAt + timing.resetMs) return { kind: 'hold', until: trial.lastAt + timing.resetMs };
  return { kind: 'trial', answers: holding.map(peerKey) };
}
