import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type BrowserContext, type Locator, type Page } from 'playwright-core';
import { newId } from '../../core/ids';
import { deliveryRow } from '../../pipeline/sink/rows';
import { startReceiver, type Receiver } from '../support/receiver';
import { CHROMIUM, launchBrowser } from '../support/browser';
import { eventually, startTestService, type TestService } from '../support/service';

/**
 * The dashboard at /ui in Debian's chromium, headless: sign in with an API key, a webhook sent
 * to the Hook URL arrives in the table, its delivery shows the request (the payload, as text
 * only) and its response, its evidence is verified in the page (and a tampered proof is shown
 * failed), and replay queues it again. The page runs under its Content-Security-Policy with no
 * error. A screenshot goes to the test's directory, and to docs/ui-dashboard.png with
 * HOOKLINE_UPDATE_SCREENSHOT=1.
 */

type Json = Record<string, any>;

const REPO = path.join(__dirname, '../..');
const MARKER = '<img src=x onerror=window.__pwned=1>';

describe('dashboard', () => {
  let svc: TestService;
  let ok: Receiver;
  let failing: Receiver;
  let context: BrowserContext;
  let page: Page;
  let dir: string;
  let key = '';
  let hookUrl = '';
  let okDestination = '';
  let failingDestination = '';
  const problems: string[] = [];
  const tenantPath = () => `/v1/tenants/${svc.tenantId}`;

  /** A past hour of attempts, written as the sink writes them, so that the charts have a history to draw. */
  async function seedHistory(): Promise<number> {
    const now = Date.now();
    const types = ['order.created', 'order.paid', 'invoice.sent', 'order.shipped'];
    const rows: ReturnType<typeof deliveryRow>[] = [];
    const eventTypes: Json[] = [];
    for (let minute = 55; minute >= 2; minute--) {
      const wave = Math.round(18 + 10 * Math.sin(minute / 6) + ((minute * 7) % 5));
      for (let i = 0; i < wave; i++) {
        const failed = (minute * 31 + i * 17) % 53 === 0;
        const retrying = !failed && (minute * 13 + i * 29) % 37 === 0;
        const at = now - minute * 60_000 + i * 1_500;
        const event = newId('event');
        const destination = failed || retrying ? failingDestination : okDestination;
        rows.push(deliveryRow({
          delivery_id: newId('delivery'), event_id: event, tenant_id: svc.tenantId, destination_id: destination, correlation_id: 'c', attempt_number: 1,
          status: failed ? 'failed' : retrying ? 'retrying' : 'delivered', response_code: failed || retrying ? 503 : 200, attempted_at: at, duration_ms: 40,
          error_message: failed || retrying ? 'the destination answered 503' : null, body_sha256: '0'.repeat(64), next_attempt_at: null,
          event_type: types[(minute + i) % types.length]!, received_at: at - 120,
        }));
        eventTypes.push({ tenant_id: svc.tenantId, event_id: event, event_type: types[(minute + i) % types.length], received_at: rows[rows.length - 1]!.attempted_at });
      }
    }
    const db = svc.config.clickhouseDatabase;
    await svc.clickhouse.insert({ table: `${db}.deliveries`, values: rows, format: 'JSONEachRow' });
    await svc.clickhouse.insert({ table: `${db}.event_types`, values: eventTypes, format: 'JSONEachRow' });
    return rows.length;
  }

  async function send(body: Json): Promise<string> {
    const res = await fetch(hookUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(res.status).toBe(202);
    return ((await res.json()) as Json).event_id;
  }

  /** Presses Refresh until the row appears (the page also refreshes itself every 10 s). */
  async function row(selector: string): Promise<Locator> {
    const found = page.locator(`table[data-table="deliveries"] ${selector}`).first();
    await eventually(`row ${selector}`, async () => {
      if ((await found.count()) > 0) return true;
      await page.click('[data-action="refresh"]');
      await page.waitForTimeout(500);
      return undefined;
    }, 60_000, 0);
    return found;
  }

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`the dashboard test needs Debian's chromium at ${CHROMIUM} (apt-get install chromium; scripts/ensure-install.cjs installs it when run as root)`);
    }
    [svc, ok, failing] = await Promise.all([startTestService({ LOG_LEVEL: 'warn', EVIDENCE_BATCH_AGE_MS: '50' }), startReceiver(), startReceiver()]);
    ok.respondBy(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"received":true}' }));
    failing.respondBy(() => ({ status: 503, headers: { 'content-type': 'text/plain' }, body: 'down for maintenance' }));
    okDestination = (await svc.api('POST', `${tenantPath()}/destinations`, { name: 'Orders service', url: ok.url })).body.id;
    failingDestination = (await svc.api('POST', `${tenantPath()}/destinations`, { name: 'Billing (staging)', url: failing.url, retry_schedule_ms: [0, 200] })).body.id;
    const ingester = await svc.api('POST', `${tenantPath()}/ingesters`, { name: 'Shop', provider: 'none', config: { event_type_field: 'type' }, destination_ids: [okDestination, failingDestination] });
    expect(ingester.status).toBe(201);
    hookUrl = ingester.body.hook_url;
    // what a dashboard user needs, nothing more
    key = await svc.newKey(['read:stats', 'read:deliveries', 'read:events', 'read:destinations', 'read:evidence', 'write:events', 'read:replays', 'write:replays']);

    dir = mkdtempSync(path.join(process.env.HOOKLINE_TEST_DIR ?? tmpdir(), 'ui-'));
    ({ context, page } = await launchBrowser(dir, problems));
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    await Promise.all([svc?.stop(), ok?.close(), failing?.close()]);
    // the screenshot stays in the test's directory; the browser profile goes
    if (dir) rmSync(path.join(dir, 'profile'), { recursive: true, force: true });
  });

  it('signs in, shows the webhook arriving, its request and response, verifies its evidence and replays it', async () => {
    const seeded = await seedHistory();

    // the page, under its policy; a wrong key is refused on the sign-in card
    const served = await page.goto(`${svc.url}/ui`);
    expect(served?.status()).toBe(200);
    expect(served?.headers()['content-security-policy']).toMatch(/^default-src 'self'/);
    await page.fill('#api-key', 'hlk_not-a-key');
    await page.click('form.signin-card button[type="submit"]');
    await page.locator('.form-error', { hasText: 'not accepted' }).waitFor();
    // the browser logs that refusal (401) as a failed load; from here on nothing may fail
    problems.length = 0;
    await page.fill('#api-key', key);
    await page.click('form.signin-card button[type="submit"]');
    await page.locator(`[data-tenant="${svc.tenantId}"]`).waitFor();
    expect(await page.evaluate("sessionStorage.getItem('hookline.apiKey')")).toBe(key);

    // webhooks through the Hook URL: one carries markup, shown as text and never run
    await send({ type: 'order.created', order: 1041, total: '18.00' });
    await send({ type: 'order.paid', order: 1041, amount: 1800 });
    const eventId = await send({ type: 'order.created', order: 1042, note: MARKER, customer: { name: 'Ada', email: 'ada@example.com' } });
    const delivered = await row(`tr[data-event="${eventId}"]:has(.pill-ok)`);
    const deliveryId = String(await delivered.getAttribute('data-delivery'));
    expect(await delivered.textContent()).toContain('Orders service');
    expect(await delivered.textContent()).toContain('order.created');

    // the stats count the history and the new attempts
    const kpi = page.locator('[data-kpi="attempts"] .kpi-value');
    await eventually('attempts counted', async () => {
      await page.click('[data-action="refresh"]');
      const n = Number((await kpi.textContent())?.replace(/,/g, ''));
      return n >= seeded + 3 ? n : undefined;
    }, 30_000, 500);
    expect(await page.locator('svg.chart .bar rect.fill-ok').count()).toBeGreaterThan(40);
    // attempts per destination (by name) and per event type over the same window (GET .../analytics)
    const groups = page.locator('[data-analytics="groups"]');
    for (const group of [okDestination, failingDestination, 'order.created', 'order.paid', 'invoice.sent', 'order.shipped']) await groups.locator(`g[data-group="${group}"] rect`).first().waitFor();
    expect(await groups.locator(`g[data-group="${okDestination}"] text`).first().textContent()).toBe('Orders service');
    expect(await groups.locator(`g[data-group="${failingDestination}"] rect.fill-ok`).count()).toBe(0);
    await page.locator(`tr[data-destination="${failingDestination}"]`).waitFor();
    expect(await page.locator('tr[data-stage]').count()).toBe(6);

    // the delivery: the request its event sent, the attempt and its response
    await delivered.click();
    const panel = page.locator('[data-panel="delivery"]');
    await panel.locator('h2', { hasText: deliveryId }).waitFor();
    await panel.locator('[data-result="body-hash"]', { hasText: 'matches every attempt' }).waitFor();
    const request = await panel.locator('.detail-section', { hasText: 'Request' }).locator('pre.body').textContent();
    expect(request).toContain(MARKER);
    expect(request).toContain('"order": 1042');
    expect(await panel.locator('.request-line').textContent()).toContain(ok.url);
    expect(await panel.locator('li.attempt').count()).toBe(1);
    expect(await panel.locator('li.attempt pre.body').textContent()).toContain('"received": true');
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.evaluate('window.__pwned')).toBeUndefined();

    // evidence, checked in the page; first every delivery's leaf sealed, so the proof has hashes
    const asKey = (p: string) => svc.api('GET', `${tenantPath()}${p}`, undefined, { key });
    const evidence = await eventually('evidence confirmed', async () => {
      const e = (await asKey(`/evidence/${deliveryId}`)).body;
      return e.status === 'confirmed' && e.inclusion_proof.length > 0 ? e : undefined;
    }, 60_000, 300);
    await panel.locator('[data-action="verify"]').click();
    const verdict = panel.locator('[data-result="evidence"] [data-evidence="verified"]');
    await verdict.waitFor({ timeout: 45_000 }).catch(async (err) => {
      throw new Error(`not verified: ${await panel.locator('[data-result="evidence"]').textContent()} (${(err as Error).message})`);
    });
    for (const check of ['leaf', 'signature', 'checkpoint', 'inclusion']) {
      expect({ check, ok: await panel.locator(`[data-check="${check}"]`).getAttribute('class') }).toEqual({ check, ok: 'check-ok' });
    }
    const shownRoot = await panel.locator('[data-root]').getAttribute('data-root');
    const checkpoints = (await asKey('/evidence-log/checkpoints?limit=200')).body.checkpoints as Json[];
    expect(checkpoints.map((c) => c.root_hash)).toContain(shownRoot);
    expect(evidence.leaf_hash).toMatch(/^[0-9a-f]{64}$/);

    // replay of the delivered delivery: a replay job over its instant, one new delivery
    await panel.locator('[data-action="replay"]').click();
    await panel.locator('[data-replay="completed"]', { hasText: '1 of 1 replayed' }).waitFor({ timeout: 60_000 });
    await ok.waitForRequests(4);
    expect(ok.requests.filter((r) => r.body.toString().includes('"order":1042'))).toHaveLength(2);
    await row(`tr[data-event="${eventId}"]:has(.pill-ok) >> nth=0`);
    await eventually('the replay in the table', async () => {
      await page.click('[data-action="refresh"]');
      const n = await page.locator(`table[data-table="deliveries"] tr[data-event="${eventId}"]:has(.pill-ok)`).count();
      return n === 2 ? n : undefined;
    }, 30_000, 500);

    const shot = path.join(dir, 'ui-dashboard.png');
    // the whole page in one viewport, so that the sticky top bar stays at the top of the picture
    const height = Number(await page.evaluate('document.documentElement.scrollHeight'));
    await page.setViewportSize({ width: 1440, height });
    await page.screenshot({ path: shot });
    await page.setViewportSize({ width: 1440, height: 900 });
    if (process.env.HOOKLINE_UPDATE_SCREENSHOT === '1') copyFileSync(shot, path.join(REPO, 'docs/ui-dashboard.png'));

    // a proof changed on the way is shown failed, by the check it fails
    await page.route(`**/evidence/${deliveryId}*`, async (route) => {
      const answer = await route.fetch();
      const body = (await answer.json()) as Json;
      body.inclusion_proof[0] = `${body.inclusion_proof[0][0] === '0' ? '1' : '0'}${body.inclusion_proof[0].slice(1)}`;
      await route.fulfill({ response: answer, json: body });
    });
    await panel.locator('[data-action="verify"]').click();
    await panel.locator('[data-result="evidence"] [data-evidence="failed"]').waitFor();
    expect(await panel.locator('[data-check="inclusion"]').getAttribute('class')).toBe('check-bad');
    expect(await panel.locator('[data-check="leaf"]').getAttribute('class')).toBe('check-ok');
    await page.unroute(`**/evidence/${deliveryId}*`);

    // the dead delivery of the same event: both attempts with their answers; replay queues it again
    const dead = await row(`tr[data-event="${eventId}"]:has(.pill-bad)`);
    const deadId = String(await dead.getAttribute('data-delivery'));
    await dead.click();
    await panel.locator('h2', { hasText: deadId }).waitFor();
    expect(await panel.locator('li.attempt').count()).toBe(2);
    expect(await panel.locator('li.attempt').first().textContent()).toContain('down for maintenance');
    const before = failing.requests.length;
    await panel.locator('[data-action="replay"]').click();
    const queued = panel.locator('[data-replay="queued"]');
    await queued.waitFor();
    expect(await queued.textContent()).toMatch(/Queued again as dlv_[0-9a-z]{26}/);
    await failing.waitForRequests(before + 1);

    // the search exported as CSV: a file whose rows are the table's attempts, oldest first
    await page.selectOption('select[name="export_format"]', 'csv');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-action="export"]')]);
    expect(download.suggestedFilename()).toMatch(/^deliveries-.+\.csv$/);
    const csv = readFileSync(String(await download.path()), 'utf8').trim().split('\n');
    expect(csv[0]).toMatch(/^"id","event_id","destination_id","status"/);
    expect(csv.filter((line) => line.includes(eventId)).length).toBeGreaterThanOrEqual(3);
    expect(csv.some((line) => line.includes(deadId))).toBe(true);

    // signed out: the key is gone from the tab
    await page.click('button:has-text("Sign out")');
    await page.locator('#api-key').waitFor();
    expect(await page.evaluate("sessionStorage.getItem('hookline.apiKey')")).toBeNull();
    expect(problems).toEqual([]);
  }, 300_000);

  it('lists a record a stage set aside with its stage and reason, and puts it back once its cause is fixed', async () => {
    // an ingester whose stored filters no longer compile (a lookahead, as an older version could store it)
    const made = await svc.api('POST', `${tenantPath()}/ingesters`, { name: 'Returns', provider: 'none', config: {}, destination_ids: [okDestination], filters: [{ type: 'header', name: 'x-tag', op: 'matches', pattern: '^t' }] });
    expect(made.status).toBe(201);
    await svc.service.store.put({ ...svc.service.store.get('ingester', svc.tenantId, made.body.id)!, filters: [{ type: 'header', name: 'x-tag', op: 'matches', pattern: '^t(?=a)' }] });
    const res = await fetch(made.body.hook_url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-tag': 'ta' }, body: JSON.stringify({ type: 'return.opened', rma: 77 }) });
    expect(res.status).toBe(202);
    const eventId = ((await res.json()) as Json).event_id as string;

    problems.length = 0;
    await page.goto(`${svc.url}/ui`);
    await page.fill('#api-key', key);
    await page.click('form.signin-card button[type="submit"]');
    await page.locator(`[data-tenant="${svc.tenantId}"]`).waitFor();
    const letter = page.locator(`table[data-table="dead-letters"] tr[data-event="${eventId}"]`);
    await eventually('the dead letter in the table', async () => {
      if ((await letter.count()) > 0) return true;
      await page.click('[data-action="refresh-dead-letters"]');
      await page.waitForTimeout(500);
      return undefined;
    }, 60_000, 0);
    expect(await letter.locator('.pill').textContent()).toBe('filter');
    expect(await letter.locator('td.reason').textContent()).toMatch(/^filter not evaluated: the ingester's filters are invalid/);

    // fixed through the API, put back from the page: the event is delivered, and the letter says so
    expect((await svc.api('PUT', `${tenantPath()}/ingesters/${made.body.id}`, { name: 'Returns', filters: [] })).status).toBe(200);
    const before = ok.requests.length;
    await letter.locator('[data-action="replay-dead-letter"]').click();
    await page.locator('[data-result="dead-letter-replay"] [data-replay="replayed"]').waitFor();
    const delivered = await ok.waitForRequests(before + 1);
    expect(delivered.some((r) => r.body.toString().includes('"rma":77'))).toBe(true);
    await eventually('the letter shown replayed', async () => {
      if ((await letter.locator('[data-replayed]').count()) > 0) return true;
      await page.click('[data-action="refresh-dead-letters"]');
      await page.waitForTimeout(500);
      return undefined;
    }, 30_000, 0);
    expect(await letter.locator('[data-action="replay-dead-letter"]').count()).toBe(0);
    expect(problems).toEqual([]);
  }, 120_000);
});
