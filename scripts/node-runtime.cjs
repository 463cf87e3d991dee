// The Node every npm script runs on. The service needs the major of package.json's engines.node;
// on a machine whose own node is older (which is left as it is), the version pinned in .nvmrc is
// taken from the npm registry's node-<platform>-<arch> package (`npm pack`, which checks the
// tarball's integrity) into .cache/node/<version>/ and linked as node_modules/.bin/node. npm puts
// node_modules/.bin first on the PATH of every script, so the scripts, the bins they start
// (`#!/usr/bin/env node`: tsx, jest, tsc) and whatever those spawn by process.execPath or by the
// name `node` run on it. One line says so each time.
'use strict';
const { execFileSync } = require('node:child_process');
const { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, realpathSync, renameSync, rmSync, symlinkSync, unlinkSync } = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const CACHE = path.join(root, '.cache', 'node');
const LINK = path.join(root, 'node_modules', '.bin', 'node');

/** The version pinned in .nvmrc, without its `v`. */
function pinnedVersion() {
  return readFileSync(path.join(root, '.nvmrc'), 'utf8').trim().replace(/^v/, '');
}

/** The lowest major the service runs on: package.json's engines.node, `>=N`. */
function requiredMajor() {
  const engines = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).engines?.node ?? '';
  const m = /^>=\s*v?(\d+)/.exec(engines);
  if (!m) throw new Error(`package.json: engines.node "${engines}" is not >=N`);
  return Number(m[1]);
}

const major = (version) => Number(/^v?(\d+)/.exec(version)?.[1] ?? 0);

/** The cached binary of a version, as the link names it: relative, so the checkout may move. */
const cachedBinary = (version) => path.join(CACHE, version, 'bin', 'node');
const linkTarget = (version) => path.relative(path.dirname(LINK), cachedBinary(version));

/**
 * What to do, given the machine's own node and what is on disk: nothing when the machine's node
 * is new enough (and the link of an older machine's days removed); else fetch the pinned version
 * when it is not cached, link it when the link is missing or names another, and say so.
 */
function nodeStep({ machineVersion, requiredMajor, pinned, cached, linkedTo }) {
  if (major(machineVersion) >= requiredMajor) return linkedTo === undefined ? { action: 'none' } : { action: 'unlink' };
  if (major(pinned) < requiredMajor) throw new Error(`.nvmrc pins Node ${pinned}, below engines.node's ${requiredMajor}`);
  return {
    action: 'use',
    fetch: !cached,
    link: linkedTo !== linkTarget(pinned),
    line: `using Node ${pinned} from .cache/node (this machine has ${machineVersion})`,
  };
}

function isExecutable(file) {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

const fromCache = (file) => {
  try {
    return realpathSync(file).startsWith(CACHE + path.sep);
  } catch {
    return false;
  }
};

/**
 * The machine's own node version: this process's, unless this process is the cached node (a
 * script run through the link), then that of the first other node on the PATH.
 */
function machineNodeVersion(env = process.env) {
  if (!fromCache(process.execPath)) return process.version;
  for (const dir of (env.PATH || '').split(path.delimiter)) {
    const file = dir && path.join(dir, 'node');
    if (file && isExecutable(file) && !fromCache(file)) return execFileSync(file, ['--version'], { encoding: 'utf8' }).trim();
  }
  return 'no other node on the PATH';
}

/** Where node_modules/.bin/node points, when it is a link into the cache: nothing else is ours to replace or remove. */
function currentLink() {
  try {
    const target = readlinkSync(LINK);
    return path.resolve(path.dirname(LINK), target).startsWith(CACHE + path.sep) ? target : undefined;
  } catch {
    return undefined;
  }
}

/** Takes the pinned package out of the registry into the cache; each run in its own folder, renamed into place. */
function fetchNode(version) {
  const pkg = `node-${process.platform}-${process.arch}@${version}`;
  process.stderr.write(`fetching Node ${version} (${pkg}) from the npm registry into ${path.relative(root, path.join(CACHE, version))}...\n`);
  mkdirSync(CACHE, { recursive: true });
  const tmp = mkdtempSync(path.join(CACHE, '.fetch-'));
  try {
    execFileSync('npm', ['pack', pkg, '--silent', '--pack-destination', tmp], { cwd: tmp, stdio: ['ignore', 'ignore', 'inherit'] });
    const tarball = readdirSync(tmp).find((f) => f.endsWith('.tgz'));
    if (!tarball) throw new Error(`npm pack ${pkg} wrote no tarball`);
    execFileSync('tar', ['-xzf', tarball, 'package/bin/node', 'package/LICENSE'], { cwd: tmp, stdio: ['ignore', 'ignore', 'inherit'] });
    const got = execFileSync(path.join(tmp, 'package', 'bin', 'node'), ['--version'], { encoding: 'utf8' }).trim();
    if (got !== `v${version}`) throw new Error(`the binary of ${pkg} says ${got}`);
    try {
      renameSync(path.join(tmp, 'package'), path.join(CACHE, version));
    } catch (err) {
      // a concurrent first run put it there first
      if (!existsSync(cachedBinary(version))) throw err;
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** Points node_modules/.bin/node at the cached version, replacing whatever was there in one rename. */
function linkNode(version) {
  mkdirSync(path.dirname(LINK), { recursive: true });
  const tmp = `${LINK}.${process.pid}`;
  rmSync(tmp, { force: true });
  symlinkSync(linkTarget(version), tmp);
  renameSync(tmp, LINK);
}

function ensureNode() {
  const pinned = pinnedVersion();
  const linkedTo = currentLink();
  const step = nodeStep({ machineVersion: machineNodeVersion(), requiredMajor: requiredMajor(), pinned, cached: isExecutable(cachedBinary(pinned)), linkedTo });
  if (step.action === 'unlink') unlinkSync(LINK);
  if (step.action !== 'use') return;
  try {
    if (step.fetch) fetchNode(pinned);
    if (step.link) linkNode(pinned);
  } catch (err) {
    process.stderr.write(`getting Node ${pinned} failed (${String(err.message).split('\n')[0]}); install Node ${requiredMajor()} or newer, or run npm where the npm registry answers\n`);
    process.exit(1);
  }
  process.stderr.write(`${step.line}\n`);
}

module.exports = { LINK, nodeStep, linkTarget, pinnedVersion, requiredMajor, ensureNode };

if (require.main === module) ensureNode();
