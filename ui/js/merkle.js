// RFC 6962 / RFC 9162 Merkle tree hashing and inclusion proof verification with WebCrypto
// SHA-256: the browser's copy of core/merkle.ts (verifyInclusion), so that a proof is checked
// here, in the page, and not taken on the service's word.

const HASH_BYTES = 32;

/** Lowercase hex of 32-byte hashes and the like; throws on anything that is not hex. */
export function hexToBytes(hex) {
  if (typeof hex !== 'string' || hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) throw new Error('not a hex string');
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function bytesToHex(bytes) {
  let hex = '';
  for (const b of bytes) hex += b.toString(16).padStart(2, '0');
  return hex;
}

export function equalBytes(a, b) {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

export async function sha256(...parts) {
  const length = parts.reduce((n, p) => n + p.length, 0);
  const all = new Uint8Array(length);
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  return new Uint8Array(await crypto.subtle.digest('SHA-256', all));
}

/** RFC 6962 leaf hash, SHA-256(0x00 || leaf). */
export function leafHash(leaf) {
  return sha256(Uint8Array.of(0x00), leaf);
}

/** RFC 6962 interior node hash, SHA-256(0x01 || left || right). */
export function nodeHash(left, right) {
  return sha256(Uint8Array.of(0x01), left, right);
}

const isCount = (n) => Number.isSafeInteger(n) && n >= 0;
const isHash = (h) => h instanceof Uint8Array && h.length === HASH_BYTES;
const half = (n) => Math.floor(n / 2);
const isOdd = (n) => n % 2 === 1;

/**
 * RFC 9162 section 2.1.3.2: does `proof` (the audit path, leaf to root) lead from the hash of
 * leaf `index` to `root` in a tree of `size` leaves? Sizes and indexes are numbers up to 2^53,
 * halved by division (shifts wrap at 2^31). Malformed arguments answer false.
 */
export async function verifyInclusion(leaf, index, size, proof, root) {
  if (!isCount(index) || !isCount(size) || index >= size) return false;
  if (!isHash(leaf) || !isHash(root) || !Array.isArray(proof) || !proof.every(isHash)) return false;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0) return false;
    if (isOdd(fn) || fn === sn) {
      r = await nodeHash(p, r);
      while (!isOdd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      r = await nodeHash(r, p);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && equalBytes(r, root);
}
