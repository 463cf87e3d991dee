import type { ClickHouseClient } from '@clickhouse/client';
import type { ChangeAction, ChangeCause, DestinationChange, MemberChange } from '../../core/destination-changes';
import { isoFromClickHouse } from './time';

interface ChangeRow {
  id: string;
  destination_id: string;
  at_text: string;
  actor: string;
  action: string;
  changes: string;
  cause: string;
}

/** `2026-01-02T03:04:05.678Z` -> `2026-01-02 03:04:05.678`, as DateTime64(3) reads it. */
const clickHouseTime = (iso: string) => iso.replace('T', ' ').replace(/Z$/, '');

/** A change as its row in `destination_changes`: `cause` is JSON, '' for a change made through the API. */
export function changeRow(change: DestinationChange) {
  return {
    tenant_id: change.tenant_id,
    destination_id: change.destination_id,
    id: change.id,
    at: clickHouseTime(change.at),
    actor: change.actor,
    action: change.action,
    changes: JSON.stringify(change.changes),
    cause: change.cause ? JSON.stringify(change.cause) : '',
  };
}

/**
 * The history of destinations in the `destination_changes` table (migrations 007 and 012): one
 * row per change, keyed (tenant, destination, id); ids are ULIDs, so the newest sort last. The
 * API writes the changes made through it; the sink those the delivery stage makes (a 410 Gone).
 */
export class DestinationChangeLog {
  constructor(
    private readonly clickhouse: ClickHouseClient,
    private readonly database: string,
  ) {}

  async record(change: DestinationChange): Promise<void> {
    await this.clickhouse.insert({
      table: `${this.database}.destination_changes`,
      values: [changeRow(change)],
      format: 'JSONEachRow',
    });
  }

  /** Up to `limit` changes of the destination, newest first, older than the change `before` when given. */
  async page(tenantId: string, destinationId: string, limit: number, before?: string): Promise<Omit<DestinationChange, 'tenant_id'>[]> {
    const where = ['tenant_id = {tenant:String}', 'destination_id = {destination:String}'];
    if (before !== undefined) where.push('id < {before:String}');
    const rs = await this.clickhouse.query({
      query: `SELECT id, destination_id, toString(at) AS at_text, actor, action, changes, cause FROM ${this.database}.destination_changes FINAL
              WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT {limit:UInt32}`,
      query_params: { tenant: tenantId, destination: destinationId, before, limit },
      format: 'JSONEachRow',
    });
    return (await rs.json<ChangeRow>()).map((r) => ({
      id: r.id,
      destination_id: r.destination_id,
      at: isoFromClickHouse(r.at_text),
      actor: r.actor,
      action: r.action as ChangeAction,
      changes: JSON.parse(r.changes) as Record<string, MemberChange>,
      cause: r.cause ? (JSON.parse(r.cause) as ChangeCause) : null,
    }));
  }
}
