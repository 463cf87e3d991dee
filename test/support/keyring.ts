import { randomBytes } from 'node:crypto';
import { parseKeyring, type Keyring } from '../../core/secrets/keyring';
import { generateSignerKey } from '../../core/signed-note';

/** A new key-encryption key as SECRETS_KEK takes it: `id:base64`, with a random id. */
export function randomKek(id = `test-${randomBytes(3).toString('hex')}`): string {
  return `${id}:${randomBytes(32).toString('base64')}`;
}

export function randomKeyring(): Keyring {
  return parseKeyring(randomKek(), 'test');
}

/**
 * A new evidence signing key as EVIDENCE_SIGNING_KEY takes it: processes that split the stages
 * of one deployment share one.
 */
export function randomEvidenceKey(name = `hookline.test/evidence-${randomBytes(3).toString('hex')}`): string {
  return generateSignerKey(name);
}
