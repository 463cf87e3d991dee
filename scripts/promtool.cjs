// Prometheus's promtool, which the alert rules' test (test/observability/alert-rules.test.ts) runs on
// docs/prometheus/alerts.yml. A promtool on the PATH is used as it is. Otherwise, on Debian, Debian's
// prometheus package is downloaded and only its promtool taken out into .cache/promtool: installing
// the package would start a Prometheus server on a machine with systemd. Else one line says how to get it.
'use strict';
const { execFileSync } = require('node:child_process');
const { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } = require('node:fs');
const path = require('node:path');
const { onPath } = require('./chromium.cjs');

const root = path.resolve(__dirname, '..');
const CACHE = path.join(root, '.cache', 'promtool');
const PROMTOOL = path.join(CACHE, 'promtool');

const HOWTO =
  `the alert rules' test needs Prometheus's promtool on the PATH or at ${path.relative(root, PROMTOOL)}: ` +
  "on Debian `node scripts/promtool.cjs` (which `npm test` runs) takes it out of the prometheus package from `apt-get download` " +
  "(run `apt-get update` as root first if apt does not know prometheus; never `apt-get install prometheus`, which starts a server), " +
  'elsewhere get it from https://prometheus.io/download/';

/** The promtool to run: the one on the PATH, else the one unpacked into the cache, else undefined. */
function promtoolPath(env = process.env) {
  return onPath('promtool', env) ?? (existsSync(PROMTOOL) ? PROMTOOL : undefined);
}

/**
 * What to do: nothing when promtool is there; on Linux with apt-get and dpkg-deb, download the
 * package and take promtool out of it into the current folder (downloading needs no root;
 * refreshing apt's package lists, when they lack prometheus, does); else explain.
 */
function promtoolStep({ platform, uid, hasPromtool, hasAptGet, hasDpkgDeb }) {
  if (hasPromtool) return { action: 'none' };
  if (platform !== 'linux' || !hasAptGet || !hasDpkgDeb) return { action: 'explain', line: HOWTO };
  // as root apt-get would hand the download to its _apt user, who cannot write here, and warn
  const download = uid === 0
    ? '(apt-get -o APT::Sandbox::User=root download prometheus || (apt-get update && apt-get -o APT::Sandbox::User=root download prometheus))'
    : 'apt-get download prometheus';
  return { action: 'install', command: `${download} && dpkg-deb --fsys-tarfile prometheus_*.deb | tar -x ./usr/bin/promtool` };
}

function ensurePromtool() {
  const step = promtoolStep({
    platform: process.platform,
    uid: process.getuid ? process.getuid() : -1,
    hasPromtool: promtoolPath() !== undefined,
    hasAptGet: onPath('apt-get') !== undefined,
    hasDpkgDeb: onPath('dpkg-deb') !== undefined,
  });
  if (step.action === 'explain') process.stderr.write(`${step.line}\n`);
  if (step.action !== 'install') return;
  process.stderr.write(`taking promtool out of Debian's prometheus package into ${path.relative(root, PROMTOOL)} for the alert rules' test...\n`);
  mkdirSync(CACHE, { recursive: true });
  // each run downloads into its own folder and renames its promtool into place: never a half-written file
  const tmp = mkdtempSync(path.join(CACHE, 'download-'));
  try {
    execFileSync('sh', ['-c', step.command], { cwd: tmp, stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    renameSync(path.join(tmp, 'usr', 'bin', 'promtool'), PROMTOOL);
  } catch (err) {
    // the other tests do not need it: the alert rules' test fails and says why
    if (!existsSync(PROMTOOL)) process.stderr.write(`getting promtool failed (${String(err.message).split('\n')[0]}); ${HOWTO}\n`);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

module.exports = { PROMTOOL, HOWTO, promtoolPath, promtoolStep, ensurePromtool };

if (require.main === module) ensurePromtool();
