import { createHash, createPublicKey, type KeyObject } from 'node:crypto';
import {
  formatCheckpoint,
  generateSignerKey,
  noteKeyId,
  openNote,
  parseCheckpoint,
  parseSignerKey,
  parseVerifierKey,
  signNote,
  verifierKeyString,
} from '../../core/signed-note';

/** What sigstore's checkpoint verifier reads of a Rekor entry and of a trusted log. */
interface SigstoreCheckpointEntry {
  integratedTime: string;
  inclusionProof: { checkpoint: { envelope: string }; rootHash: Buffer };
}
interface SigstoreTLog {
  logID: Buffer;
  publicKey: KeyObject;
  validFor: { start: Date; end: Date };
}

// An internal module of @sigstore/verify: the checkpoint (signed note) verifier that Rekor clients run.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { verifyCheckpoint } = require('@sigstore/verify/dist/timestamp/checkpoint') as {
  verifyCheckpoint: (entry: SigstoreCheckpointEntry, tlogs: SigstoreTLog[]) => void;
};

// Test vectors of golang.org/x/mod/sumdb/note (note_test.go).
const GO_VKEY = 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW';
const GO_SKEY = 'PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz';
const GO_TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
const GO_NOTE =
  GO_TEXT + '\n' + '\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n';

/** A node:crypto key for a raw Ed25519 public key, built without our code. */
function ed25519PublicKey(raw: Buffer): KeyObject {
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
}

function sigstoreAccepts(envelope: string, rootHash: Buffer, tlogs: SigstoreTLog[]): boolean {
  try {
    verifyCheckpoint({ integratedTime: String(Math.floor(Date.now() / 1000)), inclusionProof: { checkpoint: { envelope }, rootHash } }, tlogs);
    return true;
  } catch {
    return false;
  }
}

/** The signature line a signer adds to a text, on its own. */
function signatureLine(text: string, skey: string): string {
  return signNote(text, parseSignerKey(skey)).slice(text.length + 1);
}

/** Replaces the base64 payload of every signature line with `mangle` of its bytes. */
function mangleSignatures(note: string, mangle: (bytes: Buffer) => Buffer): string {
  return note.replace(/^(\u2014 \S+ )(\S+)$/gmu, (_all, head: string, b64: string) => head + mangle(Buffer.from(b64, 'base64')).toString('base64'));
}

describe('signed notes against the Go reference implementation', () => {
  it('reproduce its signature byte for byte and open its note', () => {
    const signer = parseSignerKey(GO_SKEY);
    expect(signer.name).toBe('PeterNeumann');
    expect(signer.keyId.toString('hex')).toBe('c74f20a3');
    expect(signer.verifierKey).toBe(GO_VKEY);
    expect(signNote(GO_TEXT, signer)).toBe(GO_NOTE);

    const verifier = parseVerifierKey(GO_VKEY);
    expect(verifier.keyId.toString('hex')).toBe('c74f20a3');
    expect(verifier.publicKey.equals(signer.publicKey)).toBe(true);
    expect(noteKeyId('PeterNeumann', verifier.publicKey).toString('hex')).toBe('c74f20a3');
    expect(verifierKeyString(verifier)).toBe(GO_VKEY);
    expect(openNote(GO_NOTE, verifier)).toBe(GO_TEXT);
  });
});

