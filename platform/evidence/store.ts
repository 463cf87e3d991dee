import type { ClickHouseClient } from '@clickhouse/client';
import { isoFromClickHouse } from '../clickhouse/time';
import { consistencyProof, consistencyProofNodes, inclusionProof, inclusionProofNodes, nodeKey, type NodeRef } from '../../core/merkle';

export interface CheckpointRow {
  tree_size: number;
  root_hash: string;
  /** The C2SP checkpoint as a signed note. */
  checkpoint: string;
  /** ISO 8601 UTC. */
  sealed_at: string;
}

export interface LeafRow {
  tenant_id: string;
  delivery_id: string;
  attempt_number: number;
  leaf_index: number;
  event_id: string;
  destination_id: string;
  status: string;
  response_code: number | null;
  /** ISO 8601 UTC with milliseconds. */
  attempted_at: string;
  body_sha256: string;
  leaf_hash: string;
  /** The delivery this attempt's delivery replays, or null. */
  replay_of: string | null;
  /** ISO 8601 UTC with milliseconds. */
  sealed_at: string;
}

interface RawCheckpoint {
  tree_size: string;
  root_hash: string;
  checkpoint: string;
  sealed_at_text: string;
}

const checkpointOf = (r: RawCheckpoint): CheckpointRow => ({ tree_size: Number(r.tree_size), root_hash: r.root_hash, checkpoint: r.checkpoint, sealed_at: isoFromClickHouse(r.sealed_at_text) });

/**
 * Reads the evidence log's query copy: leaves by delivery, signed checkpoints, and proofs
 * built from stored subtree hashes, so a proof costs O(log n) point reads whatever the size.
 */
export class EvidenceStore {
  constructor(
    private readonly client: ClickHouseClient,
    private readonly database: string,
  ) {}

  private async rows<T>(query: string, params: Record<string, unknown>): Promise<T[]> {
    const rs = await this.client.query({ query, query_params: params, format: 'JSONEachRow' });
    return rs.json<T>();
  }

  /** The newest checkpoint, or the one of exactly `size` leaves. */
  async checkpoint(size?: number): Promise<CheckpointRow | null> {
    const where = size === undefined ? '' : 'WHERE tree_size = {size:UInt64}';
    const rows = await this.rows<RawCheckpoint>(
      `SELECT tree_size, root_hash, checkpoint, toString(sealed_at) AS sealed_at_text FROM ${this.database}.evidence_checkpoints ${where} ORDER BY tree_size DESC LIMIT 1`,
      size === undefined ? {} : { size },
    );
    const r = rows[0];
    return r ? checkpointOf(r) : null;
  }

  /** Checkpoints newest first, below `beforeSize` when given. */
  async checkpoints(limit: number, beforeSize?: number): Promise<CheckpointRow[]> {
    const rows = await this.rows<RawCheckpoint>(
      `SELECT tree_size, root_hash, checkpoint, toString(sealed_at) AS sealed_at_text FROM ${this.database}.evidence_checkpoints FINAL
       ${beforeSize === undefined ? '' : 'WHERE tree_size < {before:UInt64}'} ORDER BY tree_size DESC LIMIT {limit:UInt32}`,
      { limit, ...(beforeSize === undefined ? {} : { before: beforeSize }) },
    );
    return rows.map(checkpointOf);
  }

  /** The leaf of one attempt of a tenant's delivery; the latest attempt when none is named. */
  async leaf(tenantId: string, deliveryId: string, attempt?: number): Promise<LeafRow | null> {
    const rows = await this.rows<Omit<LeafRow, 'leaf_index' | 'attempted_at' | 'sealed_at'> & { leaf_index: string; attempted_at_text: string; sealed_at_text: string }>(
      `SELECT tenant_id, delivery_id, attempt_number, leaf_index, event_id, destination_id, status, response_code,
              toString(attempted_at) AS attempted_at_text, body_sha256, leaf_hash, replay_of, toString(sealed_at) AS sealed_at_text
       FROM ${this.database}.evidence_leaves
       WHERE tenant_id = {tenant:String} AND delivery_id = {id:String} ${attempt === undefined ? '' : 'AND attempt_number = {attempt:UInt32}'}
       ORDER BY attempt_number DESC, leaf_index DESC LIMIT 1`,
      { tenant: tenantId, id: deliveryId, ...(attempt === undefined ? {} : { attempt }) },
    );
    const r = rows[0];
    if (!r) return null;
    const { attempted_at_text, sealed_at_text, ...rest } = r;
    return { ...rest, leaf_index: Number(r.leaf_index), attempted_at: isoFromClickHouse(attempted_at_text), sealed_at: isoFromClickHouse(sealed_at_text) };
  }

  /** Stored subtree hashes by node; a node that is not stored is missing from the map. */
  async nodes(refs: NodeRef[]): Promise<Map<string, Buffer>> {
    const found = new Map<string, Buffer>();
    if (refs.length === 0) return found;
    // integers only (checked), written as a tuple list so that the primary key serves the lookup;
    // a list of one is written twice, as `((a,b))` would read as the tuple itself
    const list = refs.map((r) => {
      if (!Number.isSafeInteger(r.level) || !Number.isSafeInteger(r.index) || r.level < 0 || r.index < 0) throw new RangeError(`bad node ${nodeKey(r)}`);
      return `(${r.level},${r.index})`;
    });
    const rows = await this.rows<{ level: number; idx: string; h: string }>(
      `SELECT level, idx, hex(hash) AS h FROM ${this.database}.evidence_nodes
       WHERE (level, idx) IN (${list.join(',')}${list.length === 1 ? `,${list[0]}` : ''}) LIMIT 1 BY level, idx`,
      {},
    );
    for (const r of rows) found.set(nodeKey({ level: r.level, index: Number(r.idx) }), Buffer.from(r.h, 'hex'));
    return found;
  }

  private async getter(refs: NodeRef[]): Promise<(n: NodeRef) => Buffer> {
    const found = await this.nodes(refs);
    return (n) => {
      const hash = found.get(nodeKey(n));
      if (!hash) throw new Error(`evidence node ${nodeKey(n)} is not stored yet`);
      return hash;
    };
  }

  async inclusionProof(index: number, size: number): Promise<Buffer[]> {
    return inclusionProof(index, size, await this.getter(inclusionProofNodes(index, size)));
  }

  async consistencyProof(from: number, to: number): Promise<Buffer[]> {
    return consistencyProof(from, to, await this.getter(consistencyProofNodes(from, to)));
  }
}
