import type { RetentionPeriods } from '../../core/config';
import type { SinkTable } from './stage';

/** The largest DateTime ClickHouse holds (2106-02-07 06:28:15 UTC): what `forever` writes. */
export const NEVER = 4_294_967_295;

/** The periods of a tenant's rows: its own where it has them, else the deployment's. */
export type RetentionOf = (tenantId: string) => RetentionPeriods;

/** Unix seconds at which something of `atMs` expires after `seconds` (null: never). */
export function expiryOf(atMs: number, seconds: number | null): number {
  return seconds === null ? NEVER : Math.min(NEVER, Math.ceil(atMs / 1_000) + seconds);
}

/**
 * Which period each table's expiry columns follow (migration 014): `body_expires_at` clears the
 * body columns, `expires_at` deletes the row. Tables not named (destination changes, the
 * evidence log) are kept for ever.
 */
const EXPIRING: Partial<Record<SinkTable, { body?: true; row: 'attemptsSeconds' | 'logsSeconds' }>> = {
  events: { body: true, row: 'attemptsSeconds' },
  event_types: { row: 'attemptsSeconds' },
  event_transitions: { row: 'attemptsSeconds' },
  deliveries: { body: true, row: 'attemptsSeconds' },
  logs: { row: 'logsSeconds' },
  dead_letters: { body: true, row: 'attemptsSeconds' },
  dead_letter_replays: { row: 'attemptsSeconds' },
};

/**
 * Adds a row's expiry columns, counted from `atMs`, the time the row records (the event's
 * receipt, the attempt, the log line), with its tenant's periods. The row is returned.
 */
export function withExpiry<R extends { tenant_id: string }>(table: SinkTable, row: R, atMs: number, retentionOf: RetentionOf): R {
  const kind = EXPIRING[table];
  if (!kind) return row;
  const periods = retentionOf(row.tenant_id);
  const columns = row as R & { body_expires_at?: number; expires_at?: number };
  if (kind.body) columns.body_expires_at = expiryOf(atMs, periods.bodiesSeconds);
  columns.expires_at = expiryOf(atMs, periods[kind.row]);
  return row;
}
