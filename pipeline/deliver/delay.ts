import type { Topics } from '../../core/topics';

/**
 * The delay topic for a wait of `remainingMs`: the longest tier that does not overshoot it,
 * or the shortest tier when the wait is shorter than every tier (it then waits one short hop).
 */
export function delayTopicFor(topics: Topics, remainingMs: number): string {
  const tiers = topics.retryTiers;
  if (tiers.length === 0) return topics.deliveryRequested;
  let chosen = tiers[0]!;
  for (const t of tiers) if (t.delayMs <= remainingMs) chosen = t;
  return chosen.topic;
}
