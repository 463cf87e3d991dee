/**
 * This process's part of a deployment-wide limit: the limit's slots dealt out round-robin to
 * the live deliver processes in the order of their names, so that the parts add up to exactly
 * `limit` whenever every process sees the same members. Each process gets at least one slot,
 * so that no process holds a destination's deliveries for ever: with more processes than
 * slots the parts add up to the number of processes instead.
 *
 * A process's part never grows when members join (the slots dealt to a given rank only shrink
 * as the members grow, and joining only moves a process to the same or a later rank): a join
 * overshoots the limit by the joiner's part alone, until the others have seen it. Bound, with
 * L the limit and n the processes before the join: at most L + ceil(L / (n + 1)) per joiner,
 * for at most DELIVERY_SYNC_MS (the others' next read) + DELIVERY_TIMEOUT_MS (the requests
 * they had already started beyond their new part). Parts grow only when a member leaves, and a
 * process leaves only after its last request (a dead one's requests died with it). A process
 * that cannot read the members keeps its last part: cut off from Redis while the others are
 * not, it is counted gone after the expiry and the deployment may reach L plus its part.
 */
export function shareOf(limit: number, members: readonly string[], self: string): number {
  const sorted = [...new Set([...members, self])].sort();
  const rank = sorted.indexOf(self);
  const n = sorted.length;
  return Math.max(1, Math.floor(limit / n) + (rank < limit % n ? 1 : 0));
}
