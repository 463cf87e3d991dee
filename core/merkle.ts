import { createHash } from 'node:crypto';

/**
 * Merkle tree hashing of RFC 6962 / RFC 9162 over an append-only log. Every hash a proof needs
 * is MTH(D[a:b)) of a range the RFC 6962 PATH/SUBPROOF recursion produces, and every such range
 * is a run of complete aligned subtrees of strictly decreasing size. A log that keeps the hash
 * of each complete subtree once it exists can therefore answer any proof by reading O(log n)
 * stored nodes, without ever rebuilding the tree.
 *
 * Sizes and indexes are plain numbers up to 2^53, so the arithmetic here multiplies and
 * divides by powers of two instead of shifting (shifts wrap at 2^31). A proof or root hash
 * that is one stored node is the very buffer `get` returned, not a copy.
 */

/** Length in bytes of every hash in the tree (SHA-256). */
export const HASH_BYTES = 32;

const LEAF_PREFIX = Buffer.from([0x00]);
const NODE_PREFIX = Buffer.from([0x01]);

/** RFC 6962 leaf hash, SHA-256(0x00 || leaf): the prefix keeps a leaf from passing for a node. */
export function leafHash(leaf: Uint8Array): Buffer {
  return createHash('sha256').update(LEAF_PREFIX).update(leaf).digest();
}

/** RFC 6962 interior node hash, SHA-256(0x01 || left || right). */
export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  return createHash('sha256').update(NODE_PREFIX).update(left).update(right).digest();
}

/** Root of the empty tree: SHA-256 of the empty string (RFC 6962 section 2.1). */
export const EMPTY_ROOT: Buffer = createHash('sha256').digest();

/** A complete (perfect) subtree: 2^level leaves starting at leaf index*2^level. level 0 = a leaf hash. */
export interface NodeRef {
  level: number;
  index: number;
}

/** A stable string key for a node, for maps and key-value stores. */
export function nodeKey(n: NodeRef): string {
  return `${n.level}/${n.index}`;
}

/** Reference root of a list of leaf hashes (RFC 6962 MTH with split at largest power of two < n). For tests and small trees. */
export function rootOf(leafHashes: Buffer[]): Buffer {
  if (leafHashes.length === 0) return Buffer.from(EMPTY_ROOT);
  if (leafHashes.length === 1) return Buffer.from(leafHashes[0]!);
  const k = splitPoint(leafHashes.length);
  return nodeHash(rootOf(leafHashes.slice(0, k)), rootOf(leafHashes.slice(k)));
}

/** The right edge of an append-only tree: the roots of the complete subtrees covering [0,size), largest first (one per set bit of size). */
export class CompactRange {
  private count: number;
  private readonly edge: Buffer[];

  constructor(size = 0, hashes: Buffer[] = []) {
    assertCount('size', size);
    const expected = popcount(size);
    if (hashes.length !== expected) {
      throw new RangeError(`a compact range of size ${size} holds ${expected} hashes, got ${hashes.length}`);
    }
    hashes.forEach((h) => assertHash('compact range hash', h));
    this.count = size;
    this.edge = hashes.map((h) => Buffer.from(h));
  }

  /** Number of leaves appended so far. */
  get size(): number {
    return this.count;
  }

  /** Copies of the subtree roots, largest subtree first: with the size, all that is needed to resume appending. */
  hashes(): Buffer[] {
    return this.edge.map((h) => Buffer.from(h));
  }

  /** Appends one leaf hash; returns every complete node this creates, the leaf (level 0) first, then each merged parent upward, each with its hash. */
  append(leafHash: Buffer): (NodeRef & { hash: Buffer })[] {
    assertHash('leaf hash', leafHash);
    if (this.count >= Number.MAX_SAFE_INTEGER) throw new RangeError('the tree is full');
    let node: NodeRef & { hash: Buffer } = { level: 0, index: this.count, hash: Buffer.from(leafHash) };
    const created = [node];
    // Each trailing one bit of the old size is a complete subtree of the same level to merge with.
    for (let s = this.count; s % 2 === 1; s = Math.floor(s / 2)) {
      const left = this.edge.pop()!;
      node = { level: node.level + 1, index: Math.floor(node.index / 2), hash: nodeHash(left, node.hash) };
      created.push(node);
    }
    this.edge.push(Buffer.from(node.hash));
    this.count += 1;
    return created;
  }

