import { createHash, createPrivateKey, createPublicKey, randomBytes, sign, verify, type KeyObject } from 'node:crypto';

/**
 * C2SP signed notes (https://c2sp.org/signed-note) with Ed25519 keys, in the key formats of
 * golang.org/x/mod/sumdb/note, and C2SP checkpoints (https://c2sp.org/tlog-checkpoint): the
 * signed tree heads a transparency log publishes and any third party can check.
 */

/** A note signing key: its public identity and a function that signs a note text. */
export interface NoteSigner {
  name: string;
  keyId: Buffer;
  publicKey: Buffer;
  verifierKey: string;
  sign(text: string): string;
}

/** A trusted note verification key. */
export interface NoteVerifier {
  name: string;
  keyId: Buffer;
  publicKey: Buffer;
}

/** The body of a tlog checkpoint. */
export interface Checkpoint {
  origin: string;
  size: number;
  root: Buffer;
  extensions: string[];
}

const ALG_ED25519 = 0x01;
const ED25519_KEY_BYTES = 32;
const KEY_ID_BYTES = 4;
const ROOT_BYTES = 32;
const SIGNATURE_PREFIX = '\u2014 ';
const MAX_SIGNATURES = 100;
// DER headers that wrap a raw Ed25519 seed / public key into PKCS#8 / SPKI for node:crypto.
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_ED25519 = Buffer.from('302a300506032b6570032100', 'hex');

/** key id = first 4 bytes of SHA-256(name || 0x0A || 0x01 || 32-byte public key) */
export function noteKeyId(name: string, publicKey: Buffer): Buffer {
  if (publicKey.length !== ED25519_KEY_BYTES) throw new Error(`an Ed25519 public key is ${ED25519_KEY_BYTES} bytes, got ${publicKey.length}`);
  return createHash('sha256').update(name, 'utf8').update(Buffer.from([0x0a, ALG_ED25519])).update(publicKey).digest().subarray(0, KEY_ID_BYTES);
}

/** "PRIVATE+KEY+<name>+<8 hex key id>+<base64(0x01 || 32-byte seed)>" — the Go golang.org/x/mod/sumdb/note format */
export function generateSignerKey(name: string): string {
  assertKeyName(name, 'key');
  const seed = randomBytes(ED25519_KEY_BYTES);
  const keyId = noteKeyId(name, publicKeyOf(privateKeyFromSeed(seed)));
  return `PRIVATE+KEY+${name}+${keyId.toString('hex')}+${Buffer.concat([Buffer.from([ALG_ED25519]), seed]).toString('base64')}`;
}

/** Parses a signer key string; throws a one-line error (never echoing the key) when it is malformed or its id does not match. */
export function parseSignerKey(skey: string): NoteSigner {
  const [private1, private2, name = '', idHex = '', encoded = ''] = splitKey(skey, 5);
  if (private1 !== 'PRIVATE' || private2 !== 'KEY') throw new Error('malformed signer key: it does not start with PRIVATE+KEY+');
  assertKeyName(name, 'signer key');
  const keyId = parseKeyId(idHex, 'signer key');
  const seed = parseKeyMaterial(encoded, 'signer key');
  const privateKey = privateKeyFromSeed(seed);
  const publicKey = publicKeyOf(privateKey);
  if (!noteKeyId(name, publicKey).equals(keyId)) throw new Error(`malformed signer key: key id ${idHex} does not match the name and key`);
  const verifierKey = verifierKeyString({ name, keyId, publicKey });
  return {
    name,
    keyId,
    publicKey,
    verifierKey,
    sign: (text) => buildSignedNote(text, name, keyId, (message) => sign(null, message, privateKey)),
  };
}

/** Parses "<name>+<8 hex>+<base64(0x01 || pubkey)>" and checks the key id against the name and key. */
export function parseVerifierKey(vkey: string): NoteVerifier {
  const [name = '', idHex = '', encoded = ''] = splitKey(vkey, 3);
  assertKeyName(name, 'verifier key');
  const keyId = parseKeyId(idHex, 'verifier key');
  const publicKey = parseKeyMaterial(encoded, 'verifier key');
  if (!noteKeyId(name, publicKey).equals(keyId)) throw new Error(`malformed verifier key: key id ${idHex} does not match the name and key`);
  return { name, keyId, publicKey };
}

