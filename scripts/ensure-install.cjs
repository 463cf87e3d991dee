#!/usr/bin/env node
// Installs the npm dependencies when node_modules is missing or older than package-lock.json,
// so that `npm start` and `npm test` work on a fresh clone with nothing run before them.
'use strict';
const { execFileSync } = require('node:child_process');
const { existsSync, readFileSync, writeFileSync } = require('node:fs');
const { createHash } = require('node:crypto');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const lock = path.join(root, 'package-lock.json');
const stamp = path.join(root, 'node_modules', '.install-stamp');
const manifest = path.join(root, 'package.json');

const digest = createHash('sha256')
  .update(readFileSync(manifest))
  .update(existsSync(lock) ? readFileSync(lock) : '')
  .digest('hex');

if (existsSync(stamp) && readFileSync(stamp, 'utf8') === digest) process.exit(0);

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
