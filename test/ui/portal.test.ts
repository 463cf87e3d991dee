import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { CHROMIUM, launchBrowser } from '../support/browser';
import { uniqueSuffix } from '../support/ids';
import { startReceiver, type ReceivedRequest, type Receiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';
import { createHooklineClient, unwrap, type HooklineClient, type Schema } from '../../clients/typescript/src';

/**
 * The portal at /ui in Debian's chromium, headless, as a tenant's user sees it: an operator makes
 * a tenant with its branding and a portal session; its one-time link opens the portal signed in
 * (the tenant's name, logo and accent colour; no key anywhere in the page's storage, the session's
 * cookie out of the page's reach). The user adds a webhook destination subscribed to an event type
 * of the catalogue (its schema and example shown), sees its signing secret once, sends the type's
 * example as a test event, sees it delivered, opens it and verifies its evidence; rotates the
 * secret and the next test event is signed with the new one (checked with `standardwebhooks`);
 * searches the deliveries for an event that failed through a Hook URL and retries it; pauses, resumes, changes and deletes a
 * destination. The link opens once only; a revoked session ends the page; sign-out clears the
 * cookie. No page error, console error or policy violation beyond the refusals the steps cause.
 * A screenshot goes to the test's directory, and to docs/ui-portal.png with
 * HOOKLINE_UPDATE_SCREENSHOT=1.
 */

type Json = Record<string, any>;

const REPO = path.join(__dirname, '../..');
const LOGO_URL = 'https://brand.example.com/acme-logo.svg';
const LOGO_SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64"><rect width="64" height="64" rx="14" fill="#0f766e"/><path d="M16 46 32 14l16 32H38l-6-13-6 13z" fill="#fff"/></svg>';
const ACCENT = '#0f766e';
const EVENT_TYPE = 'shipment.dispatched';
const EXAMPLE = { shipment_id: 'shp_1042', carrier: 'DHL', parcels: 2, dispatched_at: '2026-03-01T09:30:00Z' };
const SCHEMA = {
  type: 'object',
  required: ['shipment_id', 'carrier'],
  properties: { shipment_id: { type: 'string' }, carrier: { type: 'string' }, parcels: { type: 'integer', minimum: 1 }, dispatched_at: { type: 'string', format: 'date-time' } },
  examples: [EXAMPLE],
};
/** How the browser logs an API answer of 4xx or 5xx: the answers themselves are in `refusals`. */
const FAILED_LOAD = /^console error: Failed to load resource: the server responded with a status of \d{3}/;

describe('portal', () => {
  let svc: TestService;
  let receiver: Receiver;
  let context: BrowserContext;
  let page: Page;
  let dir: string;
  let operator = '';
  let tenantKey = '';
  let link = '';
  let destinationId = '';
  let firstSecret = '';
  const tenantId = `acme-${uniqueSuffix()}`;
  const problems: string[] = [];
  /** The API's answers of 4xx and 5xx to the page: `GET /v1/... 404`. */
  const refusals: string[] = [];
  /**
   * Events sent as test events: the sink copies an event and its delivery from two topics on their
   * own, so the page may ask for the event a moment before its row is stored (404).
   */
  const testEvents: string[] = [];
  /** The API as the tenant's own systems and the operator call it: the typed client. */
  let tenantApi: HooklineClient;
  let operatorApi: HooklineClient;
  const tenantPath = () => ({ tenant_id: tenantId });
  const destinationPath = (id: string) => ({ tenant_id: tenantId, destination_id: id });
  const panel = () => page.locator('[data-panel="destination"]');
  /** The destination as the API shows it, or undefined when it answers 404. */
  async function destinationOf(id: string) {
    const r = await tenantApi.GET('/v1/tenants/{tenant_id}/destinations/{destination_id}', { params: { path: destinationPath(id) } });
    if (r.response.status === 404) return undefined;
    return unwrap(r);
  }

  /** A portal session made by the operator: its one-time link and id. */
  async function portalSession(): Promise<{ url: string; id: string }> {
    // every member is optional (the generated type makes a member with a default required)
    const made = unwrap(await operatorApi.POST('/v1/tenants/{tenant_id}/portal-sessions', { params: { path: tenantPath() }, body: {} as Schema<'PortalSessionCreate'> }));
    return { url: made.url, id: made.id };
  }

  /**
   * No page error, console error or policy violation, and no refusal but those `allowed` names
   * (an expected 401, the 404 of a test event's body); then both lists start again.
   */
  function expectClean(allowed: RegExp[] = []): void {
    const expected = [...allowed, ...testEvents.map((id) => new RegExp(`^GET /v1/tenants/[^/]+/events/${id} 404$`))];
    expect(problems.filter((p) => !FAILED_LOAD.test(p))).toEqual([]);
    expect(refusals.filter((r) => !expected.some((a) => a.test(r)))).toEqual([]);
    problems.length = 0;
    refusals.length = 0;
  }

  const headersOf = (r: ReceivedRequest) => ({ 'webhook-id': String(r.headers['webhook-id']), 'webhook-timestamp': String(r.headers['webhook-timestamp']), 'webhook-signature': String(r.headers['webhook-signature']) });

  /** The secret the dialog shows, read once; the dialog closed and nothing of it left in the page. */
  async function readSecretOnce(): Promise<string> {
    const dialog = page.locator('dialog[data-dialog="secret"]');
    await dialog.waitFor();
    const secret = await dialog.locator('[data-secret]').inputValue();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/=]+$/);
    expect(await dialog.locator('label[for="signing-secret-once"]').count()).toBe(1);
    await dialog.locator('[data-action="close-secret"]').click();
    await dialog.waitFor({ state: 'detached' });
    expect(await page.content()).not.toContain(secret);
    return secret;
  }

  /** Presses a list's Refresh until it holds `selector` (the page also refreshes itself every 10 s). */
  async function listed(selector: string, refresh = 'refresh'): Promise<Locator> {
    const found = page.locator(selector).first();
    await eventually(selector, async () => {
      if ((await found.count()) > 0) return true;
      await page.click(`[data-action="${refresh}"]`);
      await page.waitForTimeout(300);
      return undefined;
    }, 60_000, 0);
    return found;
  }
  const deliveryRow = (selector: string) => listed(`table[data-table="deliveries"] ${selector}`);

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`the portal test needs Debian's chromium at ${CHROMIUM} (apt-get install chromium; scripts/ensure-install.cjs installs it when run as root)`);
    }
    [svc, receiver] = await Promise.all([startTestService({ LOG_LEVEL: 'warn', EVIDENCE_BATCH_AGE_MS: '50' }), startReceiver()]);
    receiver.respondBy(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' }));
    operator = await svc.operatorKey();
    operatorApi = createHooklineClient({ baseUrl: svc.url, apiKey: operator });
    unwrap(await operatorApi.POST('/v1/tenants', { body: { id: tenantId, name: 'Acme Logistics', portal: { logo_url: LOGO_URL, accent_color: ACCENT } } }));
    // the catalogue the tenant's own systems keep; the portal reads it
    tenantKey = await svc.newKey(['read:event-types', 'write:event-types', 'read:destinations', 'write:destinations', 'read:deliveries', 'read:evidence', 'write:ingesters'], { tenantId });
    tenantApi = createHooklineClient({ baseUrl: svc.url, apiKey: tenantKey });
    unwrap(await tenantApi.POST('/v1/tenants/{tenant_id}/event-types', { params: { path: tenantPath() }, body: { name: EVENT_TYPE, description: 'A shipment left the warehouse with its carrier.', schema: SCHEMA } }));
    unwrap(await tenantApi.POST('/v1/tenants/{tenant_id}/event-types', { params: { path: tenantPath() }, body: { name: 'shipment.delivered', description: 'The carrier handed the parcels over.', schema: null } }));
    link = (await portalSession()).url;
    expect(link).toMatch(/\/ui\/.*#portal=/);

    dir = mkdtempSync(path.join(process.env.HOOKLINE_TEST_DIR ?? tmpdir(), 'ui-'));
    ({ context, page } = await launchBrowser(dir, problems));
    // the tenant's logo, served here: this machine reaches no other host
    await context.route(LOGO_URL, (route) => route.fulfill({ status: 200, contentType: 'image/svg+xml', body: LOGO_SVG }));
    page.on('response', (res) => {
      if (res.status() >= 400) refusals.push(`${res.request().method()} ${new URL(res.url()).pathname} ${res.status()}`);
    });
    page.on('dialog', async (dialog) => {
      problems.push(`dialog: ${dialog.message()}`);
      await dialog.dismiss();
    });
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    await Promise.all([svc?.stop(), receiver?.close()]);
    if (dir) rmSync(path.join(dir, 'profile'), { recursive: true, force: true });
  });

  it('opens from the link signed in, branded for the tenant, with no key in the page', async () => {
    const served = await page.goto(link);
    expect(served?.status()).toBe(200);
    expect(served?.headers()['content-security-policy']).toMatch(/^default-src 'self'; img-src 'self' https: data:/);
    await page.locator(`[data-tenant="${tenantId}"]`).waitFor();
    // the code is off the address at once
    expect(page.url()).not.toContain('#portal');
    expect(await page.locator('[data-tenant-name]').textContent()).toBe('Acme Logistics');
    expect(await page.title()).toBe('Acme Logistics · webhooks');
    const logo = page.locator('img[data-logo]');
    expect(await logo.getAttribute('src')).toBe(LOGO_URL);
    await eventually('the logo drawn', async () => (Number(await page.evaluate("document.querySelector('img[data-logo]').naturalWidth")) > 0 ? true : undefined), 10_000, 100);
    expect(await page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--accent').trim()")).toBe(ACCENT);
    expect(await page.evaluate("getComputedStyle(document.querySelector('button.primary[data-action=new-destination]')).backgroundColor")).toBe('rgb(15, 118, 110)');
    // nothing of the session within the page's reach: the cookie is HttpOnly, the storages empty
    expect(await page.evaluate('document.cookie')).toBe('');
    expect(await page.evaluate('[sessionStorage.length, localStorage.length]')).toEqual([0, 0]);
    const cookies = await context.cookies(svc.url);
    expect(cookies.map((c) => [c.name, c.httpOnly])).toEqual([['hookline_portal', true]]);
    expect(await page.locator('#api-key').count()).toBe(0);
    // the operator's cards stay out of a portal
    expect(await page.locator('[data-panel="dead-letters"]').count()).toBe(0);
    expectClean();
  }, 60_000);

  it('adds a webhook destination subscribed to an event type of the catalogue, its secret shown once', async () => {
    await page.click('[data-action="new-destination"]');
    const form = page.locator('[data-form="new-destination"]');
    await form.locator('#destination-form-name').waitFor();
    expect(await form.locator('#destination-form-type').inputValue()).toBe('webhook');
    await form.locator('#destination-form-name').fill('Acme warehouse');
    await form.locator('#destination-form-url').fill(receiver.url);
    // the catalogue: each type with its description, its schema and example folded
    await form.getByLabel('Only those chosen').check();
    const item = form.locator(`[data-catalog-type="${EVENT_TYPE}"]`);
    expect(await item.textContent()).toContain('A shipment left the warehouse');
    expect(await item.locator('[data-example]').isVisible()).toBe(false);
    await item.locator('summary').click();
    expect(JSON.parse(String(await item.locator(`[data-example="${EVENT_TYPE}"]`).textContent()))).toEqual(EXAMPLE);
    expect(JSON.parse(String(await item.locator(`[data-schema="${EVENT_TYPE}"]`).textContent()))).toEqual(SCHEMA);
    await item.getByLabel(EVENT_TYPE).check();
    await form.locator('[data-action="create-destination"]').click();

    firstSecret = await readSecretOnce();
    await panel().locator('h2', { hasText: 'Acme warehouse' }).waitFor();
    await panel().locator('[data-action-result="created"]').waitFor();
    expect(await panel().locator('[data-subscribed]').allTextContents()).toEqual([expect.stringContaining(EVENT_TYPE)]);
    destinationId = String(await panel().locator('.detail-head .mono').getAttribute('title'));
    const stored = unwrap(await tenantApi.GET('/v1/tenants/{tenant_id}/destinations/{destination_id}', { params: { path: destinationPath(destinationId) } }));
    expect(stored).toMatchObject({ name: 'Acme warehouse', type: 'webhook', url: receiver.url, event_types: [EVENT_TYPE], status: 'active' });
    await page.locator(`[data-panel="destinations"] tr[data-destination-id="${destinationId}"]`).waitFor();
    expectClean();
  }, 60_000);

  it('sends the event type\'s example as a test event, sees it delivered, opens it and verifies its evidence', async () => {
    const detail = panel();
    expect(await detail.locator('#test-event-type').inputValue()).toBe(EVENT_TYPE);
    expect(JSON.parse(await detail.locator('#test-event-body').inputValue())).toEqual(EXAMPLE);
    await detail.locator('[data-action="send-test-event"]').click();
    const sent = detail.locator('[data-test-send="sent"]');
    await sent.waitFor();
    const deliveryId = String(await sent.getAttribute('data-delivery-id'));
    expect(deliveryId).toMatch(/^dlv_/);
    testEvents.push(String(await sent.getAttribute('data-event-id')));

    // it arrives as the example, signed with the secret shown at creation
    const [request] = await receiver.waitForRequests(1);
    expect(JSON.parse(request!.body.toString())).toEqual(EXAMPLE);
    expect(() => new Webhook(firstSecret).verify(request!.body.toString(), headersOf(request!))).not.toThrow();

    await detail.locator('[data-delivery-state="delivered"]').waitFor({ timeout: 60_000 });
    await detail.locator('[data-action="open-test-delivery"]').click();
    const delivery = page.locator('[data-panel="delivery"]');
    await delivery.locator('h2', { hasText: deliveryId }).waitFor();
    await deliveryRow(`tr[data-delivery="${deliveryId}"]:has(.pill-ok)`);
    // a delivered delivery's replay needs write:replays, which a portal does not hold
    expect(await delivery.locator('[data-action="replay"]').count()).toBe(0);

    await eventually('evidence confirmed', async () => {
      const e = await tenantApi.GET('/v1/tenants/{tenant_id}/evidence/{delivery_id}', { params: { path: { tenant_id: tenantId, delivery_id: deliveryId } } });
      return e.data?.status === 'confirmed' ? true : undefined;
    }, 60_000, 300).catch(() => undefined);
    await delivery.locator('[data-action="verify"]').click();
    await delivery.locator('[data-result="evidence"] [data-evidence="verified"]').waitFor({ timeout: 60_000 }).catch(async (err) => {
      throw new Error(`not verified: ${await delivery.locator('[data-result="evidence"]').textContent()} (${(err as Error).message})`);
    });
    for (const check of ['leaf', 'signature', 'checkpoint', 'inclusion']) {
      expect({ check, ok: await delivery.locator(`[data-check="${check}"]`).getAttribute('class') }).toEqual({ check, ok: 'check-ok' });
    }

    const shot = path.join(dir, 'ui-portal.png');
    const height = Number(await page.evaluate('document.documentElement.scrollHeight'));
    await page.setViewportSize({ width: 1440, height });
    await page.screenshot({ path: shot });
    await page.setViewportSize({ width: 1440, height: 900 });
    if (process.env.HOOKLINE_UPDATE_SCREENSHOT === '1') copyFileSync(shot, path.join(REPO, 'docs/ui-portal.png'));
    expectClean();
  }, 180_000);

  it('rotates the secret, shown once, and the next test event is signed with the new one', async () => {
    const detail = panel();
    await detail.locator('[data-action="rotate-secret"]').click();
    await detail.locator('[data-confirm="rotate"]').waitFor();
    await detail.locator('[data-action="confirm-rotate"]').click();
    const secret = await readSecretOnce();
    expect(secret).not.toBe(firstSecret);
    await detail.locator('[data-action-result="rotated"]').waitFor();

    const before = receiver.requests.length;
    await detail.locator('[data-action="send-test-event"]').click();
    await detail.locator('[data-test-send="sent"]').waitFor();
    testEvents.push(String(await detail.locator('[data-test-send="sent"]').getAttribute('data-event-id')));
    const requests = await receiver.waitForRequests(before + 1);
    const request = requests[before]!;
    expect(JSON.parse(request.body.toString())).toEqual(EXAMPLE);
    expect(() => new Webhook(secret).verify(request.body.toString(), headersOf(request))).not.toThrow();
    // the first one's signature could not be made with a secret that did not exist yet
    expect(() => new Webhook(secret).verify(requests[0]!.body.toString(), headersOf(requests[0]!))).toThrow();
    await detail.locator('[data-delivery-state="delivered"]').waitFor({ timeout: 60_000 });
    expectClean();
  }, 120_000);

  it('searches the deliveries and retries a failed one\'s event', async () => {
    // the tenant's systems send events through a Hook URL to the destination, which fails fast now
    unwrap(await tenantApi.PATCH('/v1/tenants/{tenant_id}/destinations/{destination_id}', { params: { path: destinationPath(destinationId) }, body: { retry_schedule_ms: [0, 200] } }));
    const ingester = unwrap(await tenantApi.POST('/v1/tenants/{tenant_id}/ingesters', { params: { path: tenantPath() }, body: { name: 'Warehouse system', provider: 'none', config: { event_type_field: 'type' }, destination_ids: [destinationId] } }));
    receiver.respondBy(() => ({ status: 503, body: 'down for maintenance' }));
    const before = receiver.requests.length;
    const res = await fetch(ingester.hook_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type: EVENT_TYPE, ...EXAMPLE, shipment_id: 'shp_2001' }) });
    expect(res.status).toBe(202);
    const eventId = ((await res.json()) as Json).event_id as string;
    await receiver.waitForRequests(before + 2);

    // the search: failed ones of this destination and type
    const deliveries = page.locator('section.deliveries');
    await deliveries.getByLabel('Status').selectOption('failed');
    await deliveries.getByLabel('Destination').selectOption(destinationId);
    await deliveries.getByLabel('Event type').fill(EVENT_TYPE);
    await deliveries.locator('button[type="submit"]').click();
    const failedRow = await deliveryRow(`tr[data-event="${eventId}"]:has(.pill-bad)`);
    expect(await failedRow.textContent()).toContain(EVENT_TYPE);
    for (const status of await deliveries.locator('tbody tr[data-delivery] .pill').allTextContents()) expect(status).toBe('failed');

    receiver.respondBy(() => ({ status: 200, body: 'ok' }));
    const sent = receiver.requests.length;
    await failedRow.locator('[data-action="retry-event"]').click();
    const queued = deliveries.locator('[data-retry="queued"]');
    await queued.waitFor();
    expect(await queued.textContent()).toMatch(/queued again as dlv_[0-9a-z]{26}/);
    const [again] = (await receiver.waitForRequests(sent + 1)).slice(sent);
    expect(JSON.parse(again!.body.toString())).toMatchObject({ shipment_id: 'shp_2001' });
    await deliveries.getByLabel('Status').selectOption('delivered');
    await deliveries.locator('button[type="submit"]').click();
    await deliveryRow(`tr[data-event="${eventId}"]:has(.pill-ok)`);
    expectClean();
  }, 120_000);

  it('pauses and resumes a destination, changes its name and subscriptions, and deletes one after confirming', async () => {
    const detail = panel();
    await page.locator(`[data-panel="destinations"] tr[data-destination-id="${destinationId}"]`).click();
    await detail.locator('[data-action="pause-destination"]').click();
    await detail.locator('[data-action-result="paused"]').waitFor();
    expect(await detail.locator('[data-status]').textContent()).toBe('paused');
    expect((await destinationOf(destinationId))?.status).toBe('paused');
    await detail.locator('[data-action="resume-destination"]').click();
    await detail.locator('[data-action-result="resumed"]').waitFor();
    expect((await destinationOf(destinationId))?.status).toBe('active');

    await detail.locator('[data-action="edit-destination"]').click();
    const form = page.locator('[data-form="edit-destination"]');
    await form.locator('#destination-form-name').fill('Acme warehouse (EU)');
    await form.getByLabel('All event types').check();
    await form.locator('[data-action="save-destination"]').click();
    await detail.locator('[data-action-result="saved"]').waitFor();
    expect(await detail.locator('[data-subscriptions="all"]').count()).toBe(1);
    expect(await destinationOf(destinationId)).toMatchObject({ name: 'Acme warehouse (EU)', event_types: null });

    // a second one, deleted: the first press only asks
    const other = unwrap(await tenantApi.POST('/v1/tenants/{tenant_id}/destinations', { params: { path: tenantPath() }, body: { name: 'Old endpoint', url: 'http://127.0.0.1:9/old' } }));
    const row = await listed(`[data-panel="destinations"] tr[data-destination-id="${other.id}"]`, 'refresh-destinations');
    await row.click();
    await detail.locator('h2', { hasText: 'Old endpoint' }).waitFor();
    await detail.locator('[data-action="delete-destination"]').click();
    await detail.locator('[data-confirm="delete"]').waitFor();
    expect(await destinationOf(other.id)).toMatchObject({ id: other.id });
    await detail.locator('[data-action="confirm-delete"]').click();
    await row.waitFor({ state: 'detached' });
    expect(await destinationOf(other.id)).toBeUndefined();
    expectClean();
  }, 120_000);

  it('comes back after a reload, opens a link once only, ends with a revoked session, and signs out', async () => {
    // a reload: the session's cookie is still good
    await page.reload();
    await page.locator('[data-tenant-name]', { hasText: 'Acme Logistics' }).waitFor();
    expectClean();

    // the same link again: spent, said so, and no key field
    await page.goto(link);
    const spent = page.locator('[data-portal-notice="spent"]');
    await spent.waitFor();
    expect(await spent.textContent()).toContain('This portal link has expired or was already used; ask for a new one.');
    expect(await page.locator('#api-key').count()).toBe(0);
    expectClean([/^POST \/v1\/portal\/session 401$/]);

    // a session revoked by the operator: the page says it ended instead of failing everywhere
    const session = await portalSession();
    await page.goto(session.url);
    await page.locator('[data-tenant-name]').waitFor();
    expect((await operatorApi.DELETE('/v1/tenants/{tenant_id}/portal-sessions/{portal_session_id}', { params: { path: { tenant_id: tenantId, portal_session_id: session.id } } })).response.status).toBe(204);
    // the page's own first reads may meet the revocation before this refresh does
    await page.locator('[data-action="refresh-destinations"]').click({ timeout: 5_000 }).catch(() => undefined);
    const ended = page.locator('[data-portal-notice="ended"]');
    await ended.waitFor();
    expect(await ended.textContent()).toContain('Your portal session has ended');
    expect(await page.locator('.form-error:visible').count()).toBe(0);
    expectClean([/^GET \/v1\/tenants\/[^/]+\/[a-z-]+ 401$/]);

    // signed out: the cookie is gone
    await page.goto((await portalSession()).url);
    await page.locator('[data-tenant-name]').waitFor();
    await page.click('[data-action="sign-out"]');
    await page.locator('[data-portal-notice="signed-out"]').waitFor();
    expect((await context.cookies(svc.url)).filter((c) => c.name === 'hookline_portal')).toEqual([]);
    expect(await page.evaluate('[sessionStorage.length, localStorage.length]')).toEqual([0, 0]);
    expectClean();
  }, 120_000);
});
