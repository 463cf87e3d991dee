import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { API_DOCS_CONTENT_SECURITY_POLICY } from '../../api/api-docs';
import { CHROMIUM, launchBrowser } from '../support/browser';
import { rawRequest } from '../support/raw-http';
import { startTestService, type TestService } from '../support/service';

/**
 * The API reference at /docs in Debian's chromium, headless: Redoc renders the service's own
 * GET /v1/openapi.json (its title, operations by their summaries, the forms of a destination's
 * `auth`) and its search finds an operation, under the page's Content-Security-Policy with no
 * page error, console error or policy violation, and nothing requested from another origin. The
 * three files answer with the security headers; any other path under /docs is a 404, never a
 * file from the disk. A screenshot goes to the test's directory.
 */

type Json = Record<string, any>;

/** Operations the page must show, by operationId; their summaries come from the served document. */
const OPERATIONS = ['createDestination', 'listDeliveries', 'testDestinationTransformation'];

describe('API reference', () => {
  let svc: TestService;
  let context: BrowserContext;
  let page: Page;
  let dir: string;
  let doc: Json;
  const problems: string[] = [];
  const elsewhere: string[] = [];

  /** The summary of an operation of the document, by its operationId. */
  const summaryOf = (operationId: string): string => {
    for (const item of Object.values(doc.paths as Record<string, Json>)) {
      for (const op of Object.values(item)) if (op?.operationId === operationId) return op.summary;
    }
    throw new Error(`no operation ${operationId} in the document`);
  };

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`the API reference test needs Debian's chromium at ${CHROMIUM} (apt-get install chromium; scripts/ensure-install.cjs installs it when run as root)`);
    }
    svc = await startTestService({ LOG_LEVEL: 'warn' });
    doc = (await svc.api('GET', '/v1/openapi.json', undefined, { key: null })).body;
    dir = mkdtempSync(path.join(process.env.HOOKLINE_TEST_DIR ?? tmpdir(), 'ui-'));
    ({ context, page } = await launchBrowser(dir, problems));
    page.on('request', (r) => {
      if (/^https?:/.test(r.url()) && new URL(r.url()).origin !== svc.url) elsewhere.push(r.url());
    });
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    await svc?.stop();
    if (dir) rmSync(path.join(dir, 'profile'), { recursive: true, force: true });
  });

  it('renders the document: its title, its operations, the forms of auth, and a search', async () => {
    const served = await page.goto(`${svc.url}/docs`);
    expect(served?.status()).toBe(200);
    expect(served?.headers()['content-security-policy']).toBe(API_DOCS_CONTENT_SECURITY_POLICY);
    await page.locator('h1', { hasText: doc.info.title }).waitFor({ timeout: 30_000 });
    expect(await page.title()).toBe('hookline API reference');

    for (const operationId of OPERATIONS) {
      const section = page.locator(`[data-section-id$="/operation/${operationId}"]`);
      expect((await section.locator('h2').first().textContent())?.trim()).toBe(summaryOf(operationId));
    }

    // a destination's auth: each type a form the discriminator selects
    const create = page.locator('[data-section-id$="/operation/createDestination"]');
    await create.locator('td[kind="field"]', { hasText: /^auth$/ }).locator('button').click();
    expect(await create.locator('select option').allTextContents()).toEqual(['basic', 'bearer', 'header']);
    await create.locator('.property-name', { hasText: /^password$/ }).first().waitFor();

    // the search index lives in a worker started from a blob: URL
    await page.fill('input[placeholder="Search..."]', 'transformation');
    await page.locator('[data-role="search:results"] li', { hasText: summaryOf('testDestinationTransformation') }).first().waitFor({ timeout: 15_000 });

    await page.screenshot({ path: path.join(dir, 'api-docs.png') });
    expect(problems).toEqual([]);
    expect(elsewhere).toEqual([]);
  });

  it('answers its files with the security headers, and revalidates the bundle by its ETag', async () => {
    const files: [string, string][] = [['/docs', 'text/html'], ['/docs/', 'text/html'], ['/docs/init.js', 'text/javascript'], ['/docs/redoc.standalone.js', 'text/javascript']];
    for (const [pathname, type] of files) {
      const res = await fetch(`${svc.url}${pathname}`);
      expect({ pathname, status: res.status }).toEqual({ pathname, status: 200 });
      expect(res.headers.get('content-type')).toBe(`${type}; charset=utf-8`);
      expect(res.headers.get('content-security-policy')).toBe(API_DOCS_CONTENT_SECURITY_POLICY);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('cache-control')).toBe('no-cache');
      const text = await res.text();
      // the page's only scripts are the two files: no inline script or handler
      if (type === 'text/html') expect(text.match(/<script[^>]*>/g)).toEqual(['<script src="/docs/redoc.standalone.js" defer>', '<script src="/docs/init.js" defer>']);
      if (pathname === '/docs/redoc.standalone.js') expect(text).not.toContain('https://cdn.redoc.ly');
    }
    expect(API_DOCS_CONTENT_SECURITY_POLICY).toMatch(/frame-ancestors 'none'/);
    expect(API_DOCS_CONTENT_SECURITY_POLICY).not.toMatch(/unsafe-eval/);

    const bundle = await fetch(`${svc.url}/docs/redoc.standalone.js`, { method: 'HEAD' });
    const etag = bundle.headers.get('etag')!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    const again = await fetch(`${svc.url}/docs/redoc.standalone.js`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect((await again.arrayBuffer()).byteLength).toBe(0);
  });

  it('answers 404 for any other path under /docs: nothing else comes from the disk', async () => {
    const paths = ['/docs/../package.json', '/docs/%2e%2e/package.json', '/docs/..%2fpackage.json', '/docs/x.js', '/docs/index.html', '/docs/redoc.standalone.js.map', '/docs//init.js', '/docs/init.js/'];
    for (const target of paths) {
      const res = await rawRequest(svc.url, { method: 'GET', path: target });
      expect({ target, status: res.status }).toEqual({ target, status: 404 });
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.text).not.toContain('"dependencies"');
    }
  });
});
