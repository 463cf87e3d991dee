import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { generateSignerKey, parseSignerKey, type NoteSigner } from '../../core/signed-note';

export interface EvidenceKeySource {
  /** A `PRIVATE+KEY+…` signer key; wins over the file. */
  signingKey: string | undefined;
  /** Name given to a generated key. */
  origin: string | undefined;
  dataDir: string;
}

/**
 * The checkpoint signer: the configured key, else the one kept under the data dir, else a new
 * one written there (mode 0600). The key's name is the log's origin.
 */
export function loadEvidenceSigner(source: EvidenceKeySource): NoteSigner {
  if (source.signingKey) return parseSignerKey(source.signingKey);
  const file = path.join(source.dataDir, 'evidence', 'signing-key');
  if (existsSync(file)) return parseSignerKey(readFileSync(file, 'utf8').trim());
  const skey = generateSignerKey(source.origin ?? `hookline/evidence/${randomBytes(4).toString('hex')}`);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${skey}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return parseSignerKey(skey);
}
