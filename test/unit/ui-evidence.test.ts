import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { leafBytes, type LeafFields } from '../../core/evidence-leaf';
import { CompactRange, inclusionProof, leafHash, nodeKey, verifyInclusion, type NodeRef } from '../../core/merkle';
import { formatCheckpoint, generateSignerKey, parseSignerKey } from '../../core/signed-note';

/**
 * The dashboard's verifier (ui/js/merkle.js, ui/js/evidence.js) against the service's own Merkle
 * code: every inclusion proof of trees of 1 to 40 leaves, and tampered ones, must get the answer
 * core/merkle.ts gives; a whole evidence answer must verify, and fail on each kind of tampering.
 * The modules run as they are, ES modules in a plain node process with WebCrypto, as in a browser.
 */

type Json = Record<string, any>;
const UI_JS = path.join(__dirname, '../../ui/js');

/** Runs `body` (an async function of `input` and the imported modules) in a node ES module process. */
function runInModule(body: string, input: unknown): any {
  const url = (f: string) => JSON.stringify(pathToFileURL(path.join(UI_JS, f)).href);
  const script = `
    const merkle = await import(${url('merkle.js')});
    const evidence = await import(${url('evidence.js')});
    const chunks = [];
    for await (const c of process.stdin) chunks.push(c);
    const input = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const out = await (async (input, merkle, evidence) => { ${body} })(input, merkle, evidence);
    process.stdout.write(JSON.stringify(out));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { input: JSON.stringify(input), maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(out.toString('utf8'));
}

/** A log of `size` leaves: its root, and the proof of any leaf from its stored nodes. */
function buildLog(leaves: Buffer[]) {
  const range = new CompactRange();
  const nodes = new Map<string, Buffer>();
  for (const leaf of leaves) for (const n of range.append(leafHash(leaf))) nodes.set(nodeKey(n), n.hash);
  const get = (n: NodeRef) => nodes.get(nodeKey(n))!;
  return { root: range.root(), proof: (index: number) => inclusionProof(index, leaves.length, get) };
}

const hex = (b: Buffer) => b.toString('hex');
const flip = (h: string) => `${h[0] === '0' ? '1' : '0'}${h.slice(1)}`;

describe('the dashboard verifier', () => {
  it('answers every inclusion proof, genuine or tampered, as core/merkle.ts does', () => {
    const cases: { leaf: string; index: number; size: number; proof: string[]; root: string; expected: boolean }[] = [];
    for (let size = 1; size <= 40; size++) {
      const leaves = Array.from({ length: size }, (_, i) => createHash('sha256').update(`leaf ${size}/${i}`).digest().subarray(0, 5 + (i % 20)));
      const log = buildLog(leaves);
      for (let index = 0; index < size; index++) {
        const proof = log.proof(index);
        const leaf = leafHash(leaves[index]!);
        const add = (l: Buffer, i: number, s: number, p: Buffer[], r: Buffer) => cases.push({ leaf: hex(l), index: i, size: s, proof: p.map(hex), root: hex(r), expected: verifyInclusion(l, i, s, p, r) });
        add(leaf, index, size, proof, log.root);
        // tampered: each proof hash, the leaf, the index, the size, the root, a hash too many or too few
        proof.forEach((_, k) => add(leaf, index, size, proof.map((h, j) => (j === k ? Buffer.from(flip(hex(h)), 'hex') : h)), log.root));
        add(Buffer.from(flip(hex(leaf)), 'hex'), index, size, proof, log.root);
        if (size > 1) add(leaf, (index + 1) % size, size, proof, log.root);
        add(leaf, index, size + 1, proof, log.root);
        add(leaf, index, size, proof, Buffer.from(flip(hex(log.root)), 'hex'));
        add(leaf, index, size, [...proof, leaf], log.root);
        if (proof.length > 0) add(leaf, index, size, proof.slice(1), log.root);
      }
    }
    // indexes and sizes past 2^31, where shifts would wrap: a tree of 2^40 + 3 leaves, its last leaf
    const big = 2 ** 40 + 3;
    cases.push({ leaf: hex(leafHash(Buffer.from('x'))), index: big - 1, size: big, proof: [], root: hex(leafHash(Buffer.from('x'))), expected: false });
    // a proof binds the path's shape, not the size itself (the signed checkpoint does): some
    // sizes one larger still verify, as core/merkle.ts says, so both answers occur by the thousand
    expect(cases.filter((c) => c.expected).length).toBeGreaterThan(820);
    expect(cases.filter((c) => !c.expected).length).toBeGreaterThan(4_000);

    const answers: boolean[] = runInModule(
      `const h = merkle.hexToBytes;
       const out = [];
       for (const c of input) out.push(await merkle.verifyInclusion(h(c.leaf), c.index, c.size, c.proof.map(h), h(c.root)));
       return out;`,
      cases,
    );
    const wrong = cases.filter((c, i) => answers[i] !== c.expected);
    expect(wrong.slice(0, 5)).toEqual([]);
  });

  it('rebuilds evidence leaves byte for byte as core/evidence-leaf.ts does, v 1 and v 2', () => {
    const fields: LeafFields[] = [
      { tenant_id: 'acme', delivery_id: 'dlv_01j9zx5w3k8f6t2q4r7m1n0bcd', event_id: 'evt_01j9zx5w3k8f6t2q4r7m1n0bce', destination_id: 'dst_01j9zx5w3k8f6t2q4r7m1n0bcf', attempt_number: 3, status: 'failed', response_code: null, attempted_at: '2026-01-02T03:04:05.678Z', body_sha256: 'a'.repeat(64) },
      { tenant_id: 'tenant-é"\\</script>', delivery_id: 'dlv_x', event_id: 'evt_y', destination_id: 'dst_z', attempt_number: 1, status: 'delivered', response_code: 200, attempted_at: '2026-11-22T11:00:00.456Z', body_sha256: 'b'.repeat(64), replay_of: 'dlv_original' },
    ];
    const fromPage: string[] = runInModule(`return input.map((f) => Buffer.from(evidence.leafBytes(f)).toString('hex'));`, fields);
    expect(fromPage).toEqual(fields.map((f) => hex(leafBytes(f))));
  });

  it('verifies a whole evidence answer, and fails it on each kind of tampering', () => {
    const signer = parseSignerKey(generateSignerKey('hookline.test/log'));
    const tenantId = 'acme';
    const delivery: Json = {
      id: 'dlv_01j9zx5w3k8f6t2q4r7m1n0bcd',
      event_id: 'evt_01j9zx5w3k8f6t2q4r7m1n0bce',
      destination_id: 'dst_01j9zx5w3k8f6t2q4r7m1n0bcf',
      attempts: [
        { attempt_number: 1, status: 'retrying', response_code: 503, attempted_at: '2026-01-02T03:04:05.678Z', body_sha256: 'c'.repeat(64) },
        { attempt_number: 2, status: 'delivered', response_code: 200, attempted_at: '2026-01-02T03:04:06.001Z', body_sha256: 'c'.repeat(64) },
      ],
    };
    const attempt = delivery.attempts[1];
    const mine = leafBytes({ tenant_id: tenantId, delivery_id: delivery.id, event_id: delivery.event_id, destination_id: delivery.destination_id, ...attempt, replay_of: 'dlv_01j9zx5w3k8f6t2q4r7m1n0bcg' });
    const leaves = [Buffer.from('other 0'), Buffer.from('other 1'), mine, Buffer.from('other 3'), Buffer.from('other 4')];
    const log = buildLog(leaves);
    const note = signer.sign(formatCheckpoint({ origin: signer.name, size: leaves.length, root: log.root }));
    const evidence: Json = {
      delivery_id: delivery.id,
      status: 'confirmed',
      integrity_root: hex(log.root),
      inclusion_proof: log.proof(2).map(hex),
      leaf_hash: hex(leafHash(mine)),
      attempt_number: 2,
      leaf_index: 2,
      replay_of: 'dlv_01j9zx5w3k8f6t2q4r7m1n0bcg',
      tree_size: leaves.length,
      checkpoint: { tree_size: leaves.length, root_hash: hex(log.root), signed_note: note },
    };
    const logInfo = { origin: signer.name, verifier_key: signer.verifierKey };
    const other = parseSignerKey(generateSignerKey('hookline.test/log'));
    const [sigLine] = note.split('\n').slice(-2);
    const sigBytes = Buffer.from(sigLine!.split(' ')[2]!, 'base64');
    sigBytes[10]! ^= 1;
    const badSignature = note.replace(sigLine!, `${sigLine!.split(' ').slice(0, 2).join(' ')} ${sigBytes.toString('base64')}`);
    const variants: Record<string, { delivery?: Json; evidence?: Json; log?: Json; tenantId?: string }> = {
      genuine: {},
      'attempt status changed': { delivery: { ...delivery, attempts: [delivery.attempts[0], { ...attempt, status: 'failed' }] } },
      'another tenant': { tenantId: 'acme2' },
      'replay link dropped': { evidence: { ...evidence, replay_of: null } },
      'proof hash changed': { evidence: { ...evidence, inclusion_proof: evidence.inclusion_proof.map((h: string, i: number) => (i === 1 ? flip(h) : h)) } },
      'leaf index changed': { evidence: { ...evidence, leaf_index: 3 } },
      'signature changed': { evidence: { ...evidence, checkpoint: { ...evidence.checkpoint, signed_note: badSignature } } },
      'another key': { log: { ...logInfo, verifier_key: other.verifierKey } },
      'root claimed differs': { evidence: { ...evidence, integrity_root: flip(evidence.integrity_root), tree_size: leaves.length } },
      pending: { evidence: { ...evidence, status: 'pending' } },
    };
    const runs = Object.entries(variants).map(([name, v]) => ({ name, tenantId: v.tenantId ?? tenantId, delivery: v.delivery ?? delivery, evidence: v.evidence ?? evidence, log: v.log ?? logInfo }));
    const results: Json[] = runInModule(`const out = []; for (const r of input) out.push(await evidence.verifyEvidence(r)); return out;`, runs);
    const byName = Object.fromEntries(runs.map((r, i) => [r.name, results[i]!]));
    const outcome = (name: string) => Object.fromEntries((byName[name]!.checks as Json[]).map((c) => [c.name, c.ok]));

    expect(byName.genuine).toMatchObject({ verified: true, leafIndex: 2, treeSize: 5, rootHash: hex(log.root), leafHash: evidence.leaf_hash });
    expect(outcome('genuine')).toEqual({ leaf: true, signature: true, checkpoint: true, inclusion: true });
    for (const name of Object.keys(variants).filter((n) => n !== 'genuine')) expect({ name, verified: byName[name]!.verified }).toEqual({ name, verified: false });
    expect(outcome('attempt status changed').leaf).toBe(false);
    expect(outcome('another tenant').leaf).toBe(false);
    expect(outcome('replay link dropped').leaf).toBe(false);
    expect(outcome('proof hash changed')).toMatchObject({ leaf: true, signature: true, inclusion: false });
    expect(outcome('leaf index changed')).toMatchObject({ leaf: true, inclusion: false });
    expect(outcome('signature changed').signature).toBe(false);
    expect(outcome('another key').signature).toBe(false);
    expect(outcome('root claimed differs')).toMatchObject({ signature: true, checkpoint: false });
    expect(outcome('pending').sealed).toBe(false);
  });
});
