import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** Debian's Chromium, which the project installs for its browser tests. */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * Headless Chromium with a profile of its own under `dir`, a fixed viewport, locale and zone (so
 * screenshots are the same on every run), and without the background networking this machine's
 * closed network refuses. Page errors and console errors are pushed onto `problems`.
 */
export async function launchBrowser(dir: string, problems: string[]): Promise<{ context: BrowserContext; page: Page }> {
  const context = await chromium.launchPersistentContext(path.join(dir, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1440, height: 900 },
    deviceScaleFactor: 1,
    locale: 'en-GB',
    timezoneId: 'UTC',
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' || /Content.Security.Policy/i.test(msg.text())) problems.push(`console ${msg.type()}: ${msg.text()}`);
  });
  return { context, page };
}