describe('checkpoints checked by sigstore', () => {
  const skey = generateSignerKey('log.example/hookline');
  const signer = parseSignerKey(skey);
  const root = createHash('sha256').update('a tree').digest();
  const note = signNote(formatCheckpoint({ origin: 'log.example/hookline', size: 20852163, root }), signer);
  const tlogs: SigstoreTLog[] = [
    {
      logID: Buffer.concat([signer.keyId, Buffer.alloc(28)]),
      publicKey: ed25519PublicKey(signer.publicKey),
      validFor: { start: new Date(0), end: new Date(Date.now() + 86_400_000) },
    },
  ];

  it('accepts a checkpoint we sign', () => {
    expect(note).toBe(`log.example/hookline\n20852163\n${root.toString('base64')}\n\n\u2014 log.example/hookline ${note.split(' ').pop()}`);
    expect(sigstoreAccepts(note, root, tlogs)).toBe(true);
    expect(parseCheckpoint(openNote(note, parseVerifierKey(signer.verifierKey)))).toEqual({ origin: 'log.example/hookline', size: 20852163, root, extensions: [] });
  });

  it.each([
    ['the size changed', note.replace('\n20852163\n', '\n20852164\n')],
    ['the root changed', note.replace(root.toString('base64'), createHash('sha256').update('another tree').digest().toString('base64'))],
    ['the origin changed', note.replace(/^log\.example\/hookline\n/, 'log.example/other\n')],
    ['a signature byte flipped', mangleSignatures(note, (b) => Buffer.from(b.map((x, i) => (i === 10 ? x ^ 0x01 : x))))],
    ['the key id changed', mangleSignatures(note, (b) => Buffer.from(b.map((x, i) => (i === 0 ? x ^ 0x01 : x))))],
  ])('rejects a checkpoint when %s, and so do we', (_what, tampered) => {
    expect(tampered).not.toBe(note);
    const tamperedRoot = parseCheckpoint(tampered.slice(0, tampered.indexOf('\n\n') + 1)).root;
    expect(sigstoreAccepts(tampered, tamperedRoot, tlogs)).toBe(false);
    expect(() => openNote(tampered, parseVerifierKey(signer.verifierKey))).toThrow(/invalid note signature|not signed by/);
  });

  it('rejects a checkpoint signed by another key', () => {
    const other = parseSignerKey(generateSignerKey('log.example/hookline'));
    const forged = signNote(formatCheckpoint({ origin: 'log.example/hookline', size: 20852163, root }), other);
    expect(sigstoreAccepts(forged, root, tlogs)).toBe(false);
    expect(() => openNote(forged, parseVerifierKey(signer.verifierKey))).toThrow(/not signed by log\.example\/hookline\+/);
  });
});

describe('openNote', () => {
  const skeyA = generateSignerKey('a.example/key');
  const skeyB = generateSignerKey('b.example/key');
  const verifierA = parseVerifierKey(parseSignerKey(skeyA).verifierKey);
  const verifierB = parseVerifierKey(parseSignerKey(skeyB).verifierKey);
  const text = 'first line\n\nafter an empty line\n';

  it('ignores signatures from other keys and finds its own among them', () => {
    const both = signNote(text, parseSignerKey(skeyA)) + signatureLine(text, skeyB);
    expect(openNote(both, verifierA)).toBe(text);
    expect(openNote(both, verifierB)).toBe(text);
    const unknownFirst = `${text}\n${signatureLine(text, generateSignerKey('c.example/key'))}${signatureLine(text, skeyA)}`;
    expect(openNote(unknownFirst, verifierA)).toBe(text);
  });

  it('ignores a signature that shares only the name or only the key id with the verifier', () => {
    const sameName = signNote(text, parseSignerKey(generateSignerKey('a.example/key')));
    expect(() => openNote(sameName, verifierA)).toThrow(/^note is not signed by a\.example\/key\+[0-9a-f]{8}$/);
    const sameId = signNote(text, parseSignerKey(skeyA)).replace('\u2014 a.example/key ', '\u2014 z.example/key ');
    expect(() => openNote(sameId, verifierA)).toThrow(/not signed by/);
  });

  it.each([
    ['no signature line', text],
    ['no blank line before the signatures', `first line\n${signatureLine('first line\n', skeyA)}`],
    ['a signature block without final newline', signNote(text, parseSignerKey(skeyA)).slice(0, -1)],
    ['a signature line without the em dash', signNote(text, parseSignerKey(skeyA)).replace('\u2014 ', '- ')],
    ['a signature that is not base64', signNote(text, parseSignerKey(skeyA)).replace(/ (\S+)\n$/, ' %%%%\n')],
    ['a signature of four bytes', `${text}\n\u2014 a.example/key ${verifierA.keyId.toString('base64')}\n`],
    ['a control character', signNote(text, parseSignerKey(skeyA)).replace('first', 'fi\u0007rst')],
    ['a text signed by another key', signNote(text, parseSignerKey(skeyB))],
    ['a truncated signature', mangleSignatures(signNote(text, parseSignerKey(skeyA)), (b) => b.subarray(0, 40))],
    ['an altered text', signNote(text, parseSignerKey(skeyA)).replace('first', 'frist')],
  ])('throws a one-line message for %s', (_what, note) => {
    let message = '';
    try {
      openNote(note, verifierA);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/^(malformed note|invalid note signature|note is not signed)[^\n]*$/);
  });

  it('refuses to sign a text that does not end in newline or has control characters', () => {
    const signer = parseSignerKey(skeyA);
    expect(() => signNote('no newline', signer)).toThrow(/does not end in newline/);
    expect(() => signNote('tab\there\n', signer)).toThrow(/control character/);
    expect(() => signNote('lone \ud800 surrogate\n', signer)).toThrow(/not valid Unicode/);
  });
});

