import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { startTestService, type TestService } from '../support/service';
import { CHROMIUM, launchBrowser } from '../support/browser';

/**
 * The dashboard's Destinations view in Debian's chromium, headless: a kafka destination and a
 * webhook destination with a transformation are listed with their types' titles; the kafka one
 * shows its topic as a field of its type's config schema and what counts as delivered; on the
 * webhook one a changed transformation is tried on a saved payload and on a typed body (the
 * outcome, the body it would send and its SHA-256), code that does not compile is refused on
 * save with the API's error by field, and a valid one is saved (read back through the API). A
 * screenshot of the detail goes to the test's directory, and to docs/ui-destinations.png with
 * HOOKLINE_UPDATE_SCREENSHOT=1.
 */

type Json = Record<string, any>;

const REPO = path.join(__dirname, '../..');
const SAVED = 'function transform(e) { return { body: e.body, headers: { "x-source": "hookline" } } }';
const WRAPPED = 'function transform(e){ return { body: { wrapped: e.body } } }';
const PAYLOAD = { type: 'order.created', order: 1042, total: '18.00', customer: { name: 'Ada' } };

describe('dashboard: destinations', () => {
  let svc: TestService;
  let context: BrowserContext;
  let page: Page;
  let dir: string;
  let key = '';
  let kafkaId = '';
  let webhookId = '';
  let payloadId = '';
  const problems: string[] = [];
  const tenantPath = () => `/v1/tenants/${svc.tenantId}`;
  const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
  /** The body of a 201, or the answer in the error. */
  const created = (res: { status: number; body: any }): Json => {
    if (res.status !== 201) throw new Error(`not created: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`the dashboard test needs Debian's chromium at ${CHROMIUM} (apt-get install chromium; scripts/ensure-install.cjs installs it when run as root)`);
    }
    // the test service allows loopback destinations (DESTINATION_ALLOWED_NETWORKS=loopback)
    svc = await startTestService({ LOG_LEVEL: 'warn' });
    const kafka = await svc.api('POST', `${tenantPath()}/destinations`, { name: 'Orders topic', type: 'kafka', url: 'kafka://127.0.0.1:9', config: { topic: 'orders' }, auth: { type: 'basic', username: 'shop', password: 'kafka-secret-1234' } });
    kafkaId = created(kafka).id;
    const webhook = await svc.api('POST', `${tenantPath()}/destinations`, { name: 'Orders webhook', url: 'http://127.0.0.1:9/orders', transformation: SAVED });
    webhookId = created(webhook).id;
    const payload = await svc.api('POST', `${tenantPath()}/saved-payloads`, { name: 'Order created', payload: PAYLOAD });
    payloadId = created(payload).id;
    // what a person editing destinations needs beside the dashboard's own reads
    key = await svc.newKey(['read:stats', 'read:deliveries', 'read:events', 'read:destinations', 'write:destinations', 'read:payloads']);

    dir = mkdtempSync(path.join(process.env.HOOKLINE_TEST_DIR ?? tmpdir(), 'ui-'));
    ({ context, page } = await launchBrowser(dir, problems));
    page.on('dialog', async (dialog) => {
      problems.push(`dialog: ${dialog.message()}`);
      await dialog.dismiss();
    });

    const served = await page.goto(`${svc.url}/ui`);
    expect(served?.status()).toBe(200);
    await page.fill('#api-key', key);
    await page.click('form.signin-card button[type="submit"]');
    await page.locator(`[data-tenant="${svc.tenantId}"]`).waitFor();
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    await svc?.stop();
    if (dir) rmSync(path.join(dir, 'profile'), { recursive: true, force: true });
  });

  it('lists the destinations with their types, and shows a kafka destination\'s config by its type\'s schema', async () => {
    const list = page.locator('[data-panel="destinations"]');
    await list.scrollIntoViewIfNeeded();
    const kafkaRow = list.locator(`tr[data-destination-id="${kafkaId}"]`);
    const webhookRow = list.locator(`tr[data-destination-id="${webhookId}"]`);
    await kafkaRow.waitFor();
    await webhookRow.waitFor();
    expect(await list.locator('tbody tr[data-destination-id]').count()).toBe(2);
    expect(await kafkaRow.locator('[data-type]').textContent()).toBe('kafka');
    expect(await kafkaRow.textContent()).toContain('Apache Kafka');
    expect(await kafkaRow.textContent()).toContain('kafka://127.0.0.1:9');
    expect(await kafkaRow.locator('[data-status]').textContent()).toBe('active');
    expect(await webhookRow.locator('[data-type]').textContent()).toBe('webhook');
    expect(await webhookRow.textContent()).toContain('Webhook');
    expect(await webhookRow.locator('[data-transformation]').count()).toBe(1);

    // the kafka one: its topic as a field of the kafka config schema, with the schema's description
    await kafkaRow.click();
    const panel = page.locator('[data-panel="destination"]');
    await panel.locator('h2', { hasText: 'Orders topic' }).waitFor();
    expect(await kafkaRow.getAttribute('class')).toContain('selected');
    expect(await panel.locator('[data-field="type"]').textContent()).toBe('kafkaApache Kafka');
    expect(await panel.locator('[data-field="url"]').textContent()).toBe('kafka://127.0.0.1:9');
    expect(await panel.locator('[data-field="delivered-when"]').textContent()).toContain('acks=all');
    const topic = panel.locator('[data-config-field="topic"]');
    expect(await topic.locator('.config-value').textContent()).toBe('orders');
    expect(await topic.textContent()).toContain('required');
    expect(await topic.textContent()).toContain('The topic written to');
    expect(await panel.locator('[data-config-field="tls"]').textContent()).toContain('not set (default false)');
    // the password masked as the API shows it, never the secret
    const auth = String(await panel.locator('[data-field="auth"]').textContent());
    expect(auth).toContain('shop');
    expect(auth).toContain('****');
    expect(auth).not.toContain('kafka-secret');

    // the webhook one, opened from the keyboard: its delivered-when, no config, its saved code in the editor
    await webhookRow.focus();
    await page.keyboard.press('Enter');
    await panel.locator('h2', { hasText: 'Orders webhook' }).waitFor();
    expect(await panel.locator('[data-field="type"]').textContent()).toBe('webhookWebhook');
    expect(await panel.locator('[data-field="delivered-when"]').textContent()).toBe('the endpoint answers 2xx');
    expect(await panel.locator('[data-config="none"]').count()).toBe(1);
    expect(await panel.locator('#destination-transformation').inputValue()).toBe(SAVED);
    expect(await panel.locator('label[for="destination-transformation"]').count()).toBe(1);
    expect(await panel.locator('[data-state]').getAttribute('data-state')).toBe('saved');
    expect(problems).toEqual([]);
  }, 60_000);

  it('tries a changed transformation on a saved payload and a typed body, refuses code that does not compile, and saves one', async () => {
    const panel = page.locator('[data-panel="destination"]');
    await panel.locator('h2', { hasText: 'Orders webhook' }).waitFor();
    const code = panel.locator('#destination-transformation');
    const result = panel.locator('[data-result="transformation-test"]');

    // the editor's code, not yet saved, run on the saved payload
    await code.fill(WRAPPED);
    expect(await panel.locator('[data-state]').getAttribute('data-state')).toBe('unsaved');
    await panel.locator('#transformation-payload').selectOption(payloadId);
    await panel.locator('[data-action="test-transformation"]').click();
    await result.locator('[data-outcome]').waitFor();
    // a run that did not send says why (a refusal, or the code's error)
    if ((await result.locator('[data-outcome="send"]').count()) === 0) throw new Error(`the test run did not send: ${await result.textContent()}`);
    expect(await result.locator('[data-test="outcome"]').textContent()).toBe('send');
    const sent = String(await result.locator('[data-test="body"]').textContent());
    expect(JSON.parse(sent)).toEqual({ wrapped: PAYLOAD });
    // shown indented, and its hash that of the bytes an attempt would send
    expect(sent).toContain('\n  "wrapped": {');
    expect(await result.locator('[data-test="sha256"]').textContent()).toBe(sha256(JSON.stringify({ wrapped: PAYLOAD })));
    expect(await result.locator('[data-test="cpu"]').textContent()).toMatch(/^[\d.]+ ms CPU$/);
    expect(await result.textContent()).toContain('the code in the editor (not saved)');
    // nothing was saved by the run
    expect((await svc.api('GET', `${tenantPath()}/destinations/${webhookId}`)).body.transformation).toBe(SAVED);

    // a body typed instead: the select follows
    await panel.locator('#transformation-body').fill('{"n": 1, "tags": ["a"]}');
    expect(await panel.locator('#transformation-payload').inputValue()).toBe('');
    await panel.locator('[data-action="test-transformation"]').click();
    await result.locator('[data-outcome="send"]', { hasText: 'the JSON body typed' }).waitFor();
    expect(JSON.parse(String(await result.locator('[data-test="body"]').textContent()))).toEqual({ wrapped: { n: 1, tags: ['a'] } });

    // code that does not compile: refused on save, the API's error shown by its field
    await code.fill('function transform(');
    await panel.locator('[data-action="save-transformation"]').click();
    const refused = panel.locator('[data-result="transformation-save"] [data-save="refused"]');
    await refused.waitFor();
    const fieldError = refused.locator('li[data-field="transformation"]');
    expect(await fieldError.count()).toBe(1);
    const compileError = String(await fieldError.textContent());
    expect(compileError).not.toMatch(/cannot be checked/);
    expect(compileError.length).toBeGreaterThan('transformation '.length);
    expect(await code.getAttribute('aria-invalid')).toBe('true');
    expect((await svc.api('GET', `${tenantPath()}/destinations/${webhookId}`)).body.transformation).toBe(SAVED);
    // the browser logs the refusal (400) as a failed load; nothing else may have failed
    expect(problems.filter((p) => !/status of 400/.test(p))).toEqual([]);
    problems.length = 0;

    // a valid one saved: read back through the API
    await code.fill(WRAPPED);
    await panel.locator('[data-action="save-transformation"]').click();
    await panel.locator('[data-result="transformation-save"] [data-save="saved"]').waitFor();
    expect(await code.getAttribute('aria-invalid')).toBeNull();
    expect(await panel.locator('[data-state]').getAttribute('data-state')).toBe('saved');
    const stored = await svc.api('GET', `${tenantPath()}/destinations/${webhookId}`);
    expect(stored.status).toBe(200);
    expect(stored.body.transformation).toBe(WRAPPED);

    // the saved code on the saved payload, for the picture
    await panel.locator('#transformation-payload').selectOption(payloadId);
    await panel.locator('[data-action="test-transformation"]').click();
    await result.locator('[data-outcome="send"]', { hasText: 'the saved code' }).waitFor();

    const shot = path.join(dir, 'ui-destinations.png');
    // the page in one viewport, so that the sticky top bar does not cover the panel
    const height = Number(await page.evaluate('document.documentElement.scrollHeight'));
    await page.setViewportSize({ width: 1440, height });
    await page.locator('[data-panel="destinations"]').locator('xpath=..').screenshot({ path: shot });
    await page.setViewportSize({ width: 1440, height: 900 });
    if (process.env.HOOKLINE_UPDATE_SCREENSHOT === '1') copyFileSync(shot, path.join(REPO, 'docs/ui-destinations.png'));
    expect(problems).toEqual([]);
  }, 90_000);
});
