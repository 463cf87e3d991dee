import express, { type Router } from 'express';
import type { ClickHouseClient } from '@clickhouse/client';
import { AppError } from '../../core/errors';
import { leafBytes } from '../../core/evidence-leaf';
import { leafHash } from '../../core/merkle';
import type { EvidenceStore, CheckpointRow } from '../../platform/evidence/store';
import { authOf, requireResourceOf, requireScope } from '../auth';
import type { ApiKey } from '../../core/model';
import { decodeCursor, encodeCursor } from '../cursor';
import { parseLimit } from '../paging';
import type { DeliveryRow } from '../../platform/clickhouse/deliveries-list';
import { isoFromClickHouse } from '../../platform/clickhouse/time';

/** What a client needs to check checkpoints on its own. */
export interface EvidenceLogInfo {
  origin: string;
  /** The C2SP signed-note verifier key: `<origin>+<key id>+<base64(0x01 || Ed25519 public key)>`. */
  verifierKey: string;
  keyId: string;
  publicKey: Buffer;
}

/** A non-negative integer query parameter, or undefined when absent. */
export function integerParam(raw: unknown, field: string, min: number): number | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !/^\d{1,15}$/.test(raw) || Number(raw) < min) {
    throw new AppError('validation-error', `${field} must be an integer of at least ${min}`, { errors: [{ field, message: `must be an integer of at least ${min}` }] });
  }
  return Number(raw);
}

export const checkpointBody = (c: CheckpointRow) => ({ tree_size: c.tree_size, root_hash: c.root_hash, signed_note: c.checkpoint, sealed_at: c.sealed_at });
const hex = (b: Buffer) => b.toString('hex');


/**
 * Delivery evidence: the leaf of a delivery attempt in the shared evidence log, its RFC 9162
 * inclusion proof and the signed checkpoint the proof leads to. A delivery whose outcome is
 * recorded but not sealed yet answers `pending`, with the leaf hash it will have.
 */
export function evidenceRouter(evidence: EvidenceStore, clickhouse: ClickHouseClient, database: string): Router {
  const router = express.Router({ mergeParams: true });
  router.get('/:deliveryId', requireScope('read:evidence'), async (req, res) => {
    const attempt = integerParam(req.query.attempt, 'attempt', 1);
    const treeSize = integerParam(req.query.tree_size, 'tree_size', 1);
    res.json(await deliveryEvidence({ evidence, clickhouse, database }, authOf(res), String(req.params.deliveryId), { attempt, treeSize }));
  });
  return router;
}

/** The evidence of one delivery attempt as GET .../evidence/{delivery_id} answers it. */
export async function deliveryEvidence(
  deps: { evidence: EvidenceStore; clickhouse: ClickHouseClient; database: string },
  key: ApiKey,
  deliveryId: string,
  options: { attempt?: number; treeSize?: number } = {},
) {
  const { evidence, clickhouse, database } = deps;
  const { attempt, treeSize: pinned } = options;
  const leaf = await evidence.leaf(key.tenant_id, deliveryId, attempt);
  if (leaf) requireResourceOf(key, leaf.destination_id);
  const checkpoint = leaf ? await evidence.checkpoint(pinned) : null;
  if (leaf && pinned !== undefined && (!checkpoint || checkpoint.tree_size <= leaf.leaf_index)) {
    throw new AppError('not-found', `no checkpoint of ${pinned} leaves includes this delivery's leaf ${leaf.leaf_index}`);
  }
  if (leaf && checkpoint && checkpoint.tree_size > leaf.leaf_index) {
    const proof = await evidence.inclusionProof(leaf.leaf_index, checkpoint.tree_size);
    return {
      delivery_id: leaf.delivery_id,
      status: 'confirmed' as const,
      integrity_root: checkpoint.root_hash,
      inclusion_proof: proof.map(hex),
      leaf_hash: leaf.leaf_hash,
      timestamp: leaf.sealed_at,
      attempt_number: leaf.attempt_number,
      leaf_index: leaf.leaf_index,
      replay_of: leaf.replay_of ?? null,
      tree_size: checkpoint.tree_size,
      checkpoint: checkpointBody(checkpoint),
    };
  }
  // not sealed yet (or sealed, with its checkpoint still on its way): pending
  const rs = await clickhouse.query({
    query: `SELECT delivery_id, attempt_number, event_id, destination_id, status, response_code, toString(attempted_at) AS attempted_at_text, body_sha256, replay_of
            FROM ${database}.deliveries FINAL
            WHERE tenant_id = {tenant:String} AND delivery_id = {id:String} ${attempt === undefined ? '' : 'AND attempt_number = {attempt:UInt32}'}
            ORDER BY attempt_number DESC LIMIT 1`,
    query_params: { tenant: key.tenant_id, id: deliveryId, ...(attempt === undefined ? {} : { attempt }) },
    format: 'JSONEachRow',
  });
  const row = (await rs.json<Omit<DeliveryRow, 'error_message'> & { replay_of: string | null }>())[0];
  if (!row) throw new AppError('not-found', `delivery ${deliveryId}${attempt === undefined ? '' : ` attempt ${attempt}`} has no recorded outcome`);
  requireResourceOf(key, row.destination_id);
  const attemptedAt = isoFromClickHouse(row.attempted_at_text);
  const bytes = leafBytes({ ...row, tenant_id: key.tenant_id, attempted_at: attemptedAt });
  return {
    delivery_id: row.delivery_id,
    status: 'pending' as const,
    integrity_root: null,
    inclusion_proof: [] as string[],
    leaf_hash: hex(leafHash(bytes)),
    timestamp: attemptedAt,
    attempt_number: row.attempt_number,
    leaf_index: leaf?.leaf_index ?? null,
    replay_of: row.replay_of ?? null,
    tree_size: null,
    checkpoint: null,
  };
}

