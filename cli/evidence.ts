import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { leafBytes } from '../core/evidence-leaf';
import { leafHash, verifyConsistency, verifyInclusion } from '../core/merkle';
import { openNote, parseCheckpoint, parseVerifierKey } from '../core/signed-note';
import { CliError } from './connect';

export interface VerifyOptions {
  deliveryId: string;
  tenant: string;
  apiUrl: string;
  apiKey: string;
  attempt?: number;
  /** Where the last checkpoint seen per log is remembered. */
  stateFile: string;
  /** Pins the log's key; without it the first key seen is pinned in the state file. */
  verifierKey?: string;
}

interface SeenCheckpoint {
  verifier_key: string;
  tree_size: number;
  root_hash: string;
  signed_note: string;
}

type State = Record<string, SeenCheckpoint>;

interface CheckpointBody {
  tree_size: number;
  root_hash: string;
  signed_note: string;
}

export const DEFAULT_STATE_FILE = path.join(homedir(), '.hookline', 'evidence-state.json');

function readState(file: string): State {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as State;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new CliError(`cannot read the evidence state file ${file}: ${(err as Error).message}`);
  }
}

function writeState(file: string, state: State): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
}

/** A failed check: the CLI prints it as one line and exits 1. */
class VerificationFailed extends CliError {
  constructor(what: string) {
    super(`verification failed: ${what}`);
  }
}

async function getJson(o: VerifyOptions, route: string): Promise<Record<string, unknown>> {
  const url = `${o.apiUrl.replace(/\/+$/, '')}/v1/tenants/${encodeURIComponent(o.tenant)}${route}`;
  let res: Response;
  try {
    res = await fetch(url, { headers: { authorization: `Bearer ${o.apiKey}`, accept: 'application/json' } });
  } catch (err) {
    throw new CliError(`cannot reach the API at ${o.apiUrl}: ${(err as Error).message}`);
  }
  const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok) throw new CliError(`GET ${route} answered ${res.status}: ${String(body.detail ?? body.title ?? res.statusText)}`);
  return body;
}

const buf = (hex: string) => Buffer.from(hex, 'hex');

/** The delivery a replayed delivery replays: from its record when shown there, else as the evidence names it; null for none. */
function replayOfRecord(delivery: Record<string, unknown>, evidence: Record<string, unknown>): string | null {
  const shown = delivery.replay_of ?? evidence.replay_of;
  return typeof shown === 'string' && shown !== '' ? shown : null;
}

/** Checks a signed checkpoint and returns its size and root. */
function openCheckpoint(c: CheckpointBody, verifierKey: string, origin: string): { size: number; root: Buffer } {
  let text: string;
  try {
    text = openNote(c.signed_note, parseVerifierKey(verifierKey));
  } catch (err) {
    throw new VerificationFailed(`the checkpoint of ${c.tree_size} leaves is not signed by ${verifierKey}: ${(err as Error).message}`);
  }
  const parsed = parseCheckpoint(text);
  if (parsed.origin !== origin) throw new VerificationFailed(`the checkpoint names origin "${parsed.origin}", the log is "${origin}"`);
  if (parsed.size !== c.tree_size || parsed.root.toString('hex') !== c.root_hash) {
    throw new VerificationFailed(`the signed checkpoint says ${parsed.size} leaves with root ${parsed.root.toString('hex')}, the answer says ${c.tree_size} and ${c.root_hash}`);
  }
  return { size: parsed.size, root: parsed.root };
}

/**
 * Verifies a delivery's evidence without trusting the service's database: the leaf is rebuilt
 * from the delivery record, the inclusion proof must lead to the root of a checkpoint signed
 * by the log's key, and that checkpoint must be consistent with the last one this machine saw.
 */
