/**
 * The Node the service runs on: scripts/node-runtime.cjs (which Node the npm scripts get on a
 * machine whose own is older), the service's refusal of an older one, and where the compiled
 * tree finds the files it reads from the sources.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { BUILD_DIR, REPO_ROOT, RUNS_COMPILED, sourceDir } from '../../core/paths';
import { unsupportedNode } from '../../service/supported-node';

interface NodeState {
  machineVersion: string;
  requiredMajor: number;
  pinned: string;
  cached: boolean;
  linkedTo: string | undefined;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const runtime = require('../../scripts/node-runtime.cjs') as {
  nodeStep: (s: NodeState) => { action: string; fetch?: boolean; link?: boolean; line?: string };
  linkTarget: (version: string) => string;
  pinnedVersion: () => string;
  requiredMajor: () => number;
};
// eslint-disable-next-line @typescript-eslint/no-require-imports
const build = require('../../scripts/build.cjs') as { OUT: string };

describe('the Node of the npm scripts', () => {
  const old = { machineVersion: 'v20.20.2', requiredMajor: 24, pinned: '24.21.0' };
  it.each([
    ['machine new enough', { ...old, machineVersion: 'v24.0.0', cached: false, linkedTo: undefined }, { action: 'none' }],
    ['machine upgraded since it was linked', { ...old, machineVersion: 'v26.1.0', cached: true, linkedTo: runtime.linkTarget('24.21.0') }, { action: 'unlink' }],
    ['older machine, first run', { ...old, cached: false, linkedTo: undefined }, { action: 'use', fetch: true, link: true }],
    ['older machine, node_modules installed afresh', { ...old, cached: true, linkedTo: undefined }, { action: 'use', fetch: false, link: true }],
    ['older machine, linked', { ...old, cached: true, linkedTo: runtime.linkTarget('24.21.0') }, { action: 'use', fetch: false, link: false }],
    ['older machine, another version pinned since', { ...old, pinned: '24.22.0', cached: false, linkedTo: runtime.linkTarget('24.21.0') }, { action: 'use', fetch: true, link: true }],
  ])('%s', (_name, state, expected) => {
    expect(runtime.nodeStep(state)).toMatchObject(expected);
  });

  it('says which Node in one line', () => {
    expect(runtime.nodeStep({ ...old, cached: true, linkedTo: undefined }).line).toBe('using Node 24.21.0 from .cache/node (this machine has v20.20.2)');
  });

  it('refuses a pin below the required major', () => {
    expect(() => runtime.nodeStep({ ...old, pinned: '22.22.0', cached: false, linkedTo: undefined })).toThrow(/\.nvmrc pins Node 22\.22\.0, below engines\.node's 24/);
  });

  it('links a binary of the cache, relative to node_modules/.bin', () => {
    expect(runtime.linkTarget('24.21.0')).toBe(path.join('..', '..', '.cache', 'node', '24.21.0', 'bin', 'node'));
  });

  it('pins, requires and builds the image on one major', () => {
    const required = runtime.requiredMajor();
    expect(Number(runtime.pinnedVersion().split('.')[0])).toBe(required);
    expect(readFileSync(path.join(__dirname, '../../Dockerfile'), 'utf8')).toMatch(new RegExp(`^FROM node:${required}-`, 'm'));
    // the tests themselves run on it
    expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(required);
  });
});

describe('the service on an older Node', () => {
  it.each([
    ['v20.20.2', '>=24', true],
    ['v23.11.1', '>=24', true],
    ['v24.0.0', '>=24', false],
    ['v26.1.0', '>= 24', false],
  ])('%s against %s', (version, engines, refused) => {
    const line = unsupportedNode(version, engines);
    if (!refused) return expect(line).toBeUndefined();
    expect(line).toMatch(new RegExp(`^hookline needs Node 24 or newer \\(engines.node "${engines}"\\), this is Node ${version}: [^\\n]+$`));
  });
});

describe('the compiled tree', () => {
  it('is the build output, and maps back to the sources', () => {
    expect(RUNS_COMPILED).toBe(false);
    expect(build.OUT).toBe(path.join(REPO_ROOT, BUILD_DIR));
    expect(sourceDir(path.join(REPO_ROOT, BUILD_DIR, 'platform', 'clickhouse'))).toBe(path.join(REPO_ROOT, 'platform', 'clickhouse'));
    expect(sourceDir(path.join(REPO_ROOT, 'platform', 'clickhouse'))).toBe(path.join(REPO_ROOT, 'platform', 'clickhouse'));
    expect(sourceDir(path.join(REPO_ROOT, BUILD_DIR))).toBe(REPO_ROOT);
  });
});
