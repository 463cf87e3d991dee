import type { ClickHouseClient } from '@clickhouse/client';

/** One dead letter as the `dead_letters` table gives it to a list (migration 011). */
export interface DeadLetterRow {
  id: string;
  at_text: string;
  stage: string;
  reason: string;
  source_topic: string;
  source_partition: number;
  source_offset: number;
  record: string;
  resource_id: string;
  event_id: string | null;
}

/** A dead letter with the bytes of its input: what a replay writes back. */
export interface StoredDeadLetter extends DeadLetterRow {
  tenant_id: string;
  /** The input's key in base64, or null. */
  key: string | null;
  /** The input's value as a stored body (core/stored-body.ts). */
  value: string;
  value_sha256: string;
  /** 1 once the bytes' retention passed (RETENTION_BODIES): they are gone, or about to be. */
  value_expired: number;
}

/** That an input record was put back: when, by whom, through which of its letters. */
export interface ReplayMark {
  letter_id: string;
  replayed_at_text: string;
  replayed_by: string;
}

/** Where a dead letter's input was read: the one thing a replay is counted by. */
export type SourcePlace = Pick<DeadLetterRow, 'source_topic' | 'source_partition' | 'source_offset'>;

export const placeKey = (p: SourcePlace): string => `${p.source_topic}:${p.source_partition}:${p.source_offset}`;

export interface DeadLetterFilter {
  tenant: string;
  stage: string | null;
  /** `at` bounds as DateTime64(3) text in UTC: from inclusive, to exclusive. */
  from: string | null;
  to: string | null;
  /** Only letters before this one in the list's order (newest first): the cursor. */
  before: { at: string; id: string } | null;
  /** A key limited to some ingesters and destinations sees only the letters of theirs. */
  resourceIds: string[] | null;
}

// aliases must not shadow columns: ClickHouse resolves WHERE names to SELECT aliases
const COLUMNS = `id, toString(at) AS at_text, stage, reason, source_topic, source_partition, toString(source_offset) AS offset_text, record, resource_id, event_id`;

/** A row as JSON gives it: a UInt64 comes as text. */
type Raw<T> = Omit<T, 'source_offset'> & { offset_text: string };
const parsed = <T extends DeadLetterRow>({ offset_text, ...r }: Raw<T>): T => ({ ...r, source_offset: Number(offset_text) }) as unknown as T;

/**
 * The dead letters of every stage as the sink copied them, and the replays of their inputs.
 * Letters are few next to events: reads use FINAL, so a letter the sink wrote twice is one row.
 */
export class DeadLetterStore {
  constructor(
    private readonly clickhouse: ClickHouseClient,
    private readonly database: string,
  ) {}

  /** Up to `rows` letters of the tenant, newest first, within the filter. */
  async page(f: DeadLetterFilter, rows: number): Promise<DeadLetterRow[]> {
    const where = ['tenant_id = {tenant:String}'];
    const params: Record<string, unknown> = { tenant: f.tenant, limit: rows };
    if (f.stage !== null) {
      where.push('stage = {stage:String}');
      params.stage = f.stage;
    }
    if (f.from !== null) {
      where.push('at >= {from:DateTime64(3)}');
      params.from = f.from;
    }
    if (f.to !== null) {
      where.push('at < {to:DateTime64(3)}');
      params.to = f.to;
    }
    if (f.before) {
      where.push('(at, id) < ({beforeAt:DateTime64(3)}, {beforeId:String})');
      Object.assign(params, { beforeAt: f.before.at, beforeId: f.before.id });
    }
    if (f.resourceIds) {
      where.push('resource_id IN {resources:Array(String)}');
      params.resources = f.resourceIds;
    }
    const rs = await this.clickhouse.query({
      query: `SELECT ${COLUMNS} FROM ${this.database}.dead_letters FINAL WHERE ${where.join(' AND ')} ORDER BY at DESC, id DESC LIMIT {limit:UInt32}`,
      query_params: params,
      format: 'JSONEachRow',
    });
    return (await rs.json<Raw<DeadLetterRow>>()).map(parsed);
  }

  /** One letter of the tenant with its bytes; undefined when the tenant has no such letter. */
  async get(tenant: string, id: string): Promise<StoredDeadLetter | undefined> {
    const rs = await this.clickhouse.query({
      query: `SELECT ${COLUMNS}, tenant_id, key, value, value_sha256, body_expires_at <= now() AS value_expired FROM ${this.database}.dead_letters FINAL WHERE tenant_id = {tenant:String} AND id = {id:String} LIMIT 1`,
      query_params: { tenant, id },
      format: 'JSONEachRow',
    });
    const [row] = await rs.json<Raw<StoredDeadLetter>>();
    return row && parsed(row);
  }

  /** The replays of the inputs of these letters of the tenant, by {@link placeKey}. */
  async replaysOf(tenant: string, letters: readonly SourcePlace[]): Promise<Map<string, ReplayMark>> {
    if (letters.length === 0) return new Map();
    const rs = await this.clickhouse.query({
      query: `SELECT source_topic, source_partition, toString(source_offset) AS offset_text, letter_id, toString(replayed_at) AS replayed_at_text, replayed_by
              FROM ${this.database}.dead_letter_replays FINAL
              WHERE tenant_id = {tenant:String} AND concat(source_topic, ':', toString(source_partition), ':', toString(source_offset)) IN {places:Array(String)}`,
      query_params: { tenant, places: [...new Set(letters.map(placeKey))] },
      format: 'JSONEachRow',
    });
    const rows = await rs.json<ReplayMark & { source_topic: string; source_partition: number; offset_text: string }>();
    return new Map(rows.map((r) => [placeKey({ ...r, source_offset: Number(r.offset_text) }), { letter_id: r.letter_id, replayed_at_text: r.replayed_at_text, replayed_by: r.replayed_by }]));
  }
}
