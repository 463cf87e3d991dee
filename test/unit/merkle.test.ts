import { createHash } from 'node:crypto';
import { RFC9162 } from '@transmute/rfc9162';
import {
  CompactRange,
  EMPTY_ROOT,
  consistencyProof,
  consistencyProofNodes,
  inclusionProof,
  inclusionProofNodes,
  leafHash,
  nodeHash,
  nodeKey,
  rootFromNodes,
  rootNodes,
  rootOf,
  verifyConsistency,
  verifyInclusion,
  type NodeRef,
} from '../../core/merkle';

/** The part of a Rekor entry that sigstore's inclusion verifier reads. */
interface SigstoreInclusionEntry {
  canonicalizedBody: Buffer;
  inclusionProof: { logIndex: string; treeSize: string; hashes: Buffer[]; rootHash: Buffer };
}

// An internal module of @sigstore/verify: the RFC 9162 inclusion verifier that Rekor clients run.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { verifyMerkleInclusion } = require('@sigstore/verify/dist/timestamp/merkle') as {
  verifyMerkleInclusion: (entry: SigstoreInclusionEntry) => void;
};

const MAX_SIZE = 300;

function leafBytes(i: number): Buffer {
  return createHash('sha256').update(`leaf ${i}`).digest().subarray(0, 8 + (i % 24));
}

interface Log {
  leaves: Buffer[];
  /** roots[n] is the root of the first n leaves. */
  roots: Buffer[];
  /** Every complete node the log stored, by nodeKey. */
  store: Map<string, Buffer>;
}

/** Grows one tree leaf by leaf, keeping every complete node CompactRange reports, as a log would. */
function buildLog(size: number): Log {
  const range = new CompactRange();
  const leaves: Buffer[] = [];
  const roots = [range.root()];
  const store = new Map<string, Buffer>();
  for (let i = 0; i < size; i++) {
    leaves.push(leafBytes(i));
    for (const node of range.append(leafHash(leaves[i]!))) store.set(nodeKey(node), node.hash);
    roots.push(range.root());
  }
  return { leaves, roots, store };
}

/** Reads from the store as a log of `size` leaves would have it: nodes reaching past the tree do not exist yet. */
function storeAt(log: Log, size: number): (n: NodeRef) => Buffer {
  return (n) => {
    const hash = log.store.get(nodeKey(n));
    if (!hash || (n.index + 1) * Math.pow(2, n.level) > size) throw new Error(`node ${nodeKey(n)} is not in a tree of size ${size}`);
    return hash;
  };
}

function sigstoreAccepts(leaf: Buffer, index: number, size: number, proof: Buffer[], root: Buffer): boolean {
  try {
    verifyMerkleInclusion({
      canonicalizedBody: leaf,
      inclusionProof: { logIndex: String(index), treeSize: String(size), hashes: proof, rootHash: root },
    });
    return true;
  } catch {
    return false;
  }
}

/**
 * @transmute/rfc9162's verifier leaves out RFC 9162 section 2.1.4.2 step 2 (when the old size is
 * an exact power of two, the old root is prepended to the path: the proof omits it because the
 * verifier already has it). We do that step for it here, so it checks the proof as sent.
 */
async function transmuteAccepts(m: number, n: number, proof: Buffer[], oldRoot: Buffer, newRoot: Buffer): Promise<boolean> {
  const path = isPowerOfTwo(m) ? [oldRoot, ...proof] : proof;
  return RFC9162.verifyConsistencyProof(oldRoot, newRoot, { log_id: '', tree_size_1: m, tree_size_2: n, consistency_path: path });
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && (n & (n - 1)) === 0;
}

function flipBit(proof: Buffer[], at: number): Buffer[] {
  return proof.map((h, i) => {
    if (i !== at) return h;
    const copy = Buffer.from(h);
    const byte = at % copy.length;
    copy[byte] = copy[byte]! ^ 0x01;
    return copy;
  });
}

const log = buildLog(MAX_SIZE);