describe('keys', () => {
  it('round-trip a generated key through the signer and the verifier key string', () => {
    const skey = generateSignerKey('log.example/key');
    expect(skey).toMatch(/^PRIVATE\+KEY\+log\.example\/key\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}$/);
    const signer = parseSignerKey(skey);
    const verifier = parseVerifierKey(signer.verifierKey);
    expect(verifierKeyString(verifier)).toBe(signer.verifierKey);
    expect(skey.split('+')[3]).toBe(signer.keyId.toString('hex'));
    expect(verifier.keyId.equals(noteKeyId('log.example/key', verifier.publicKey))).toBe(true);
    expect(openNote(signNote('hello\n', signer), verifier)).toBe('hello\n');
    expect(generateSignerKey('log.example/key')).not.toBe(skey);
  });

  it.each(['', 'has space', 'has+plus', 'tab\tname', 'nbsp\u00a0name', 'ideographic\u3000space'])('refuse the key name %j', (name) => {
    expect(() => generateSignerKey(name)).toThrow(/name must be non-empty/);
  });

  const otherAlg = (() => {
    // A key that is well-formed except for its algorithm byte, with an id computed for that byte.
    const key = Buffer.concat([Buffer.from([0x02]), parseVerifierKey(GO_VKEY).publicKey]);
    const id = createHash('sha256').update('PeterNeumann\n').update(key).digest().subarray(0, 4).toString('hex');
    return `PeterNeumann+${id}+${key.toString('base64')}`;
  })();

  it.each([
    ['truncated', GO_VKEY.slice(0, -4), /malformed verifier key/],
    ['without key', 'PeterNeumann+c74f20a3', /malformed verifier key/],
    ['with a mangled id', GO_VKEY.replace('c74f20a3', 'c74f20a4'), /key id c74f20a4 does not match/],
    ['with a short id', GO_VKEY.replace('c74f20a3', 'c74f20a'), /key id is not 8 hex digits/],
    ['with another name', GO_VKEY.replace('PeterNeumann', 'PeterNeuman'), /does not match/],
    ['with a bad name', GO_VKEY.replace('PeterNeumann', 'Peter Neumann'), /name must be non-empty/],
    ['with another algorithm', otherAlg, /unsupported verifier key algorithm 0x02/],
    ['with a key of 31 bytes', `PeterNeumann+c74f20a3+${Buffer.concat([Buffer.from([1]), Buffer.alloc(31)]).toString('base64')}`, /32 bytes/],
    ['with junk in the base64', GO_VKEY.replace('ARpc', 'AR*c'), /not base64/],
  ])('parseVerifierKey refuses a key %s', (_what, vkey, message) => {
    expect(() => parseVerifierKey(vkey)).toThrow(message);
  });

  const seedWithAlg = (alg: number) => {
    const bytes = Buffer.from(GO_SKEY.split('+').slice(4).join('+'), 'base64');
    bytes[0] = alg;
    return `PRIVATE+KEY+PeterNeumann+c74f20a3+${bytes.toString('base64')}`;
  };

  it.each([
    ['truncated', GO_SKEY.slice(0, -4), /malformed signer key/],
    ['without PRIVATE+KEY', GO_SKEY.replace('PRIVATE+KEY+', ''), /does not start with PRIVATE\+KEY\+/],
    ['with a mangled id', GO_SKEY.replace('c74f20a3', 'd74f20a3'), /key id d74f20a3 does not match/],
    ['with another name', GO_SKEY.replace('PeterNeumann', 'Peter'), /does not match/],
    ['with another algorithm', seedWithAlg(0x02), /unsupported signer key algorithm 0x02/],
    ['with a short seed', `PRIVATE+KEY+PeterNeumann+c74f20a3+${Buffer.concat([Buffer.from([1]), Buffer.alloc(16)]).toString('base64')}`, /32 bytes/],
  ])('parseSignerKey refuses a key %s, without echoing it', (_what, skey, message) => {
    let error: Error | undefined;
    try {
      parseSignerKey(skey);
    } catch (err) {
      error = err as Error;
    }
    expect(error?.message).toMatch(message);
    expect(error?.message).not.toContain('AYEKFALV');
    expect(error?.message).not.toContain('\n');
  });
});