  /** The tree head: EMPTY_ROOT when size 0, else the right fold of hashes(). */
  root(): Buffer {
    return Buffer.from(this.edge.length === 0 ? EMPTY_ROOT : foldRight(this.edge));
  }
}

/** The complete subtrees whose stored hashes are enough to build the inclusion proof of `index` in a tree of `size` (deduplicated, any order). */
export function inclusionProofNodes(index: number, size: number): NodeRef[] {
  assertIndex(index, size);
  return uniqueNodes(inclusionRanges(index, size).flatMap(rangeNodes));
}

/** RFC 9162 inclusion proof (audit path, leaf to root order) built from stored complete-subtree hashes; `get` throws if a node is missing. */
export function inclusionProof(index: number, size: number, get: (n: NodeRef) => Buffer): Buffer[] {
  assertIndex(index, size);
  return inclusionRanges(index, size).map((range) => rangeHash(range, get));
}

/** The complete subtrees whose stored hashes are enough to build the consistency proof from `from` to `to` (deduplicated, any order). */
export function consistencyProofNodes(from: number, to: number): NodeRef[] {
  assertSizes(from, to);
  return uniqueNodes(consistencyRanges(from, to).flatMap(rangeNodes));
}

/** RFC 9162 section 2.1.4 consistency proof between sizes from <= to (empty when from == to or from == 0). */
export function consistencyProof(from: number, to: number, get: (n: NodeRef) => Buffer): Buffer[] {
  assertSizes(from, to);
  return consistencyRanges(from, to).map((range) => rangeHash(range, get));
}

/** The complete subtrees whose right fold is the root of a tree of `size`, largest first. */
export function rootNodes(size: number): NodeRef[] {
  assertCount('size', size);
  return rangeNodes({ start: 0, end: size });
}

/** The root of a tree of `size` from stored complete-subtree hashes. */
export function rootFromNodes(size: number, get: (n: NodeRef) => Buffer): Buffer {
  assertCount('size', size);
  return size === 0 ? Buffer.from(EMPTY_ROOT) : rangeHash({ start: 0, end: size }, get);
}