describe('Merkle tree roots', () => {
  it('match the RFC 6962 MTH of @transmute/rfc9162 and our reference rootOf', async () => {
    const sizes = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 255, 256, 257, 299, 300];
    for (const n of sizes) {
      const independent = Buffer.from(await RFC9162.MTH(log.leaves.slice(0, n)));
      expect({ n, root: log.roots[n]!.toString('hex') }).toEqual({ n, root: independent.toString('hex') });
      expect(rootOf(log.leaves.slice(0, n).map((l) => leafHash(l))).equals(independent)).toBe(true);
      expect(rootFromNodes(n, storeAt(log, n)).equals(independent)).toBe(true);
    }
    expect(log.roots[0]!.equals(EMPTY_ROOT)).toBe(true);
    expect(EMPTY_ROOT.toString('hex')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('are the right fold of rootNodes for every size', () => {
    for (let n = 1; n <= MAX_SIZE; n++) {
      const get = storeAt(log, n);
      const hashes = rootNodes(n).map(get);
      expect(hashes.length).toBe(n.toString(2).replace(/0/g, '').length);
      expect(rootFromNodes(n, get).equals(log.roots[n]!)).toBe(true);
    }
  });
});

/**
 * A tree of `size` identical leaves: every complete subtree of a level has the same hash, so
 * proofs of any size are cheap. Reading a node that reaches past the tree throws.
 */
function uniformTree(size: number): (n: NodeRef) => Buffer {
  const levels = [leafHash(Buffer.from('same'))];
  for (let l = 1; l <= 53; l++) levels.push(nodeHash(levels[l - 1]!, levels[l - 1]!));
  return (n) => {
    if (!Number.isInteger(n.index) || n.index < 0 || (n.index + 1) * 2 ** n.level > size) throw new Error(`node ${nodeKey(n)} is not in a tree of size ${size}`);
    return levels[n.level]!;
  };
}

describe('inclusion proofs', () => {
  it('verify with sigstore and with ours for every leaf of every tree size up to 300', () => {
    const failures: string[] = [];
    for (let n = 1; n <= MAX_SIZE; n++) {
      const get = storeAt(log, n);
      const root = log.roots[n]!;
      for (let i = 0; i < n; i++) {
        const proof = inclusionProof(i, n, get);
        const leaf = log.leaves[i]!;
        if (!sigstoreAccepts(leaf, i, n, proof, root)) failures.push(`sigstore ${i}/${n}`);
        if (!verifyInclusion(leafHash(leaf), i, n, proof, root)) failures.push(`ours ${i}/${n}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it('read only the nodes inclusionProofNodes names', () => {
    for (const n of [1, 2, 5, 64, 65, 127, 300]) {
      for (let i = 0; i < n; i++) {
        const named = new Set(inclusionProofNodes(i, n).map(nodeKey));
        const read = new Set<string>();
        inclusionProof(i, n, (node) => (read.add(nodeKey(node)), storeAt(log, n)(node)));
        expect([...read].sort()).toEqual([...named].sort());
      }
    }
  });

  it('are rejected by sigstore and by ours when a hash, the index, the size or the root is wrong', () => {
    const failures: string[] = [];
    const bothReject = (what: string, leaf: Buffer, i: number, n: number, proof: Buffer[], root: Buffer) => {
      if (sigstoreAccepts(leaf, i, n, proof, root)) failures.push(`sigstore accepts ${what}`);
      if (verifyInclusion(leafHash(leaf), i, n, proof, root)) failures.push(`ours accepts ${what}`);
    };
    for (let n = 1; n <= 40; n++) {
      const root = log.roots[n]!;
      for (let i = 0; i < n; i++) {
        const proof = inclusionProof(i, n, storeAt(log, n));
        const leaf = log.leaves[i]!;
        proof.forEach((_, at) => bothReject(`flipped hash ${at} of ${i}/${n}`, leaf, i, n, flipBit(proof, at), root));
        for (const j of [i - 1, i + 1, n]) if (j >= 0) bothReject(`index ${j} for ${i}/${n}`, leaf, j, n, proof, root);
        for (const m of [n - 1, n + 1]) if (m > i) bothReject(`size ${m} for ${i}/${n}`, leaf, i, m, proof, log.roots[m]!);
        bothReject(`root flipped for ${i}/${n}`, leaf, i, n, proof, flipBit([root], 0)[0]!);
        bothReject(`leaf ${i + 1} as ${i}/${n}`, log.leaves[i + 1]!, i, n, proof, root);
        bothReject(`extra hash for ${i}/${n}`, leaf, i, n, [...proof, root], root);
        if (proof.length > 0) bothReject(`short proof for ${i}/${n}`, leaf, i, n, proof.slice(0, -1), root);
      }
    }
    expect(failures).toEqual([]);
  });

  it('work past 2^32 leaves, where 32-bit shifts would wrap', () => {
    const leaf = Buffer.from('same');
    for (const [index, size] of [
      [2 ** 32 + 5, 2 ** 33 + 3],
      [2 ** 40 - 1, 2 ** 40],
      [0, 2 ** 45 + 2 ** 31 + 1],
      [2 ** 52 + 12345, 2 ** 53 - 1],
    ] as const) {
      const get = uniformTree(size);
      const proof = inclusionProof(index, size, get);
      const root = rootFromNodes(size, get);
      expect(sigstoreAccepts(leaf, index, size, proof, root)).toBe(true);
      expect(verifyInclusion(leafHash(leaf), index, size, proof, root)).toBe(true);
      expect(sigstoreAccepts(leaf, index, size, flipBit(proof, 0), root)).toBe(false);
      expect(verifyInclusion(leafHash(leaf), index, size, flipBit(proof, 0), root)).toBe(false);
    }
  });

  it('refuse indexes outside the tree with a RangeError', () => {
    const get = storeAt(log, 10);
    expect(() => inclusionProof(10, 10, get)).toThrow(RangeError);
    expect(() => inclusionProof(-1, 10, get)).toThrow(/non-negative integer/);
    expect(() => inclusionProof(1.5, 10, get)).toThrow(RangeError);
    expect(() => inclusionProofNodes(0, 0)).toThrow(/outside a tree of size 0/);
    expect(() => inclusionProof(3, 10, () => undefined as unknown as Buffer)).toThrow(/no stored hash for node/);
  });
});

describe('consistency proofs', () => {
  it('verify with @transmute/rfc9162 and with ours for every 1 <= m < n <= 64', async () => {
    const failures: string[] = [];
    for (let n = 2; n <= 64; n++) {
      for (let m = 1; m < n; m++) {
        const proof = consistencyProof(m, n, storeAt(log, n));
        if (!(await transmuteAccepts(m, n, proof, log.roots[m]!, log.roots[n]!))) failures.push(`transmute ${m}->${n}`);
        if (!verifyConsistency(m, n, proof, log.roots[m]!, log.roots[n]!)) failures.push(`ours ${m}->${n}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it('are empty from a size to itself or from the empty tree, which ours accepts', () => {
    // RFC 9162 proofs between equal sizes are empty, and @transmute/rfc9162 fails every empty path, so only ours is asked.
    for (let n = 1; n <= 64; n++) {
      expect(consistencyProof(n, n, storeAt(log, n))).toEqual([]);
      expect(consistencyProof(0, n, storeAt(log, n))).toEqual([]);
      expect(verifyConsistency(n, n, [], log.roots[n]!, log.roots[n]!)).toBe(true);
      expect(verifyConsistency(n, n, [], log.roots[n]!, log.roots[n - 1]!)).toBe(false);
      expect(verifyConsistency(n, n, [log.roots[n]!], log.roots[n]!, log.roots[n]!)).toBe(false);
      expect(verifyConsistency(0, n, [], EMPTY_ROOT, log.roots[n]!)).toBe(true);
      expect(verifyConsistency(0, n, [log.roots[n]!], EMPTY_ROOT, log.roots[n]!)).toBe(false);
    }
  });

  it('are rejected by @transmute/rfc9162 and by ours when a hash, a size or a root is wrong', async () => {
    // @transmute/rfc9162 hashes asynchronously and slowly, so it checks the trees up to 24 leaves, ours all up to 64.
    const failures: string[] = [];
    const bothReject = async (what: string, m: number, n: number, proof: Buffer[], oldRoot: Buffer, newRoot: Buffer) => {
      if (n <= 24 && (await transmuteAccepts(m, n, proof, oldRoot, newRoot))) failures.push(`transmute accepts ${what}`);
      if (verifyConsistency(m, n, proof, oldRoot, newRoot)) failures.push(`ours accepts ${what}`);
    };
    for (let n = 2; n <= 64; n++) {
      for (let m = 1; m < n; m++) {
        const proof = consistencyProof(m, n, storeAt(log, n));
        const oldRoot = log.roots[m]!;
        const newRoot = log.roots[n]!;
        for (let at = 0; at < proof.length; at++) await bothReject(`flipped hash ${at} of ${m}->${n}`, m, n, flipBit(proof, at), oldRoot, newRoot);
        for (const m2 of [m - 1, m + 1]) if (m2 >= 1 && m2 < n) await bothReject(`old size ${m2} for ${m}->${n}`, m2, n, proof, log.roots[m2]!, newRoot);
        for (const n2 of [n - 1, n + 1]) if (n2 > m) await bothReject(`new size ${n2} for ${m}->${n}`, m, n2, proof, oldRoot, log.roots[n2]!);
        await bothReject(`old root flipped for ${m}->${n}`, m, n, proof, flipBit([oldRoot], 0)[0]!, newRoot);
        await bothReject(`new root flipped for ${m}->${n}`, m, n, proof, oldRoot, flipBit([newRoot], 0)[0]!);
        await bothReject(`extra hash for ${m}->${n}`, m, n, [...proof, newRoot], oldRoot, newRoot);
        if (proof.length > 1) await bothReject(`short proof for ${m}->${n}`, m, n, proof.slice(0, -1), oldRoot, newRoot);
      }
    }
    expect(failures).toEqual([]);
  });

  it('read only the nodes consistencyProofNodes names', () => {
    for (let n = 1; n <= 64; n++) {
      for (let m = 0; m <= n; m++) {
        const named = new Set(consistencyProofNodes(m, n).map(nodeKey));
        const read = new Set<string>();
        consistencyProof(m, n, (node) => (read.add(nodeKey(node)), storeAt(log, n)(node)));
        expect([...read].sort()).toEqual([...named].sort());
      }
    }
  });

  it('work past 2^32 leaves (ours only: @transmute/rfc9162 shifts with 32-bit >>)', () => {
    for (const [from, to] of [
      [2 ** 32 + 3, 2 ** 33 + 5],
      [2 ** 31, 2 ** 32 + 1],
      [3, 2 ** 40 + 7],
      [2 ** 52 + 1, 2 ** 53 - 1],
    ] as const) {
      const proof = consistencyProof(from, to, uniformTree(to));
      const fromRoot = rootFromNodes(from, uniformTree(from));
      const toRoot = rootFromNodes(to, uniformTree(to));
      expect(verifyConsistency(from, to, proof, fromRoot, toRoot)).toBe(true);
      expect(verifyConsistency(from, to, flipBit(proof, proof.length - 1), fromRoot, toRoot)).toBe(false);
      expect(verifyConsistency(from + 1, to, proof, rootFromNodes(from + 1, uniformTree(from + 1)), toRoot)).toBe(false);
    }
  });

  it('refuse sizes that go backwards with a RangeError', () => {
    expect(() => consistencyProof(5, 4, storeAt(log, 5))).toThrow(/from size 5 back to size 4/);
    expect(() => consistencyProofNodes(-1, 4)).toThrow(RangeError);
    expect(() => consistencyProofNodes(1, Number.MAX_SAFE_INTEGER + 1)).toThrow(RangeError);
    expect(verifyConsistency(5, 4, [], log.roots[5]!, log.roots[4]!)).toBe(false);
  });
});

describe('CompactRange', () => {
  it('resumes from (size, hashes()) with the same roots and nodes as one that never stopped', () => {
    for (const cut of [0, 1, 3, 8, 100, 255]) {
      const first = new CompactRange();
      for (let i = 0; i < cut; i++) first.append(leafHash(log.leaves[i]!));
      const resumed = new CompactRange(first.size, first.hashes());
      expect(resumed.root().equals(log.roots[cut]!)).toBe(true);
      for (let i = cut; i < MAX_SIZE; i++) {
        for (const node of resumed.append(leafHash(log.leaves[i]!))) expect(node.hash.equals(log.store.get(nodeKey(node))!)).toBe(true);
        expect(resumed.root().equals(log.roots[i + 1]!)).toBe(true);
      }
    }
  });

  it('reports the leaf first and then each merged parent', () => {
    const range = new CompactRange(7, rootNodes(7).map(storeAt(log, 7)));
    const created = range.append(leafHash(log.leaves[7]!));
    expect(created.map(({ level, index }) => ({ level, index }))).toEqual([
      { level: 0, index: 7 },
      { level: 1, index: 3 },
      { level: 2, index: 1 },
      { level: 3, index: 0 },
    ]);
    expect(range.hashes()).toHaveLength(1);
    expect(range.root().equals(log.roots[8]!)).toBe(true);
  });

  it('rejects a hash count that does not match the size', () => {
    const h = log.roots[1]!;
    expect(() => new CompactRange(3, [h])).toThrow(/size 3 holds 2 hashes, got 1/);
    expect(() => new CompactRange(4, [h, h])).toThrow(RangeError);
    expect(() => new CompactRange(0, [h])).toThrow(RangeError);
    expect(() => new CompactRange(-1, [])).toThrow(RangeError);
    expect(() => new CompactRange(1, [Buffer.alloc(31)])).toThrow(/32-byte/);
    expect(new CompactRange(5, [h, h]).size).toBe(5);
  });
});

describe('proof sizes', () => {
  const n = 10_000_000;
  const bound = 2 * Math.ceil(Math.log2(n));

  it('stay logarithmic for ten million leaves', () => {
    for (const index of [0, 1, 4_999_999, 8_388_607, 8_388_608, n - 2, n - 1]) {
      expect(inclusionProofNodes(index, n).length).toBeLessThanOrEqual(bound);
    }
    for (const from of [1, 2, 3, 1_000_001, 8_388_608, 8_388_609, n - 1, n]) {
      expect(consistencyProofNodes(from, n).length).toBeLessThanOrEqual(bound);
    }
  });
});
