import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, type SecretsKeySource } from '../../core/config';
import { formatKek, KeyringError, parseKeyring, type Keyring } from '../../core/secrets/keyring';

/**
 * The keyring from SECRETS_KEK or SECRETS_KEK_FILE. In development a missing file is created
 * with one new key (mode 0600, in a 0700 directory). Problems are configuration errors that
 * name the source, never the key material.
 */
export function loadKeyring(source: SecretsKeySource): Keyring {
  try {
    if (source.kek !== undefined) return parseKeyring(source.kek, 'SECRETS_KEK');
    const file = source.kekFile;
    if (file === undefined) throw new KeyringError('SECRETS_KEK or SECRETS_KEK_FILE is required');
    if (!existsSync(file) && source.generate) {
      mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      try {
        writeFileSync(file, `${formatKek({ id: `dev-${randomBytes(3).toString('hex')}`, key: randomBytes(32) })}\n`, { mode: 0o600, flag: 'wx' });
        chmodSync(file, 0o600);
      } catch (err) {
        // another process of the same data dir made it first: use that one
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
    }
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new KeyringError(`SECRETS_KEK_FILE: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    return parseKeyring(text, `SECRETS_KEK_FILE (${file})`);
  } catch (err) {
    if (err instanceof KeyringError) throw new ConfigError([err.message]);
    throw err;
  }
}
