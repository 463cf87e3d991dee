// Debian's chromium, which the dashboard's browser test (test/ui/dashboard.test.ts) drives:
// installed with apt-get when it is missing on Linux and we are root, else one line saying so.
'use strict';
const { execFileSync } = require('node:child_process');
const { accessSync, constants, existsSync } = require('node:fs');
const path = require('node:path');

const CHROMIUM = '/usr/bin/chromium';
const INSTALL = 'apt-get update && apt-get install -y chromium';

/** The executable of this name on the PATH, or undefined. */
function onPath(name, env = process.env) {
  for (const dir of (env.PATH || '').split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not in this one
    }
  }
  return undefined;
}

/** What to do: nothing when the browser is there; install it on Linux as root with apt-get; else explain. */
function chromiumStep({ platform, uid, hasChromium, hasAptGet }) {
  if (hasChromium) return { action: 'none' };
  if (platform === 'linux' && uid === 0 && hasAptGet) return { action: 'install', command: INSTALL };
  return { action: 'explain', line: `the dashboard's browser test needs Debian's chromium at ${CHROMIUM}: install it as root with ${INSTALL}` };
}

function ensureChromium() {
  const step = chromiumStep({ platform: process.platform, uid: process.getuid ? process.getuid() : -1, hasChromium: existsSync(CHROMIUM), hasAptGet: onPath('apt-get') !== undefined });
  if (step.action === 'explain') process.stderr.write(`${step.line}\n`);
  if (step.action !== 'install') return;
  process.stderr.write(`installing chromium for the dashboard's browser test (${step.command})...\n`);
  try {
    execFileSync('sh', ['-c', step.command], { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  } catch (err) {
    // the other tests do not need it: the browser test fails and says why
    process.stderr.write(`installing chromium failed (${String(err.message).split('\n')[0]}); the dashboard's browser test needs ${CHROMIUM}\n`);
  }
}

module.exports = { CHROMIUM, chromiumStep, ensureChromium, onPath };
