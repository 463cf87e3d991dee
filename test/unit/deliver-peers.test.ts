import { Logger } from '../../core/log';
import { shareOf } from '../../pipeline/deliver/fair-share';
import { admitPastPeers, peerKey, type PeerAdmission, type PeerBreaker, type TrialState } from '../../pipeline/deliver/peer-breakers';
import { DeliverPeers, type DeploymentView } from '../../pipeline/deliver/peers';

describe('a deliver process\'s share of DELIVERY_PER_DESTINATION', () => {
  it.each([
    // limit, members, self, share
    [4, ['a'], 'a', 4],
    [4, ['a', 'b'], 'a', 2],
    [4, ['a', 'b'], 'b', 2],
    [5, ['a', 'b'], 'a', 3],
    [5, ['a', 'b'], 'b', 2],
    [4, ['c', 'a', 'b'], 'a', 2],
    [4, ['c', 'a', 'b'], 'c', 1],
    // never none: with more processes than slots each still gets one
    [2, ['a', 'b', 'c'], 'c', 1],
    // a process that does not see itself yet counts itself in
    [4, ['b'], 'a', 2],
    [4, [], 'a', 4],
  ])('limit %i among %j: %s gets %i', (limit, members, self, share) => {
    expect(shareOf(limit, members, self)).toBe(share);
  });

  it('adds up to the limit, and no process\'s share grows when one joins', () => {
    for (let limit = 1; limit <= 40; limit++) {
      for (let n = 1; n <= 12; n++) {
        const members = Array.from({ length: n }, (_, i) => `p${String(i).padStart(2, '0')}`);
        const shares = members.map((m) => shareOf(limit, members, m));
        expect(shares.reduce((a, b) => a + b, 0)).toBe(Math.max(limit, n));
        // the joiner may sort anywhere among them
        for (const joiner of ['p', 'p05x', 'q']) {
          const grown = [...members, joiner];
          for (const m of members) expect(shareOf(limit, grown, m)).toBeLessThanOrEqual(shareOf(limit, members, m));
        }
      }
    }
  });
});

describe('deliveries past the breakers of other deliver processes', () => {
  const timing = { resetMs: 1_000, trialMs: 300 };
  const fresh: TrialState = { lastAt: undefined, inFlight: false, cleared: new Set() };
  const open = (since: number, instance = 'b'): PeerBreaker => ({ destination_id: 'd', state: 'open', since, instance });
  const half = (since: number, instance = 'b'): PeerBreaker => ({ destination_id: 'd', state: 'half-open', since, instance });

  it.each<[string, PeerBreaker[], TrialState, number, PeerAdmission]>([
    ['no peer holds it', [], fresh, 0, { kind: 'pass' }],
    ['an open peer holds it for its reset period', [open(100)], fresh, 500, { kind: 'hold', until: 1_100 }],
    ['the latest of two open peers', [open(100), open(400, 'c')], fresh, 500, { kind: 'hold', until: 1_400 }],
    ['past the reset the owner trials: wait for its answer at the shortest pace', [open(100)], fresh, 1_200, { kind: 'hold', until: 1_200 }],
    ['a half-open owner is trialling', [half(1_100)], fresh, 1_200, { kind: 'hold', until: 1_200 }],
    ['an owner that made no trial in time: one trial here', [open(100)], fresh, 1_400, { kind: 'trial', answers: ['b@100'] }],
    ['a half-open owner silent too long: one trial here', [half(1_100)], fresh, 1_400, { kind: 'trial', answers: ['b@1100'] }],
    ['one trial at a time here', [half(1_100)], { ...fresh, lastAt: 1_400, inFlight: true }, 1_500, { kind: 'hold', until: 1_500 }],
    ['one trial per reset period here', [half(1_100)], { ...fresh, lastAt: 1_400 }, 1_500, { kind: 'hold', until: 2_400 }],
    ['the next period\'s trial', [half(1_100)], { ...fresh, lastAt: 1_400 }, 2_400, { kind: 'trial', answers: ['b@1100'] }],
    ['a trial here answered it', [half(1_100)], { ...fresh, cleared: new Set(['b@1100']) }, 1_500, { kind: 'pass' }],
    ['but not the episode after it', [open(1_450)], { ...fresh, cleared: new Set(['b@1100']) }, 1_500, { kind: 'hold', until: 2_450 }],
  ])('%s', (_name, peers, trial, now, expected) => {
    expect(admitPastPeers(peers, trial, now, timing)).toEqual(expected);
  });

  it('names an episode by its owner and start', () => {
    expect(peerKey(open(7, 'x'))).toBe('x@7');
  });
});

/** The peers' view over a fake clock and a fake deployment, walked through its states. */
describe('the view of the other deliver processes', () => {
  const timing = { resetMs: 1_000, trialMs: 300 };
  const quiet = new Logger('error');

  function setup() {
    let now = 0;
    let view: DeploymentView | Error = { members: ['a'], breakers: [] };
    const port = {
      instance: 'a',
      sync: async () => {
        if (view instanceof Error) throw view;
        return view;
      },
    };
    const peers = new DeliverPeers(port, { limit: 4, syncMs: 100, timing }, quiet, () => now);
    return { peers, at: (t: number) => (now = t), see: (v: DeploymentView | Error) => (view = v) };
  }

  it('takes a share from the live processes and keeps the last one while they cannot be read', async () => {
    const { peers, see } = setup();
    expect(peers.share()).toBe(1);
    await peers.refresh();
    expect(peers.share()).toBe(4);
    see({ members: ['a', 'b'], breakers: [] });
    await peers.refresh();
    expect(peers.share()).toBe(2);
    see(new Error('connection refused'));
    await peers.refresh();
    expect(peers.share()).toBe(2);
  });

  it('follows a peer\'s breaker, skips its own, trials once when the owner stays silent, and lets go when the owner closes', async () => {
    const { peers, at, see } = setup();
    const board = (b: PeerBreaker[]) => see({ members: ['a', 'b'], breakers: b });
    board([{ destination_id: 'd', state: 'open', since: 0, instance: 'a' }]);
    await peers.refresh();
    // its own breaker is this process's opossum's to decide
    expect(peers.admit('d')).toEqual({ kind: 'pass' });

    board([{ destination_id: 'd', state: 'open', since: 0, instance: 'b' }]);
    await peers.refresh();
    at(500);
    expect(peers.admit('d')).toEqual({ kind: 'hold', until: 1_000 });
    expect(peers.admit('other')).toEqual({ kind: 'pass' });
    at(1_400);
    const trial = peers.admit('d');
    expect(trial).toEqual({ kind: 'trial', answers: ['b@0'] });
    expect(peers.admit('d')).toEqual({ kind: 'hold', until: 1_400 });
    // the trial failed: the next one a reset period later
    peers.settle('d', trial, false);
    at(1_500);
    expect(peers.admit('d')).toEqual({ kind: 'hold', until: 2_400 });
    at(2_400);
    const second = peers.admit('d');
    expect(second.kind).toBe('trial');
    peers.settle('d', second, true);
    expect(peers.admit('d')).toEqual({ kind: 'pass' });

    // the owner opens again: a new episode holds again
    board([{ destination_id: 'd', state: 'open', since: 2_500, instance: 'b' }]);
    await peers.refresh();
    at(2_600);
    expect(peers.admit('d')).toEqual({ kind: 'hold', until: 3_500 });
    // the owner closes: its breaker leaves the board, and this process follows
    board([]);
    await peers.refresh();
    expect(peers.admit('d')).toEqual({ kind: 'pass' });
  });
});
