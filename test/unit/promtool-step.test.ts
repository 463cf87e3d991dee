/** scripts/promtool.cjs: when `npm test` takes promtool out of Debian's prometheus package for the alert rules' test, and when it only says how to get it. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { promtoolStep } = require('../../scripts/promtool.cjs') as {
  promtoolStep: (s: { platform: string; uid: number; hasPromtool: boolean; hasAptGet: boolean; hasDpkgDeb: boolean }) => { action: string; command?: string; line?: string };
};

const TAKE_OUT = ' && dpkg-deb --fsys-tarfile prometheus_*.deb | tar -x ./usr/bin/promtool';

describe('promtool for the alert rules test', () => {
  it.each([
    ['present', { platform: 'linux', uid: 0, hasPromtool: true, hasAptGet: true, hasDpkgDeb: true }, 'none'],
    ['present, not Linux', { platform: 'darwin', uid: 501, hasPromtool: true, hasAptGet: false, hasDpkgDeb: false }, 'none'],
    ['missing, root on Debian', { platform: 'linux', uid: 0, hasPromtool: false, hasAptGet: true, hasDpkgDeb: true }, 'install'],
    ['missing, not root on Debian', { platform: 'linux', uid: 1000, hasPromtool: false, hasAptGet: true, hasDpkgDeb: true }, 'install'],
    ['missing, no apt-get', { platform: 'linux', uid: 0, hasPromtool: false, hasAptGet: false, hasDpkgDeb: true }, 'explain'],
    ['missing, no dpkg-deb', { platform: 'linux', uid: 0, hasPromtool: false, hasAptGet: true, hasDpkgDeb: false }, 'explain'],
    ['missing, not Linux', { platform: 'darwin', uid: 0, hasPromtool: false, hasAptGet: true, hasDpkgDeb: true }, 'explain'],
  ])('%s', (_name, state, action) => {
    const step = promtoolStep(state);
    expect(step.action).toBe(action);
    if (action === 'install') {
      // the package is only downloaded and unpacked: `apt-get install prometheus` would start a server
      expect(step.command).not.toMatch(/apt-get( -o \S+)? install/);
      expect(step.command?.endsWith(TAKE_OUT)).toBe(true);
    }
    if (action === 'explain') expect(step.line).toMatch(/^the alert rules' test needs Prometheus's promtool on the PATH or at \.cache\/promtool\/promtool: [^\n]+$/);
  });

  it('refreshes the package lists only as root, and only when the download fails without them', () => {
    expect(promtoolStep({ platform: 'linux', uid: 0, hasPromtool: false, hasAptGet: true, hasDpkgDeb: true }).command).toBe(
      '(apt-get -o APT::Sandbox::User=root download prometheus || (apt-get update && apt-get -o APT::Sandbox::User=root download prometheus))' + TAKE_OUT,
    );
    expect(promtoolStep({ platform: 'linux', uid: 1000, hasPromtool: false, hasAptGet: true, hasDpkgDeb: true }).command).toBe('apt-get download prometheus' + TAKE_OUT);
  });
});