export async function verifyDeliveryEvidence(o: VerifyOptions) {
  const log = await getJson(o, '/evidence-log');
  const origin = String(log.origin);
  const state = readState(o.stateFile);
  const seen = state[origin];
  const verifierKey = o.verifierKey ?? seen?.verifier_key ?? String(log.verifier_key);
  if (log.verifier_key !== verifierKey) throw new VerificationFailed(`the log now publishes key ${String(log.verifier_key)}, but ${verifierKey} is pinned`);

  const query = o.attempt === undefined ? '' : `?attempt=${o.attempt}`;
  const evidence = await getJson(o, `/evidence/${encodeURIComponent(o.deliveryId)}${query}`);
  if (evidence.status !== 'confirmed') throw new CliError(`the evidence of ${o.deliveryId} is ${String(evidence.status)}: not sealed into a checkpoint yet; try again shortly`);
  const attemptNumber = Number(evidence.attempt_number);

  // 1. the leaf, rebuilt from the delivery record as the API shows it
  const delivery = await getJson(o, `/deliveries/${encodeURIComponent(o.deliveryId)}`);
  const attempts = delivery.attempts as Record<string, unknown>[];
  const attempt = attempts.find((a) => a.attempt_number === attemptNumber);
  if (!attempt) throw new VerificationFailed(`the delivery record has no attempt ${attemptNumber}`);
  const rebuilt = leafHash(
    leafBytes({
      tenant_id: o.tenant,
      delivery_id: String(delivery.id),
      event_id: String(delivery.event_id),
      destination_id: String(delivery.destination_id),
      attempt_number: attemptNumber,
      status: String(attempt.status),
      response_code: attempt.response_code === null ? null : Number(attempt.response_code),
      attempted_at: String(attempt.attempted_at),
      body_sha256: String(attempt.body_sha256),
      // a replayed delivery's leaf names the delivery it replays (v 2); the record shows it, or the evidence answer does
      replay_of: replayOfRecord(delivery, evidence),
    }),
  );
  if (rebuilt.toString('hex') !== evidence.leaf_hash) {
    throw new VerificationFailed(`the leaf rebuilt from the delivery record (${rebuilt.toString('hex')}) is not the recorded leaf ${String(evidence.leaf_hash)}: the record differs from what was sealed`);
  }

  // 2. the checkpoint's signature, and 3. inclusion in its tree
  const checkpoint = evidence.checkpoint as CheckpointBody;
  const signed = openCheckpoint(checkpoint, verifierKey, origin);
  const proof = (evidence.inclusion_proof as string[]).map(buf);
  if (signed.root.toString('hex') !== evidence.integrity_root || !verifyInclusion(rebuilt, Number(evidence.leaf_index), signed.size, proof, signed.root)) {
    throw new VerificationFailed(`the inclusion proof of leaf ${String(evidence.leaf_index)} does not lead to the signed root of ${signed.size} leaves`);
  }

  // 4. consistency with the last checkpoint this machine saw
  let consistency: string;
  let newest: SeenCheckpoint = { verifier_key: verifierKey, ...checkpoint };
  if (!seen) {
    consistency = 'first checkpoint seen from this log; remembered';
  } else if (seen.tree_size === signed.size) {
    if (seen.root_hash !== checkpoint.root_hash) throw new VerificationFailed(`two checkpoints of ${signed.size} leaves with different roots: the log forked`);
    consistency = `same checkpoint as last seen (${signed.size} leaves)`;
  } else {
    const [older, newer] = seen.tree_size < signed.size ? [seen, checkpoint] : [checkpoint, seen];
    const answer = await getJson(o, `/evidence-log/consistency?from=${older.tree_size}&to=${newer.tree_size}`);
    const from = answer.from as CheckpointBody;
    const to = answer.to as CheckpointBody;
    if (from.root_hash !== older.root_hash || to.root_hash !== newer.root_hash) {
      throw new VerificationFailed(`the log now shows other roots for sizes ${older.tree_size} and ${newer.tree_size} than were seen`);
    }
    const ok = verifyConsistency(older.tree_size, newer.tree_size, (answer.consistency_proof as string[]).map(buf), buf(older.root_hash), buf(newer.root_hash));
    if (!ok) throw new VerificationFailed(`the checkpoint of ${newer.tree_size} leaves does not extend the one of ${older.tree_size}`);
    openCheckpoint(to, verifierKey, origin);
    consistency = `consistent with the checkpoint of ${seen.tree_size} leaves seen before`;
    if (seen.tree_size > signed.size) newest = seen;
  }
  state[origin] = newest;
  writeState(o.stateFile, state);

  return {
    verified: true,
    delivery_id: o.deliveryId,
    attempt_number: attemptNumber,
    leaf_index: Number(evidence.leaf_index),
    leaf_hash: rebuilt.toString('hex'),
    tree_size: signed.size,
    root_hash: signed.root.toString('hex'),
    origin,
    checks: {
      leaf: 'rebuilt from the delivery record and equal to the sealed leaf',
      signature: `checkpoint signed by ${verifierKey.split('+').slice(0, 2).join('+')}`,
      inclusion: `leaf ${Number(evidence.leaf_index)} is in the tree of ${signed.size} leaves`,
      consistency,
    },
  };
}
