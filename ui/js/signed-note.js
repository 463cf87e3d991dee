// C2SP signed notes (https://c2sp.org/signed-note) with Ed25519 and C2SP checkpoints
// (https://c2sp.org/tlog-checkpoint), as core/signed-note.ts writes them: parsed strictly, and the
// signature checked with WebCrypto.

import { equalBytes, sha256 } from './merkle.js';

const ALG_ED25519 = 0x01;
const SIGNATURE_PREFIX = '\u2014 ';
const utf8 = new TextEncoder();

/** Standard padded base64 in its canonical form only; undefined otherwise. */
export function decodeBase64(s) {
  if (typeof s !== 'string' || s.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(s)) return undefined;
  let binary;
  try {
    binary = atob(s);
  } catch {
    return undefined;
  }
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  return btoa(binary) === s ? bytes : undefined;
}

/** `<name>+<8 hex key id>+<base64(0x01 || 32-byte key)>`, the key id checked against name and key. */
export async function parseVerifierKey(vkey) {
  const first = vkey.indexOf('+');
  const second = vkey.indexOf('+', first + 1);
  if (first <= 0 || second < 0) throw new Error('malformed verifier key');
  const name = vkey.slice(0, first);
  const idHex = vkey.slice(first + 1, second);
  const material = decodeBase64(vkey.slice(second + 1));
  if (!/^[0-9a-f]{8}$/.test(idHex)) throw new Error('malformed verifier key: the key id is not 8 hex digits');
  if (!material || material.length !== 33 || material[0] !== ALG_ED25519) throw new Error('malformed verifier key: not an Ed25519 key');
  const publicKey = material.subarray(1);
  const keyId = (await sha256(utf8.encode(name), Uint8Array.of(0x0a, ALG_ED25519), publicKey)).subarray(0, 4);
  if (bytesHex(keyId) !== idHex) throw new Error('malformed verifier key: the key id does not match the name and key');
  return { name, keyId, publicKey };
}

const bytesHex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');

/** The text of a signed note and its signature lines (not verified). */
export function splitNote(note) {
  const split = note.lastIndexOf('\n\n');
  if (split < 0) throw new Error('malformed note: no blank line before the signatures');
  const block = note.slice(split + 2);
  if (block === '' || !block.endsWith('\n')) throw new Error('malformed note: the signatures must be lines ending in newline');
  const signatures = block
    .slice(0, -1)
    .split('\n')
    .map((line) => {
      if (!line.startsWith(SIGNATURE_PREFIX)) throw new Error('malformed note: a signature line does not start with an em dash');
      const rest = line.slice(SIGNATURE_PREFIX.length);
      const space = rest.indexOf(' ');
      const decoded = space < 0 ? undefined : decodeBase64(rest.slice(space + 1));
      if (!decoded || decoded.length <= 4 || space <= 0) throw new Error('malformed note: a signature line is not "— <name> <base64>"');
      return { name: rest.slice(0, space), keyId: decoded.subarray(0, 4), bytes: decoded.subarray(4) };
    });
  return { text: note.slice(0, split + 1), signatures };
}

/** `origin\nsize\nbase64(root)\n[extensions]`: strictly, as core/signed-note.ts parses it. */
export function parseCheckpoint(text) {
  if (!text.endsWith('\n')) throw new Error('malformed checkpoint: it does not end in newline');
  const lines = text.slice(0, -1).split('\n');
  const [origin, sizeLine, rootLine] = lines;
  if (origin === undefined || sizeLine === undefined || rootLine === undefined) throw new Error('malformed checkpoint: fewer than three lines');
  if (lines.some((l) => l === '')) throw new Error('malformed checkpoint: empty line');
  const size = Number(sizeLine);
  if (!/^(0|[1-9][0-9]*)$/.test(sizeLine) || !Number.isSafeInteger(size)) throw new Error('malformed checkpoint: bad tree size');
  const root = decodeBase64(rootLine);
  if (!root || root.length !== 32) throw new Error('malformed checkpoint: the root is not a base64 32-byte hash');
  return { origin, size, root };
}

/**
 * Checks the note's signature by `verifier` with WebCrypto Ed25519. Answers the note's text when
 * the signature verifies; throws when it is missing or does not verify; answers null when this
 * browser has no Ed25519 (the caller reports the signature as not checked).
 */
export async function openNote(note, verifier) {
  const { text, signatures } = splitNote(note);
  const mine = signatures.filter((s) => s.name === verifier.name && equalBytes(s.keyId, verifier.keyId));
  if (mine.length === 0) throw new Error(`the checkpoint is not signed by ${verifier.name}`);
  let key;
  try {
    key = await crypto.subtle.importKey('raw', verifier.publicKey, { name: 'Ed25519' }, false, ['verify']);
  } catch {
    return null;
  }
  for (const s of mine) {
    const ok = await crypto.subtle.verify({ name: 'Ed25519' }, key, s.bytes, utf8.encode(text));
    if (!ok) throw new Error(`the checkpoint signature by ${verifier.name} does not verify`);
  }
  return text;
}