describe('checkpoint text', () => {
  const root = createHash('sha256').update('root').digest();

  it('formats and parses origin, size, root and extension lines', () => {
    expect(formatCheckpoint({ origin: 'o.example/log', size: 0, root })).toBe(`o.example/log\n0\n${root.toString('base64')}\n`);
    expect(parseCheckpoint(`o.example/log\n42\n${root.toString('base64')}\next one\next two\n`)).toEqual({
      origin: 'o.example/log',
      size: 42,
      root,
      extensions: ['ext one', 'ext two'],
    });
  });

  it.each([
    ['a leading zero', `o\n042\n${root.toString('base64')}\n`],
    ['a signed size', `o\n+42\n${root.toString('base64')}\n`],
    ['a hex size', `o\n0x2a\n${root.toString('base64')}\n`],
    ['a size past 2^53', `o\n9007199254740993\n${root.toString('base64')}\n`],
    ['a short root', `o\n42\n${root.subarray(1).toString('base64')}\n`],
    ['an unpadded root', `o\n42\n${root.toString('base64').replace(/=$/, '')}\n`],
    ['an empty origin', `\n42\n${root.toString('base64')}\n`],
    ['two lines', `o\n42\n`],
    ['no final newline', `o\n42\n${root.toString('base64')}`],
    ['an empty extension line', `o\n42\n${root.toString('base64')}\n\next\n`],
  ])('refuses %s', (_what, text) => {
    expect(() => parseCheckpoint(text)).toThrow(/^malformed checkpoint/);
  });

  it('refuses to format what it could not parse', () => {
    expect(() => formatCheckpoint({ origin: '', size: 1, root })).toThrow(/origin/);
    expect(() => formatCheckpoint({ origin: 'a\nb', size: 1, root })).toThrow(/origin/);
    expect(() => formatCheckpoint({ origin: 'o', size: -1, root })).toThrow(RangeError);
    expect(() => formatCheckpoint({ origin: 'o', size: 1.5, root })).toThrow(RangeError);
    expect(() => formatCheckpoint({ origin: 'o', size: 1, root: root.subarray(1) })).toThrow(/32 bytes/);
  });
});