/** The text form of a verifier key, as published for clients to trust. */
export function verifierKeyString(v: NoteVerifier): string {
  return `${v.name}+${v.keyId.toString('hex')}+${Buffer.concat([Buffer.from([ALG_ED25519]), v.publicKey]).toString('base64')}`;
}

/** Signs a note text (ending in newline, no control characters but newline): text + "\n" + "— <name> <base64(keyId || sig)>\n". */
export function signNote(text: string, signer: NoteSigner): string {
  assertNoteText(text);
  assertKeyName(signer.name, 'signer');
  return signer.sign(text);
}

/** Parses a signed note, verifies the signature line made by `verifier` (matching name and key id), returns the text; throws with a one-line reason if missing/invalid. Unknown signature lines from other keys are allowed and ignored. */
export function openNote(note: string, verifier: NoteVerifier): string {
  const { text, signatures } = splitNote(note);
  let verified = false;
  for (const signature of signatures) {
    if (signature.name !== verifier.name || !signature.keyId.equals(verifier.keyId)) continue;
    if (!verifyEd25519(verifier.publicKey, text, signature.bytes)) throw new Error(`invalid note signature by ${verifier.name}`);
    verified = true;
  }
  if (!verified) throw new Error(`note is not signed by ${verifier.name}+${verifier.keyId.toString('hex')}`);
  return text;
}

/** A signed note's text and its signature lines, parsed but not verified; throws with a one-line reason if malformed. */
export function splitNote(note: string): { text: string; signatures: { name: string; keyId: Buffer; bytes: Buffer }[] } {
  assertNoteCharacters(note, 'note');
  const split = note.lastIndexOf('\n\n');
  if (split < 0) throw new Error('malformed note: no blank line before the signatures');
  const block = note.slice(split + 2);
  if (block === '' || !block.endsWith('\n')) throw new Error('malformed note: the signatures must be lines ending in newline');
  const lines = block.slice(0, -1).split('\n');
  if (lines.length > MAX_SIGNATURES) throw new Error(`malformed note: more than ${MAX_SIGNATURES} signatures`);
  return { text: note.slice(0, split + 1), signatures: lines.map(parseSignatureLine) };
}

/** The checkpoint note text: "origin\nsize\nbase64(root)\n". */
export function formatCheckpoint(c: { origin: string; size: number; root: Buffer }): string {
  if (c.origin === '' || /[\u0000-\u001f]/.test(c.origin)) throw new Error('checkpoint origin must be a non-empty single line');
  if (!Number.isSafeInteger(c.size) || c.size < 0) throw new RangeError(`checkpoint size must be a non-negative integer, got ${c.size}`);
  if (c.root.length !== ROOT_BYTES) throw new Error(`checkpoint root must be ${ROOT_BYTES} bytes, got ${c.root.length}`);
  return `${c.origin}\n${c.size}\n${c.root.toString('base64')}\n`;
}

/** Parses a checkpoint note text strictly: decimal size without leading zeros, 32-byte root, non-empty origin and extension lines. */
export function parseCheckpoint(text: string): Checkpoint {
  if (!text.endsWith('\n')) throw new Error('malformed checkpoint: it does not end in newline');
  const lines = text.slice(0, -1).split('\n');
  const [origin, sizeLine, rootLine, ...extensions] = lines;
  if (origin === undefined || sizeLine === undefined || rootLine === undefined) throw new Error('malformed checkpoint: fewer than three lines');
  if (lines.some((line) => line === '')) throw new Error('malformed checkpoint: empty line');
  const size = Number(sizeLine);
  if (!/^(0|[1-9][0-9]*)$/.test(sizeLine) || !Number.isSafeInteger(size)) throw new Error(`malformed checkpoint: bad tree size ${JSON.stringify(sizeLine)}`);
  const root = decodeBase64(rootLine);
  if (root?.length !== ROOT_BYTES) throw new Error('malformed checkpoint: the root is not a base64 32-byte hash');
  return { origin, size, root, extensions };
}

function buildSignedNote(text: string, name: string, keyId: Buffer, signBytes: (message: Buffer) => Buffer): string {
  assertNoteText(text);
  const signature = signBytes(Buffer.from(text, 'utf8'));
  return `${text}\n${SIGNATURE_PREFIX}${name} ${Buffer.concat([keyId, signature]).toString('base64')}\n`;
}

