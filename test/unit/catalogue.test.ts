import { readFileSync } from 'node:fs';
import path from 'node:path';
import { CAPABILITIES, RUNTIME_PROOFS, TRUST_PROOFS } from '../../core/proof-catalogue';
import { NON_CLAIMS } from '../../core/non-claims';

/** The docs state every proof id and every non-claim exactly as the service answers them. */
describe('proof and non-claim catalogues', () => {
  const apiPage = readFileSync(path.join(__dirname, '../../docs/api.md'), 'utf8');
  const nonClaimsPage = readFileSync(path.join(__dirname, '../../docs/non-claims.md'), 'utf8');

  it('has ten runtime and ten trust proofs, numbered in order', () => {
    expect(RUNTIME_PROOFS.map((p) => p.id)).toEqual(Array.from({ length: 10 }, (_, i) => `PROOF-${String(i + 1).padStart(3, '0')}`));
    expect(TRUST_PROOFS.map((p) => p.id)).toEqual(Array.from({ length: 10 }, (_, i) => `TRUST-${String(i + 1).padStart(3, '0')}`));
  });

  it('backs every capability with proofs that exist, and uses every proof', () => {
    const ids = new Set<string>([...RUNTIME_PROOFS, ...TRUST_PROOFS].map((p) => p.id));
    const used = new Set<string>(CAPABILITIES.flatMap((c) => [...c.proofs]));
    expect([...used].filter((id) => !ids.has(id))).toEqual([]);
    expect([...ids].filter((id) => !used.has(id))).toEqual([]);
  });

  it('lists every proof in docs/api.md with its title, scope and criterion', () => {
    for (const p of [...RUNTIME_PROOFS, ...TRUST_PROOFS]) expect(apiPage).toContain(`| ${p.id} | ${p.title} | ${p.scope} | ${p.criterion} |`);
  });

  it('states every non-claim in docs/non-claims.md', () => {
    expect(new Set(NON_CLAIMS.map((n) => n.id)).size).toBe(NON_CLAIMS.length);
    for (const n of NON_CLAIMS) expect(nonClaimsPage).toContain(`- ${n.id} (${n.category}): ${n.statement}`);
  });
});
