import { readFileSync } from 'node:fs';
import type { Receiver } from './receiver';
import { sendEvent } from './flow';

/** Sends every body to the Hook URL with `concurrency` requests at a time; each must be accepted (202). */
export async function sendConcurrently(hookUrl: string, bodies: unknown[], concurrency: number): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(concurrency, bodies.length) }, async () => {
    while (next < bodies.length) {
      const i = next++;
      await sendEvent(hookUrl, bodies[i]);
    }
  });
  await Promise.all(workers);
}

export function median(values: number[]): number {
  if (values.length === 0) throw new Error('median of nothing');
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * The first arrival of each tagged JSON body (`{ round, seq }`) at a receiver, so that a
 * redelivery (at-least-once) neither counts twice nor moves the time a round completed.
 */
export class FirstArrivals {
  private scanned = 0;
  private readonly byRound = new Map<string, Map<number, number>>();

  constructor(private readonly receiver: Receiver) {}

  private scan(): void {
    const reqs = this.receiver.requests;
    for (; this.scanned < reqs.length; this.scanned++) {
      const r = reqs[this.scanned]!;
      let tag: { round?: unknown; seq?: unknown };
      try {
        tag = JSON.parse(r.body.toString('utf8')) as { round?: unknown; seq?: unknown };
      } catch {
        continue;
      }
      if (typeof tag.round !== 'string' || typeof tag.seq !== 'number') continue;
      let seen = this.byRound.get(tag.round);
      if (!seen) this.byRound.set(tag.round, (seen = new Map()));
      if (!seen.has(tag.seq)) seen.set(tag.seq, r.at);
    }
  }

  count(round: string): number {
    this.scan();
    return this.byRound.get(round)?.size ?? 0;
  }

  /** Resolves with the arrival time (epoch ms) of the last of `count` distinct bodies of `round`. */
  async waitForAll(round: string, count: number, timeoutMs: number, pollMs = 10): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    while (this.count(round) < count) {
      if (Date.now() > deadline) throw new Error(`round ${round}: ${this.count(round)} of ${count} bodies arrived within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, pollMs));
    }
    return Math.max(...this.byRound.get(round)!.values());
  }
}

/** Busy and total CPU time of the whole machine so far, in ms (Linux /proc/stat; undefined elsewhere). */
export function machineCpu(): { busyMs: number; totalMs: number } | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    const idle = (f[3] ?? 0) + (f[4] ?? 0);
    const total = f.reduce((a, b) => a + b, 0);
    const tick = 10; // USER_HZ is 100 on Linux
    return { busyMs: (total - idle) * tick, totalMs: total * tick };
  } catch {
    return undefined;
  }
}
