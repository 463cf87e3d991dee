import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../core/config';
import type { Destination, Ingester } from '../../core/model';
import { open, seal, SecretDecryptError, type SecretPlace } from '../../core/secrets/envelope';
import { openEntity, sealEntity, sealingOf } from '../../core/secrets/entity-secrets';
import { maskValue } from '../../core/secrets/fields';
import { KeyringError, parseKeyring } from '../../core/secrets/keyring';
import { generateSignerKey, parseSignerKey } from '../../core/signed-note';
import { loadEvidenceSigner, resealEvidenceKey } from '../../platform/evidence/signing-key';
import { loadKeyring } from '../../platform/secrets/keyring-source';
import { randomKek } from '../support/keyring';

const place: SecretPlace = { kind: 'destination', tenant: 't1', id: 'dst_1', field: 'signing_secret' };
const ring = (...keks: string[]) => parseKeyring(keks.join(','), 'SECRETS_KEK');

describe('envelope encryption', () => {
  const k1 = randomKek('k1');

  it('round-trips, with a fresh data key and IV each time', () => {
    const r = ring(k1);
    const a = seal(r, place, 'whsec_abc');
    const b = seal(r, place, 'whsec_abc');
    expect(a).not.toBe(b);
    expect(open(r, place, a).toString()).toBe('whsec_abc');
    expect(open(r, place, b).toString()).toBe('whsec_abc');
  });

  it('is self-describing: a version and the key id in clear, nothing of the value', () => {
    const sealed = seal(ring(k1), place, 'whsec_abc');
    expect(sealed).toMatch(/^enc:v1:k1:[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain('whsec');
    expect(Buffer.from(sealed.split(':')[3]!, 'base64url').toString('latin1')).not.toContain('whsec_abc');
  });

  it('a ciphertext moved to another place (kind, tenant, id or field) does not open', () => {
    const r = ring(k1);
    const sealed = seal(r, place, 'whsec_abc');
    for (const other of [{ ...place, kind: 'ingester' }, { ...place, tenant: 't2' }, { ...place, id: 'dst_2' }, { ...place, field: 'auth' }]) {
      expect(() => open(r, other, sealed)).toThrow(SecretDecryptError);
    }
  });

  it('a wrong key or a missing key fails with an error naming the key id, never a key', () => {
    const sealed = seal(ring(k1), place, 'whsec_abc');
    const wrong = randomKek('k1');
    let message = '';
    try {
      open(ring(wrong), place, sealed);
    } catch (err) {
      expect(err).toBeInstanceOf(SecretDecryptError);
      message = (err as Error).message;
    }
    expect(message).toMatch(/key "k1"/);
    expect(message).not.toContain(wrong.split(':')[1]!);
    expect(message).not.toContain(k1.split(':')[1]!);
    expect(() => open(ring(randomKek('k2')), place, sealed)).toThrow(/sealed under key "k1", which is not in the keyring/);
  });

  it('an altered ciphertext or an unknown format version fails', () => {
    const r = ring(k1);
    const sealed = seal(r, place, 'whsec_abc');
    const blob = Buffer.from(sealed.split(':')[3]!, 'base64url');
    blob[blob.length - 1]! ^= 1;
    expect(() => open(r, place, `enc:v1:k1:${blob.toString('base64url')}`)).toThrow(/altered/);
    expect(() => open(r, place, sealed.replace('enc:v1:', 'enc:v2:'))).toThrow(/format v2/);
    expect(() => open(r, place, 'enc:v1:k1:AAAA')).toThrow(/truncated/);
  });

  it('rotation: the new key first seals, the old one still opens what it sealed', () => {
    const k2 = randomKek('k2');
    const old = seal(ring(k1), place, 'whsec_old');
    const rotated = ring(k2, k1);
    expect(open(rotated, place, old).toString()).toBe('whsec_old');
    expect(seal(rotated, place, 'whsec_new')).toMatch(/^enc:v1:k2:/);
  });
});

describe('masked secrets', () => {
  it.each([
    ['', '****'],
    ['abc', '****'],
    ['abcd', '****d'],
    ['secret', '****t'],
    ['abcdefg', '****g'],
    ['abcdefgh', '****gh'],
    ['abcdefghijkl', '****jkl'],
    ['abcdefghijklmno', '****mno'],
    ['abcdefghijklmnop', '****mnop'],
    ['keep-this-secret-for-long', '****long'],
    ['😀😀😀😀😀😀😀😀', '****😀😀'],
  ])('%j shows as %j: at most a quarter of it, at most four characters', (secret, shown) => {
    expect(maskValue(secret)).toBe(shown);
  });

  it('a value that is not a string shows as the mask alone', () => {
    for (const v of [undefined, null, 12345678, { a: 'b' }]) expect(maskValue(v)).toBe('****');
  });
});

describe('keyring text', () => {
  it('takes id:base64 pairs, comma- or line-separated, the first one current', () => {
    const r = parseKeyring(`${randomKek('new')}\n# old key\n${randomKek('old')}`, 'file');
    expect(r.current.id).toBe('new');
    expect([...r.byId.keys()]).toEqual(['new', 'old']);
  });

  it('refuses bad keys without echoing them', () => {
    const short = `k1:${Buffer.alloc(16, 7).toString('base64')}`;
    expect(() => parseKeyring(short, 'SECRETS_KEK')).toThrow(/key "k1" is not the base64 of 32 bytes.*openssl rand -base64 32/);
    try {
      parseKeyring(short, 'SECRETS_KEK');
    } catch (err) {
      expect((err as Error).message).not.toContain(short.split(':')[1]!);
    }
    expect(() => parseKeyring(Buffer.alloc(32).toString('base64'), 'SECRETS_KEK')).toThrow(KeyringError);
    expect(() => parseKeyring(`${randomKek('a')},${randomKek('a')}`, 'SECRETS_KEK')).toThrow(/appears twice/);
    expect(() => parseKeyring('', 'SECRETS_KEK')).toThrow(/no key/);
  });
});

describe('keyring configuration', () => {
  it('production without a key is a configuration error that says how to make one', () => {
    expect(() => loadConfig({})).toThrow(ConfigError);
    expect(() => loadConfig({})).toThrow(/SECRETS_KEK or SECRETS_KEK_FILE is required.*openssl rand -base64 32/);
  });

  it('a malformed SECRETS_KEK is reported without its value', () => {
    const bad = 'k1:c2hvcnQ=';
    try {
      loadConfig({ SECRETS_KEK: bad });
      throw new Error('accepted');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toMatch(/SECRETS_KEK: key "k1"/);
      expect((err as Error).message).not.toContain('c2hvcnQ');
    }
  });

  it('a key file inside DATA_DIR is refused; one outside is read', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kek-'));
    expect(() => loadConfig({ DATA_DIR: path.join(dir, 'data'), SECRETS_KEK_FILE: path.join(dir, 'data', 'k.kek') })).toThrow(/must lie outside DATA_DIR/);
    const file = path.join(dir, 'k.kek');
    writeFileSync(file, `${randomKek('filed')}\n`);
    const config = loadConfig({ DATA_DIR: path.join(dir, 'data'), SECRETS_KEK_FILE: file });
    expect(loadKeyring(config.secrets).current.id).toBe('filed');
  });

  it('development generates a key outside DATA_DIR (mode 0600), names it at start and keeps it', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kek-dev-'));
    // a home of its own, so the test leaves nothing in the real one
    const config = loadConfig({ HOOKLINE_ENV: 'development', DATA_DIR: path.join(dir, 'data'), HOME: path.join(dir, 'home') });
    expect(config.secrets.kekFile!.startsWith(path.join(dir, 'home', '.hookline', 'keys'))).toBe(true);
    const file = config.secrets.kekFile!;
    expect(path.relative(config.dataDir, file).startsWith('..')).toBe(true);
    expect(config.relaxedDefaults.join('\n')).toContain(`SECRETS_KEK_FILE=${file}`);
    const first = loadKeyring(config.secrets);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(loadKeyring(config.secrets).current.key.equals(first.current.key)).toBe(true);
  });
});