/** RFC 9162 2.1.3.2 verification. Malformed arguments (index outside the tree, hashes of the wrong length) fail rather than throw. */
export function verifyInclusion(leafHash: Buffer, index: number, size: number, proof: Buffer[], root: Buffer): boolean {
  if (!isCount(index) || !isCount(size) || index >= size) return false;
  if (!isHash(leafHash) || !isHash(root) || !proof.every(isHash)) return false;
  let fn = index;
  let sn = size - 1;
  let r = leafHash;
  for (const p of proof) {
    if (sn === 0) return false;
    if (isOdd(fn) || fn === sn) {
      r = nodeHash(p, r);
      while (!isOdd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && r.equals(root);
}

/** RFC 9162 2.1.4.2 verification (true for from == to with empty proof and equal roots; from == 0 trivially true with empty proof). */
export function verifyConsistency(from: number, to: number, proof: Buffer[], fromRoot: Buffer, toRoot: Buffer): boolean {
  if (!isCount(from) || !isCount(to) || from > to) return false;
  if (!isHash(fromRoot) || !isHash(toRoot) || !proof.every(isHash)) return false;
  if (from === 0) return proof.length === 0;
  if (from === to) return proof.length === 0 && fromRoot.equals(toRoot);
  if (proof.length === 0) return false;
  // When the old tree is a complete subtree its root is the first node of the path, left implicit.
  const path = isPowerOfTwo(from) ? [fromRoot, ...proof] : proof;
  let fn = from - 1;
  let sn = to - 1;
  while (isOdd(fn)) {
    fn = half(fn);
    sn = half(sn);
  }
  let fr = path[0]!;
  let sr = fr;
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (isOdd(fn) || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while (!isOdd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && fr.equals(fromRoot) && sr.equals(toRoot);
}

/** A half-open range [start, end) of leaf indexes. */
interface LeafRange {
  start: number;
  end: number;
}

/** The ranges whose MTH make up the RFC 6962 PATH(index, D[0:size)), leaf to root. */
function inclusionRanges(index: number, size: number): LeafRange[] {
  const ranges: LeafRange[] = [];
  let start = 0;
  let end = size;
  while (end - start > 1) {
    const middle = start + splitPoint(end - start);
    if (index < middle) {
      ranges.push({ start: middle, end });
      end = middle;
    } else {
      ranges.push({ start, end: middle });
      start = middle;
    }
  }
  return ranges.reverse();
}

/** The ranges whose MTH make up the RFC 6962 PROOF(from, D[0:to)), in proof order. */
function consistencyRanges(from: number, to: number): LeafRange[] {
  if (from === 0 || from === to) return [];
  const ranges: LeafRange[] = [];
  let start = 0;
  let end = to;
  let oldTreeIsPrefix = true; // the SUBPROOF flag b: the subtree at hand is the whole old tree's left edge
  while (from < end) {
    const middle = start + splitPoint(end - start);
    if (from <= middle) {
      ranges.push({ start: middle, end });
      end = middle;
    } else {
      ranges.push({ start, end: middle });
      start = middle;
      oldTreeIsPrefix = false;
    }
  }
  if (!oldTreeIsPrefix) ranges.push({ start, end });
  return ranges.reverse();
}

/**
 * The complete aligned subtrees covering a range, largest first. For the ranges the RFC 6962
 * recursion produces (start is a multiple of a power of two at least end - start), they have
 * strictly decreasing sizes and MTH of the range is their right fold.
 */
function rangeNodes(range: LeafRange): NodeRef[] {
  const nodes: NodeRef[] = [];
  let at = range.start;
  while (at < range.end) {
    let level = 0;
    let width = 1;
    while (at % (width * 2) === 0 && width * 2 <= range.end - at) {
      level += 1;
      width *= 2;
    }
    nodes.push({ level, index: at / width });
    at += width;
  }
  return nodes;
}

/** MTH(D[start:end)) from stored nodes. */
function rangeHash(range: LeafRange, get: (n: NodeRef) => Buffer): Buffer {
  return foldRight(rangeNodes(range).map((n) => storedHash(n, get)));
}

function storedHash(n: NodeRef, get: (n: NodeRef) => Buffer): Buffer {
  const hash = get(n) as Buffer | undefined;
  if (!isHash(hash)) throw new Error(`no stored hash for node ${nodeKey(n)}`);
  return hash;
}

/** nodeHash(h1, nodeHash(h2, ... hk)): the root of subtrees of decreasing size laid side by side. A single hash comes back as is. */
function foldRight(hashes: Buffer[]): Buffer {
  let acc = hashes[hashes.length - 1]!;
  for (let i = hashes.length - 2; i >= 0; i--) acc = nodeHash(hashes[i]!, acc);
  return acc;
}

function uniqueNodes(nodes: NodeRef[]): NodeRef[] {
  return [...new Map(nodes.map((n) => [nodeKey(n), n])).values()];
}

/** Largest power of two strictly less than n (n >= 2): where RFC 6962 splits a tree of n leaves. */
function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

function half(n: number): number {
  return Math.floor(n / 2);
}

function isOdd(n: number): boolean {
  return n % 2 === 1;
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && Math.pow(2, Math.round(Math.log2(n))) === n;
}

function popcount(n: number): number {
  let ones = 0;
  for (let s = n; s > 0; s = half(s)) ones += s % 2;
  return ones;
}

function isCount(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0;
}

function isHash(h: Buffer | undefined): h is Buffer {
  return Buffer.isBuffer(h) && h.length === HASH_BYTES;
}

function assertCount(name: string, n: number): void {
  if (!isCount(n)) throw new RangeError(`${name} must be a non-negative integer, got ${n}`);
}

function assertHash(name: string, h: Buffer): void {
  if (!isHash(h)) throw new RangeError(`${name} must be a ${HASH_BYTES}-byte Buffer`);
}

function assertIndex(index: number, size: number): void {
  assertCount('index', index);
  assertCount('size', size);
  if (index >= size) throw new RangeError(`index ${index} is outside a tree of size ${size}`);
}

function assertSizes(from: number, to: number): void {
  assertCount('from', from);
  assertCount('to', to);
  if (from > to) throw new RangeError(`cannot prove consistency from size ${from} back to size ${to}`);
}
