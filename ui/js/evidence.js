// Verifies a delivery's evidence in the page, without trusting the service's database: the leaf
// is rebuilt from the delivery record (docs/evidence.md), the checkpoint's signature is checked
// with the log's key, and the inclusion proof must lead from the leaf to the checkpoint's root.
// The same checks as `npm run cli -- evidence verify`, but for what this page shows.

import { bytesToHex, hexToBytes, leafHash, verifyInclusion } from './merkle.js';
import { openNote, parseCheckpoint, parseVerifierKey, splitNote } from './signed-note.js';

const utf8 = new TextEncoder();

/** The canonical bytes of an evidence leaf (core/evidence-leaf.ts): keys in code-point order, v 1, or v 2 with replay_of. */
export function leafBytes(f) {
  const replayOf = f.replay_of ?? null;
  const canonical = {
    attempt_number: f.attempt_number,
    attempted_at: f.attempted_at,
    body_sha256: f.body_sha256,
    delivery_id: f.delivery_id,
    destination_id: f.destination_id,
    event_id: f.event_id,
    ...(replayOf === null ? {} : { replay_of: replayOf }),
    response_code: f.response_code,
    status: f.status,
    tenant_id: f.tenant_id,
    v: replayOf === null ? 1 : 2,
  };
  return utf8.encode(JSON.stringify(canonical));
}

function check(list, name, ok, detail) {
  list.push({ name, ok, detail });
  return ok;
}

/**
 * `tenantId`: the key's tenant; `delivery`: GET .../deliveries/{id}; `evidence`: GET
 * .../evidence/{id} (confirmed); `log`: GET .../evidence-log. Answers every check with its
 * outcome (true, false, or null for a signature this browser cannot check) and `verified`, true
 * only when no check failed.
 */
export async function verifyEvidence({ tenantId, delivery, evidence, log }) {
  const checks = [];
  const result = (extra = {}) => ({ verified: checks.length > 0 && checks.every((c) => c.ok !== false), checks, ...extra });
  if (evidence.status !== 'confirmed') {
    check(checks, 'sealed', false, 'the attempt is not sealed into a checkpoint yet');
    return result();
  }
  try {
    // 1. the leaf, rebuilt from the delivery record as the API shows it
    const attempt = (delivery.attempts ?? []).find((a) => a.attempt_number === evidence.attempt_number);
    if (!attempt) {
      check(checks, 'leaf', false, `the delivery record has no attempt ${evidence.attempt_number}`);
      return result();
    }
    const rebuilt = await leafHash(
      leafBytes({
        tenant_id: tenantId,
        delivery_id: delivery.id,
        event_id: delivery.event_id,
        destination_id: delivery.destination_id,
        attempt_number: attempt.attempt_number,
        status: attempt.status,
        response_code: attempt.response_code,
        attempted_at: attempt.attempted_at,
        body_sha256: attempt.body_sha256,
        replay_of: evidence.replay_of ?? null,
      }),
    );
    const leafHex = bytesToHex(rebuilt);
    check(checks, 'leaf', leafHex === evidence.leaf_hash, leafHex === evidence.leaf_hash ? `rebuilt from attempt ${attempt.attempt_number} of the delivery record, equal to the sealed leaf` : `rebuilt ${leafHex}, sealed ${evidence.leaf_hash}: the record differs from what was sealed`);

    // 2. the checkpoint: signed by the log's key, and saying what the answer says
    const verifier = await parseVerifierKey(log.verifier_key);
    const note = evidence.checkpoint.signed_note;
    const opened = await openNote(note, verifier).catch((err) => {
      check(checks, 'signature', false, err.message);
      return undefined;
    });
    if (opened === undefined) return result();
    check(checks, 'signature', opened === null ? null : true, opened === null ? 'not checked: this browser has no Ed25519 in WebCrypto' : `signed by ${verifier.name} (key ${bytesToHex(verifier.keyId)})`);
    const cp = parseCheckpoint(opened ?? splitNote(note).text);
    const rootHex = bytesToHex(cp.root);
    const sameCheckpoint = cp.origin === log.origin && cp.size === evidence.tree_size && rootHex === evidence.integrity_root;
    check(checks, 'checkpoint', sameCheckpoint, sameCheckpoint ? `${cp.size} leaves of ${cp.origin}, as the answer says` : `the signed checkpoint says ${cp.size} leaves of ${cp.origin} with root ${rootHex}; the answer says ${evidence.tree_size} leaves with root ${evidence.integrity_root}`);

    // 3. the audit path from the rebuilt leaf to the signed root
    const proof = evidence.inclusion_proof.map(hexToBytes);
    const included = await verifyInclusion(rebuilt, evidence.leaf_index, cp.size, proof, cp.root);
    check(checks, 'inclusion', included, included ? `leaf ${evidence.leaf_index} is in the tree of ${cp.size} leaves (${proof.length} proof hashes)` : `the proof of leaf ${evidence.leaf_index} does not lead to the signed root`);
    return result({ leafIndex: evidence.leaf_index, treeSize: cp.size, rootHash: rootHex, leafHash: leafHex });
  } catch (err) {
    check(checks, 'format', false, err instanceof Error ? err.message : String(err));
    return result();
  }
}
