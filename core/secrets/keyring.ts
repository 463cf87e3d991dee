/**
 * Key-encryption keys (KEKs): the first encrypts, every one decrypts, so a new key can be put
 * in front of the old one on every process before the stored secrets are re-encrypted under it.
 */
export interface Kek {
  id: string;
  key: Buffer;
}

export interface Keyring {
  /** The key new secrets are sealed under. */
  current: Kek;
  byId: ReadonlyMap<string, Kek>;
}

const KEK_ID = /^[A-Za-z0-9._-]{1,64}$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** Why a keyring text was refused; never quotes the key material. */
export class KeyringError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyringError';
  }
}

/** Parses `id:base64[,id:base64…]` (32-byte keys); errors name a key by its id or position only. */
export function parseKeyring(text: string, source: string): Keyring {
  const entries = text.split(/[,\n]/).map((s) => s.trim()).filter((s) => s !== '' && !s.startsWith('#'));
  if (entries.length === 0) throw new KeyringError(`${source}: no key; expected id:base64 of 32 random bytes, e.g. k1:$(openssl rand -base64 32)`);
  const byId = new Map<string, Kek>();
  entries.forEach((entry, i) => {
    const colon = entry.indexOf(':');
    const id = colon > 0 ? entry.slice(0, colon) : '';
    if (!KEK_ID.test(id)) throw new KeyringError(`${source}: key ${i + 1} has no valid id; expected id:base64 with an id of letters, digits, ".", "_" or "-"`);
    const b64 = entry.slice(colon + 1);
    const key = BASE64.test(b64) ? Buffer.from(b64, 'base64') : Buffer.alloc(0);
    if (key.length !== 32) throw new KeyringError(`${source}: key "${id}" is not the base64 of 32 bytes (make one with \`openssl rand -base64 32\`)`);
    if (byId.has(id)) throw new KeyringError(`${source}: key id "${id}" appears twice`);
    byId.set(id, { id, key });
  });
  return { current: byId.values().next().value as Kek, byId };
}

/** The text form of one key, as SECRETS_KEK and a key file hold it. */
export function formatKek(kek: Kek): string {
  return `${kek.id}:${kek.key.toString('base64')}`;
}
