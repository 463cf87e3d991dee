/** scripts/chromium.cjs: when `npm test` installs Debian's chromium for the browser test, and when it only says what is missing. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { chromiumStep } = require('../../scripts/chromium.cjs') as { chromiumStep: (s: { platform: string; uid: number; hasChromium: boolean; hasAptGet: boolean }) => { action: string; command?: string; line?: string } };

describe('chromium for the browser test', () => {
  it.each([
    ['present', { platform: 'linux', uid: 0, hasChromium: true, hasAptGet: true }, 'none'],
    ['missing, root on Debian', { platform: 'linux', uid: 0, hasChromium: false, hasAptGet: true }, 'install'],
    ['missing, not root', { platform: 'linux', uid: 1000, hasChromium: false, hasAptGet: true }, 'explain'],
    ['missing, no apt-get', { platform: 'linux', uid: 0, hasChromium: false, hasAptGet: false }, 'explain'],
    ['missing, not Linux', { platform: 'darwin', uid: 0, hasChromium: false, hasAptGet: true }, 'explain'],
  ])('%s', (_name, state, action) => {
    const step = chromiumStep(state);
    expect(step.action).toBe(action);
    if (action === 'install') expect(step.command).toBe('apt-get update && apt-get install -y chromium');
    if (action === 'explain') expect(step.line).toMatch(/^the dashboard's browser test needs Debian's chromium at \/usr\/bin\/chromium: [^\n]+$/);
  });
});