describe('entity secrets', () => {
  const r = ring(randomKek('k1'));
  const destination: Destination = {
    kind: 'destination', id: 'dst_1', tenant_id: 't1', name: 'd', url: 'https://x.test', status: 'active',
    signing_secret: 'whsec_dest', auth: { type: 'basic', username: 'u', password: 'pw-dest' },
    disabled_reason: null, created_at: '', updated_at: '',
  };
  const ingester: Ingester = {
    kind: 'ingester', id: 'ing_1', tenant_id: 't1', name: 'i', provider: 'generic',
    config: { signing_secrets: ['s-one', 's-two'], header: 'x-sig', api_token: 'tok-value-9' }, filters: [], created_at: '', updated_at: '',
  };

  it('seals every secret member, leaves the rest in clear, and opens back to the same entity', () => {
    const sealedDest = sealEntity(r, destination);
    const text = JSON.stringify(sealedDest);
    for (const s of ['whsec_dest', 'pw-dest']) expect(text).not.toContain(s);
    expect(text).toContain('https://x.test');
    expect(openEntity(r, sealedDest)).toEqual(destination);
    const sealedIng = sealEntity(r, ingester);
    for (const s of ['s-one', 's-two', 'tok-value-9']) expect(JSON.stringify(sealedIng)).not.toContain(s);
    expect((sealedIng as Ingester).config.header).toBe('x-sig');
    expect(openEntity(r, sealedIng)).toEqual(ingester);
    expect(sealingOf(sealedIng)).toEqual({ keyIds: ['k1', 'k1'], clear: 0 });
    expect(sealingOf(ingester)).toEqual({ keyIds: [], clear: 2 });
  });

  it('a secret copied from one entity into another does not open', () => {
    const a = sealEntity(r, destination) as Destination;
    const b = sealEntity(r, { ...destination, id: 'dst_2' }) as Destination;
    expect(() => openEntity(r, { ...b, signing_secret: a.signing_secret })).toThrow(SecretDecryptError);
  });
});