/** One page of signed checkpoints, newest first; the cursor is a keyset on tree size. */
export async function checkpointPage(evidence: EvidenceStore, limitParam: unknown, cursor: unknown): Promise<{ page: CheckpointRow[]; next_cursor: string | null }> {
  const limit = parseLimit(limitParam);
  let before: number | undefined;
  if (typeof cursor === 'string' && cursor !== '') {
    const [size] = decodeCursor(cursor, {});
    if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 1) {
      throw new AppError('validation-error', 'the cursor is not one this API issued', { errors: [{ field: 'cursor', message: 'is not a valid cursor' }] });
    }
    before = size;
  }
  const rows = await evidence.checkpoints(limit + 1, before);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { page, next_cursor: rows.length > limit && last ? encodeCursor([last.tree_size], {}) : null };
}

/**
 * The log itself: its origin and key, its signed checkpoints, and consistency proofs
 * between any two of them (RFC 9162 section 2.1.4), so a client holding an older checkpoint
 * can check that the log only grew.
 */
export function evidenceLogRouter(evidence: EvidenceStore, info: EvidenceLogInfo): Router {
  const router = express.Router({ mergeParams: true });
  router.get('/', requireScope('read:evidence'), async (_req, res) => {
    const latest = await evidence.checkpoint();
    res.json({
      origin: info.origin,
      verifier_key: info.verifierKey,
      key_id: info.keyId,
      public_key: info.publicKey.toString('base64'),
      signature_algorithm: 'ed25519',
      hash_algorithm: 'sha256',
      latest_checkpoint: latest ? checkpointBody(latest) : null,
    });
  });

  router.get('/checkpoints', requireScope('read:evidence'), async (req, res) => {
    const { page, next_cursor } = await checkpointPage(evidence, req.query.limit, req.query.cursor);
    res.json({ checkpoints: page.map(checkpointBody), next_cursor });
  });

  router.get('/consistency', requireScope('read:evidence'), async (req, res) => {
    const from = integerParam(req.query.from, 'from', 1);
    if (from === undefined) throw new AppError('validation-error', 'from is required', { errors: [{ field: 'from', message: 'is required' }] });
    const toParam = integerParam(req.query.to, 'to', 1);
    const [older, newer] = await Promise.all([evidence.checkpoint(from), evidence.checkpoint(toParam)]);
    if (!older) throw new AppError('not-found', `no checkpoint has tree size ${from}`);
    if (!newer) throw new AppError('not-found', toParam === undefined ? 'no checkpoint has been sealed yet' : `no checkpoint has tree size ${toParam}`);
    if (newer.tree_size < older.tree_size) {
      throw new AppError('validation-error', 'to must not be smaller than from', { errors: [{ field: 'to', message: 'must not be smaller than from' }] });
    }
    const proof = await evidence.consistencyProof(older.tree_size, newer.tree_size);
    res.json({ from: checkpointBody(older), to: checkpointBody(newer), consistency_proof: proof.map(hex) });
  });
  return router;
}
