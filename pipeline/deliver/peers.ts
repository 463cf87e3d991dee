import { errorMessage, type Logger } from '../../core/log';
import { shareOf } from './fair-share';
import { admitPastPeers, peerKey, type PeerAdmission, type PeerBreaker, type PeerTiming } from './peer-breakers';

/** The deployment's deliver processes as one of them reads it. */
export interface DeploymentView {
  /** The live deliver processes, this one included. */
  members: string[];
  /** The breakers that are not closed, of every live process. */
  breakers: PeerBreaker[];
}

/** Where deliver processes say they are alive and publish their breakers (Redis: the breaker board). */
export interface DeploymentPort {
  /** This process's name among the members. */
  readonly instance: string;
  /** Says this process is alive and reads the view. */
  sync(): Promise<DeploymentView>;
}

export interface PeersOptions {
  /** DELIVERY_PER_DESTINATION: concurrent requests to one destination from the whole deployment. */
  limit: number;
  /** DELIVERY_SYNC_MS: how often the view is refreshed. */
  syncMs: number;
  timing: PeerTiming;
}

interface Trial {
  lastAt: number | undefined;
  inFlight: boolean;
  cleared: Set<string>;
}

/**
 * What the other deliver processes mean for this one: its share of each destination's
 * concurrency, and the destinations their breakers hold. Both come from a view refreshed every
 * `syncMs` off the hot path, so an attempt costs no round trip; a view that cannot be refreshed
 * (Redis away) is kept as it was last read, and deliveries go on under it. A breaker that opens
 * in another process holds deliveries here at most `syncMs` plus three round trips (its owner's
 * publish, this process's beat and read) after it opened.
 */
export class DeliverPeers {
  private members: string[] = [];
  private held = new Map<string, PeerBreaker[]>();
  private readonly trials = new Map<string, Trial>();
  // until a first view: one request per destination, which never stops a delivery and barely overshoots
  private part = 1;
  private reachable = true;
  private syncing = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly port: DeploymentPort,
    private readonly options: PeersOptions,
    private readonly log: Logger,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Reads a first view (a failure leaves the defaults), then refreshes it every `syncMs`. */
  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.options.syncMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** How many requests this process may have in flight to one destination. */
  share(): number {
    return this.part;
  }

  async refresh(): Promise<void> {
    // a refresh that hangs on a reconnecting Redis is not stacked on
    if (this.syncing) return;
    this.syncing = true;
    try {
      this.apply(await this.port.sync());
      if (!this.reachable) this.log.info('deliver processes seen again; shares follow them', { processes: this.members.length, share: this.part });
      this.reachable = true;
    } catch (err) {
      if (this.reachable) this.log.warn('deliver processes not seen; keeping the last share and peer breakers', { share: this.part, error: errorMessage(err) });
      this.reachable = false;
    } finally {
      this.syncing = false;
    }
  }

  apply(view: DeploymentView): void {
    const part = shareOf(this.options.limit, view.members, this.port.instance);
    if (part !== this.part || view.members.length !== this.members.length) {
      this.log.info('deliver processes changed; per-destination share follows', { processes: view.members.length, share: part, limit: this.options.limit });
    }
    this.members = view.members;
    this.part = part;
    const held = new Map<string, PeerBreaker[]>();
    for (const b of view.breakers) {
      if (b.instance === this.port.instance) continue;
      const list = held.get(b.destination_id);
      if (list) list.push(b);
      else held.set(b.destination_id, [b]);
    }
    this.held = held;
    // what a trial cleared matters only while the peer still shows it
    for (const [id, t] of this.trials) {
      const shown = new Set((held.get(id) ?? []).map(peerKey));
      for (const k of t.cleared) if (!shown.has(k)) t.cleared.delete(k);
      if (shown.size === 0 && !t.inFlight) this.trials.delete(id);
    }
  }

  /** Whether a delivery to the destination goes ahead as far as the other processes' breakers say. */
  admit(destinationId: string): PeerAdmission {
    const peers = this.held.get(destinationId);
    if (!peers) return { kind: 'pass' };
    const now = this.clock();
    let trial = this.trials.get(destinationId);
    const admission = admitPastPeers(peers, trial ?? { lastAt: undefined, inFlight: false, cleared: new Set() }, now, this.options.timing);
    if (admission.kind === 'trial') {
      if (!trial) this.trials.set(destinationId, (trial = { lastAt: undefined, inFlight: false, cleared: new Set() }));
      trial.lastAt = now;
      trial.inFlight = true;
    }
    return admission;
  }

  /** The end of an admitted attempt: a trial that went well answers the peer breakers it was made for. */
  settle(destinationId: string, admission: PeerAdmission, healthy: boolean): void {
    if (admission.kind !== 'trial') return;
    const trial = this.trials.get(destinationId);
    if (!trial) return;
    trial.inFlight = false;
    if (healthy) for (const k of admission.answers) trial.cleared.add(k);
  }
}