describe('evidence signing key file', () => {
  it('is written sealed; a clear one is sealed in place; rotation re-seals it under the new key', () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'evkey-'));
    const file = path.join(dataDir, 'evidence', 'signing-key');
    const k1 = ring(randomKek('k1'));
    const signer = loadEvidenceSigner({ signingKey: undefined, origin: 'test/origin', dataDir, keyring: k1 });
    expect(readFileSync(file, 'utf8')).toMatch(/^enc:v1:k1:/);
    expect(loadEvidenceSigner({ signingKey: undefined, origin: undefined, dataDir, keyring: k1 }).keyId).toEqual(signer.keyId);

    const clear = generateSignerKey('test/clear');
    writeFileSync(file, `${clear}\n`);
    const fromClear = loadEvidenceSigner({ signingKey: undefined, origin: undefined, dataDir, keyring: k1 });
    expect(fromClear.keyId).toEqual(parseSignerKey(clear).keyId);
    // the seed is everything after the fourth '+' (its base64 may hold '+' itself)
    expect(readFileSync(file, 'utf8')).not.toContain(clear.split('+').slice(4).join('+'));
    expect(readFileSync(file, 'utf8')).toMatch(/^enc:v1:k1:/);

    const k2 = parseKeyring(`${randomKek('k2')},${[...k1.byId.values()].map((k) => `${k.id}:${k.key.toString('base64')}`).join(',')}`, 'SECRETS_KEK');
    expect(resealEvidenceKey(dataDir, k2)).toBe('resealed');
    expect(resealEvidenceKey(dataDir, k2)).toBe('current');
    expect(readFileSync(file, 'utf8')).toMatch(/^enc:v1:k2:/);
    expect(loadEvidenceSigner({ signingKey: undefined, origin: undefined, dataDir, keyring: parseKeyring([...k2.byId.values()].slice(0, 1).map((k) => `${k.id}:${k.key.toString('base64')}`).join(','), 'x') }).keyId).toEqual(parseSignerKey(clear).keyId);
    expect(() => loadEvidenceSigner({ signingKey: undefined, origin: undefined, dataDir, keyring: k1 })).toThrow(/key "k2"/);
  });
});
