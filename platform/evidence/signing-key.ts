import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isSealed, open, seal, sealedKeyId, type SecretPlace } from '../../core/secrets/envelope';
import type { Keyring } from '../../core/secrets/keyring';
import { generateSignerKey, parseSignerKey, type NoteSigner } from '../../core/signed-note';

export interface EvidenceKeySource {
  /** A `PRIVATE+KEY+…` signer key; wins over the file. */
  signingKey: string | undefined;
  /** Name given to a generated key. */
  origin: string | undefined;
  dataDir: string;
  /** Seals the key file, so a copy of the data dir cannot sign checkpoints. */
  keyring: Keyring;
}

const PLACE: SecretPlace = { kind: 'evidence', tenant: '-', id: 'checkpoint-signer', field: 'signing-key' };

/**
 * The checkpoint signer: the configured key, else the one kept sealed under the data dir, else a
 * new one written there (mode 0600). A key file kept in clear by an earlier version is sealed in
 * place. The key's name is the log's origin.
 */
export function loadEvidenceSigner(source: EvidenceKeySource): NoteSigner {
  return parseSignerKey(loadEvidenceSignerKey(source));
}

/**
 * The signer key itself (`PRIVATE+KEY+…`), found as loadEvidenceSigner finds it: for a supervisor
 * that hands one key to every process it starts (in their environment, never on disk in clear).
 */
export function loadEvidenceSignerKey(source: EvidenceKeySource): string {
  if (source.signingKey) return source.signingKey;
  const file = path.join(source.dataDir, 'evidence', 'signing-key');
  if (existsSync(file)) {
    const text = readFileSync(file, 'utf8').trim();
    if (isSealed(text)) return open(source.keyring, PLACE, text).toString('utf8');
    parseSignerKey(text);
    writeSealed(file, source.keyring, text, true);
    return text;
  }
  const skey = generateSignerKey(source.origin ?? `hookline/evidence/${randomBytes(4).toString('hex')}`);
  mkdirSync(path.dirname(file), { recursive: true });
  writeSealed(file, source.keyring, skey, false);
  return skey;
}

/** Writes the sealed key; replacing goes through a rename, so a crash leaves the old file or the new one. */
function writeSealed(file: string, keyring: Keyring, skey: string, replace: boolean): void {
  const sealed = `${seal(keyring, PLACE, skey)}\n`;
  if (!replace) {
    writeFileSync(file, sealed, { mode: 0o600, flag: 'wx' });
    chmodSync(file, 0o600);
    return;
  }
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, sealed, { mode: 0o600 });
  renameSync(tmp, file);
}

/**
 * Re-seals the key file under the keyring's current key (part of a key rotation). Only the
 * process that owns DATA_DIR can reach the file; elsewhere it is `absent`.
 */
export function resealEvidenceKey(dataDir: string, keyring: Keyring): 'resealed' | 'current' | 'absent' {
  const file = path.join(dataDir, 'evidence', 'signing-key');
  if (!existsSync(file)) return 'absent';
  const text = readFileSync(file, 'utf8').trim();
  if (isSealed(text) && sealedKeyId(text) === keyring.current.id) return 'current';
  const skey = isSealed(text) ? open(keyring, PLACE, text).toString('utf8') : text;
  parseSignerKey(skey);
  writeSealed(file, keyring, skey, true);
  return 'resealed';
}
