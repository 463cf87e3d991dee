/**
 * The delays between delivery attempts. Entry i is the wait before attempt i + 1, so the
 * default makes 8 attempts: at once, then after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h.
 */
export const DEFAULT_RETRY_SCHEDULE_MS = [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses "0,5s,5m,30m,2h" (a bare number is milliseconds). */
export function parseSchedule(spec: string): { schedule: number[]; errors: string[] } {
  const errors: string[] = [];
  const schedule: number[] = [];
  for (const part of spec.split(',').map((p) => p.trim()).filter(Boolean)) {
    const m = /^(\d+)(ms|s|m|h|d)?$/.exec(part);
    if (!m) {
      errors.push(`"${part}" is not a duration like 500ms, 5s, 5m, 2h`);
      continue;
    }
    schedule.push(Number(m[1]) * UNIT_MS[m[2] ?? 'ms']!);
  }
  if (schedule.length === 0 && errors.length === 0) errors.push('the schedule needs at least one attempt');
  if (schedule.length > 50) errors.push('at most 50 attempts');
  if (schedule.some((d) => d > 7 * 86_400_000)) errors.push('no single wait may exceed 7 days');
  return { schedule, errors };
}

/**
 * The wait before `attempt` (2 for the first retry), with ±`jitter` spread so that many
 * deliveries failing together do not retry together; undefined when the schedule is exhausted.
 */
export function delayBefore(schedule: number[], attempt: number, jitter = 0.1, random = Math.random): number | undefined {
  const base = schedule[attempt - 1];
  if (base === undefined) return undefined;
  if (base === 0) return 0;
  return Math.max(0, Math.round(base * (1 + jitter * (2 * random() - 1))));
}