function parseSignatureLine(line: string): { name: string; keyId: Buffer; bytes: Buffer } {
  if (!line.startsWith(SIGNATURE_PREFIX)) throw new Error('malformed note: a signature line does not start with an em dash and a space');
  const rest = line.slice(SIGNATURE_PREFIX.length);
  const space = rest.indexOf(' ');
  const name = rest.slice(0, space);
  const decoded = space < 0 ? undefined : decodeBase64(rest.slice(space + 1));
  if (decoded === undefined || !isKeyName(name) || decoded.length <= KEY_ID_BYTES) throw new Error('malformed note: a signature line is not "— <name> <base64>"');
  return { name, keyId: decoded.subarray(0, KEY_ID_BYTES), bytes: decoded.subarray(KEY_ID_BYTES) };
}

function verifyEd25519(publicKey: Buffer, text: string, signature: Buffer): boolean {
  try {
    return verify(null, Buffer.from(text, 'utf8'), publicKeyFromRaw(publicKey), signature);
  } catch {
    return false;
  }
}

/** Splits on the first count-1 plus signs (fewer parts when there are fewer); the last part keeps its own, as base64 has them. */
function splitKey(key: string, count: number): string[] {
  const parts: string[] = [];
  let rest = key;
  while (parts.length < count - 1) {
    const plus = rest.indexOf('+');
    if (plus < 0) break;
    parts.push(rest.slice(0, plus));
    rest = rest.slice(plus + 1);
  }
  parts.push(rest);
  return parts;
}

function parseKeyId(idHex: string, what: string): Buffer {
  if (!/^[0-9a-fA-F]{8}$/.test(idHex)) throw new Error(`malformed ${what}: the key id is not 8 hex digits`);
  return Buffer.from(idHex, 'hex');
}

/** Decodes base64(0x01 || 32 bytes), the algorithm byte and key of both key strings. */
function parseKeyMaterial(encoded: string, what: string): Buffer {
  const bytes = decodeBase64(encoded);
  if (bytes === undefined || bytes.length === 0) throw new Error(`malformed ${what}: the key is not base64`);
  if (bytes[0] !== ALG_ED25519) throw new Error(`unsupported ${what} algorithm 0x${bytes[0]!.toString(16).padStart(2, '0')}`);
  if (bytes.length !== 1 + ED25519_KEY_BYTES) throw new Error(`malformed ${what}: an Ed25519 key is ${ED25519_KEY_BYTES} bytes, got ${bytes.length - 1}`);
  return bytes.subarray(1);
}

/** Standard padded base64 only, in its canonical form: Buffer.from would skip junk silently. */
function decodeBase64(s: string): Buffer | undefined {
  if (s.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(s)) return undefined;
  const bytes = Buffer.from(s, 'base64');
  return bytes.toString('base64') === s ? bytes : undefined;
}

function privateKeyFromSeed(seed: Buffer): KeyObject {
  return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, seed]), format: 'der', type: 'pkcs8' });
}

function publicKeyFromRaw(publicKey: Buffer): KeyObject {
  return createPublicKey({ key: Buffer.concat([SPKI_ED25519, publicKey]), format: 'der', type: 'spki' });
}

function publicKeyOf(privateKey: KeyObject): Buffer {
  return createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).subarray(SPKI_ED25519.length);
}

/** Key names are non-empty, with no Unicode white space and no plus sign (and, being inside a note, no control characters). */
function isKeyName(name: string): boolean {
  return name !== '' && !/[\p{White_Space}+\u0000-\u001f]/u.test(name) && isWellFormed(name);
}

function assertKeyName(name: string, what: string): void {
  if (!isKeyName(name)) throw new Error(`malformed ${what}: the name must be non-empty, without spaces or "+"`);
}

function assertNoteText(text: string): void {
  if (!text.endsWith('\n')) throw new Error('malformed note text: it does not end in newline');
  assertNoteCharacters(text, 'note text');
}

function assertNoteCharacters(s: string, what: string): void {
  if (/[\u0000-\u0009\u000b-\u001f]/.test(s)) throw new Error(`malformed ${what}: control character other than newline`);
  if (!isWellFormed(s)) throw new Error(`malformed ${what}: not valid Unicode`);
}

/** False when a string has an unpaired surrogate, which has no UTF-8 encoding. */
function isWellFormed(s: string): boolean {
  return !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);
}
