import type { Kafka } from 'kafkajs';
import { leafBytes, leafTime } from '../../core/evidence-leaf';
import { CompactRange, leafHash } from '../../core/merkle';
import { openNote, parseCheckpoint, parseSignerKey } from '../../core/signed-note';
import type { AvroCodec } from '../../platform/avro/codec';
import type { EvidenceBatch } from '../../platform/avro/records';
import { readTopic } from '../../platform/kafka/topic-table';

export interface EvidenceLogCheck {
  consistent: boolean;
  tree_size: number;
  batches: number;
  /** The first thing found wrong, when not consistent. */
  problem?: string;
}

/**
 * Reads the whole evidence log (committed records only) and rebuilds its tree from the leaves:
 * every batch must start where the one before it ended, every leaf hash must be the hash of its
 * fields, every checkpoint must be signed by the deployment's key and name the root of exactly
 * the leaves before it. A log that passes is one append-only tree: no fork, no gap, no leaf
 * twice, and any two of its checkpoints are consistent.
 */
export async function checkEvidenceLog(kafka: Kafka, codec: AvroCodec, topic: string, signingKey: string): Promise<EvidenceLogCheck> {
  const verifier = parseSignerKey(signingKey);
  const records = await readTopic(kafka, topic, 60_000);
  const range = new CompactRange();
  let token = 0;
  let batches = 0;
  const fail = (problem: string): EvidenceLogCheck => ({ consistent: false, tree_size: range.size, batches, problem });
  for (const record of records) {
    if (!record.value) continue;
    const batch = await codec.decode('EvidenceBatch', record.value);
    batches++;
    if (batch.first_index !== range.size) return fail(`batch at offset ${record.offset} starts at ${batch.first_index}, the log ends at ${range.size} (a fork or a gap)`);
    const fencing = (batch as EvidenceBatch & { fencing_token?: number }).fencing_token;
    if (fencing !== undefined) {
      if (fencing < token) return fail(`batch at offset ${record.offset} has fencing token ${fencing} after ${token}`);
      token = fencing;
    }
    for (const leaf of batch.leaves) {
      if (leaf.leaf_index !== range.size) return fail(`leaf ${leaf.leaf_index} where ${range.size} was due`);
      const { leaf_index: _i, leaf_hash, ...fields } = leaf;
      const hash = leafHash(leafBytes({ ...fields, attempted_at: leafTime(fields.attempted_at) }));
      if (!hash.equals(leaf_hash)) return fail(`leaf ${leaf.leaf_index}: its hash is not the hash of its fields`);
      range.append(hash);
    }
    if (range.size !== batch.tree_size) return fail(`batch at offset ${record.offset} says size ${batch.tree_size}, its leaves make ${range.size}`);
    let text: string;
    try {
      text = openNote(batch.checkpoint, verifier);
    } catch (err) {
      return fail(`checkpoint of size ${batch.tree_size}: ${(err as Error).message}`);
    }
    const checkpoint = parseCheckpoint(text);
    if (checkpoint.size !== range.size || !checkpoint.root.equals(range.root()) || !Buffer.from(batch.root_hash).equals(range.root())) {
      return fail(`checkpoint of size ${batch.tree_size} does not name the root of the leaves before it`);
    }
  }
  return { consistent: true, tree_size: range.size, batches };
}
