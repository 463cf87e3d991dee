#!/usr/bin/env node
// Installs the npm dependencies when node_modules is missing or older than package-lock.json
// or patches/, so that `npm start` and `npm test` work on a fresh clone with nothing run before
// them. The postinstall script applies patches/ (patch-package). Then, on a machine whose node is
// older than the service needs, it links the pinned Node for the npm scripts (scripts/node-runtime.cjs),
// after the install: on a fresh clone there is no node_modules to link it in before. Before `npm test`
// (and when run by hand) it first sees to Debian's chromium for the dashboard's browser test
// (scripts/chromium.cjs) and to Prometheus's promtool for the alert rules' test (scripts/promtool.cjs).
'use strict';
const { execFileSync } = require('node:child_process');
const { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } = require('node:fs');
const { createHash } = require('node:crypto');
const path = require('node:path');

// npm start needs no browser nor promtool; both come before the early exit below
if (process.env.npm_lifecycle_event === undefined || process.env.npm_lifecycle_event === 'pretest') {
  require('./chromium.cjs').ensureChromium();
  require('./promtool.cjs').ensurePromtool();
}

const root = path.resolve(__dirname, '..');
const lock = path.join(root, 'package-lock.json');
const stamp = path.join(root, 'node_modules', '.install-stamp');
const manifest = path.join(root, 'package.json');

const patchDir = path.join(root, 'patches');
const patches = existsSync(patchDir) ? readdirSync(patchDir).filter((f) => f.endsWith('.patch')).sort() : [];

const hash = createHash('sha256')
  .update(readFileSync(manifest))
  .update(existsSync(lock) ? readFileSync(lock) : '');
for (const p of patches) hash.update(p).update(readFileSync(path.join(patchDir, p)));
const digest = hash.digest('hex');

if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== digest) installDependencies();
require('./node-runtime.cjs').ensureNode();

function installDependencies() {
  // a patched package may carry an older patch: install it afresh so the current one applies cleanly
  for (const p of patches) {
    const name = p.slice(0, p.lastIndexOf('+')).replace(/\+/g, '/');
    rmSync(path.join(root, 'node_modules', name), { recursive: true, force: true });
  }

  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  // `npm install` rather than `npm ci`: it installs the locked versions too, and npm 11 refuses `ci`
  // on lock files that leave out other platforms' optional packages
  const args = ['install', '--no-audit', '--no-fund'];
  process.stderr.write(`installing npm dependencies (npm ${args[0]})...\n`);
  try {
    execFileSync(npm, args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  } catch (err) {
    process.stderr.write(`npm ${args[0]} failed: ${err.message}\n`);
    process.exit(1);
  }
  writeFileSync(stamp, digest);
}
