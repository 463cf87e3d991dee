import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Keyring } from './keyring';

/**
 * Envelope encryption of one secret: a fresh AES-256-GCM data key encrypts the value, the
 * keyring's current key-encryption key wraps the data key. Both carry the secret's place as
 * additional authenticated data, so a ciphertext moved to another entity or field fails to open.
 *
 * Text form: `enc:v1:<kek id>:<base64url of wrap iv | wrap tag | wrapped key | iv | tag | ciphertext>`.
 */
export const SEALED_PREFIX = 'enc:';
const VERSION = 'v1';
const IV = 12;
const TAG = 16;
const DEK = 32;
const HEAD = IV + TAG + DEK + IV + TAG;

/** Where a secret belongs; a ciphertext opens only at the place it was sealed for. */
export interface SecretPlace {
  kind: string;
  tenant: string;
  id: string;
  field: string;
}

/** A ciphertext that cannot be opened; the message names the key id, never a key or the value. */
export class SecretDecryptError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretDecryptError';
  }
}

function aadOf(place: SecretPlace, kekId: string): Buffer {
  return Buffer.from(JSON.stringify([VERSION, kekId, place.kind, place.tenant, place.id, place.field]));
}

function gcm(key: Buffer, iv: Buffer, aad: Buffer, data: Buffer): { ct: Buffer; tag: Buffer } {
  const c = createCipheriv('aes-256-gcm', key, iv);
  c.setAAD(aad);
  const ct = Buffer.concat([c.update(data), c.final()]);
  return { ct, tag: c.getAuthTag() };
}

function ungcm(key: Buffer, iv: Buffer, tag: Buffer, aad: Buffer, ct: Buffer): Buffer {
  const d = createDecipheriv('aes-256-gcm', key, iv);
  d.setAAD(aad);
  d.setAuthTag(tag);
  return Buffer.concat([d.update(ct), d.final()]);
}

/** Is this text a sealed secret (of any version)? */
export function isSealed(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(SEALED_PREFIX);
}

/** The id of the key-encryption key a sealed secret is wrapped under. */
export function sealedKeyId(sealed: string): string | undefined {
  return sealed.split(':')[2];
}

export function seal(ring: Keyring, place: SecretPlace, plaintext: Buffer | string): string {
  const { id, key } = ring.current;
  const aad = aadOf(place, id);
  const dek = randomBytes(DEK);
  const wrapIv = randomBytes(IV);
  const wrapped = gcm(key, wrapIv, aad, dek);
  const iv = randomBytes(IV);
  const body = gcm(dek, iv, aad, typeof plaintext === 'string' ? Buffer.from(plaintext, 'utf8') : plaintext);
  dek.fill(0);
  const blob = Buffer.concat([wrapIv, wrapped.tag, wrapped.ct, iv, body.tag, body.ct]);
  return `${SEALED_PREFIX}${VERSION}:${id}:${blob.toString('base64url')}`;
}

export function open(ring: Keyring, place: SecretPlace, sealed: string): Buffer {
  const parts = sealed.split(':');
  if (parts.length !== 4 || `${parts[0]}:` !== SEALED_PREFIX) throw new SecretDecryptError(`the secret ${placeName(place)} is not a sealed value`);
  const [, version, kekId, b64] = parts as [string, string, string, string];
  if (version !== VERSION) throw new SecretDecryptError(`the secret ${placeName(place)} is sealed in format ${version}, which this version does not read`);
  const kek = ring.byId.get(kekId);
  if (!kek) throw new SecretDecryptError(`the secret ${placeName(place)} is sealed under key "${kekId}", which is not in the keyring (SECRETS_KEK / SECRETS_KEK_FILE)`);
  const blob = Buffer.from(b64, 'base64url');
  if (blob.length < HEAD) throw new SecretDecryptError(`the secret ${placeName(place)} is truncated`);
  const aad = aadOf(place, kekId);
  let at = 0;
  const take = (n: number) => blob.subarray(at, (at += n));
  const wrapIv = take(IV);
  const wrapTag = take(TAG);
  const wrapped = take(DEK);
  const iv = take(IV);
  const tag = take(TAG);
  const ct = blob.subarray(at);
  let dek: Buffer;
  try {
    dek = ungcm(kek.key, wrapIv, wrapTag, aad, wrapped);
  } catch {
    throw new SecretDecryptError(`the secret ${placeName(place)} does not open with key "${kekId}": wrong key, or the value belongs elsewhere or was altered`);
  }
  try {
    return ungcm(dek, iv, tag, aad, ct);
  } catch {
    throw new SecretDecryptError(`the secret ${placeName(place)} does not open with key "${kekId}": the value was altered`);
  } finally {
    dek.fill(0);
  }
}

function placeName(p: SecretPlace): string {
  return `${p.kind}/${p.tenant}/${p.id}#${p.field}`;
}
