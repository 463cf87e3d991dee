// The dashboard, signed into one of two ways: an API key typed in (kept in this tab's
// sessionStorage), or a portal link an operator made for a tenant's user (the session in an
// HttpOnly cookie, nothing stored by the page). Either way one tenant only (the API enforces it;
// the page asks GET /v1/me which), and only what the key's or the session's scopes allow.

import { Api, ApiError } from './api.js';
import { eventTypeCatalog } from './catalog.js';
import { h, replace } from './dom.js';
import { dateTime } from './format.js';
import { applyAccent, cameBack, portalBrand, portalNotice, takePortalCode } from './portal.js';
import { signInView } from './views/signin.js';
import { Overview } from './views/overview.js';
import { Deliveries } from './views/deliveries.js';
import { DeliveryDetail } from './views/delivery.js';
import { DeadLetters } from './views/dead-letters.js';
import { Destinations, typeCatalog } from './views/destinations.js';
import { DestinationDetail } from './views/destination.js';

const KEY_STORAGE = 'hookline.apiKey';
const WINDOW_STORAGE = 'hookline.window';
const WINDOWS = [['15m', '15 min'], ['1h', '1 hour'], ['6h', '6 hours'], ['24h', '24 hours']];
const REFRESH_MS = 10_000;
const SPENT = 'This portal link has expired or was already used; ask for a new one.';

const root = document.getElementById('app');
// off the address before anything else runs
const portalCode = takePortalCode();
/** Stops the dashboard shown (its refresh), before something else takes the page; resolves once its last refresh ended. */
let stopDashboard = () => Promise.resolve();

async function signIn(key) {
  if (!key) throw new Error('Enter an API key.');
  const api = new Api(key);
  let me;
  try {
    me = await api.me();
  } catch (err) {
    throw new Error(err instanceof ApiError && err.status === 401 ? `That key is not accepted: ${err.message}.` : `Cannot sign in: ${err.message}`);
  }
  sessionStorage.setItem(KEY_STORAGE, key);
  api.tenantId = me.tenant_id;
  dashboard(api, me);
}

function showSignIn(error) {
  stopDashboard();
  document.title = 'Sign in · hookline';
  replace(root, signInView({ onSubmit: signIn, error }));
}

function showPortalNotice(kind, title, text) {
  stopDashboard();
  document.title = `${title} · hookline`;
  replace(root, portalNotice(kind, title, text));
}

const sessionEnded = () => showPortalNotice('ended', 'Your portal session has ended', 'It expired, or access was withdrawn. Open a new portal link to go on.');

async function signOut(api) {
  api.onUnauthorized = null;
  await stopDashboard();
  if (!api.isPortal) {
    sessionStorage.removeItem(KEY_STORAGE);
    showSignIn();
    return;
  }
  try {
    await api.closePortalSession();
  } catch {
    // an ended session is signed out already
  }
  showPortalNotice('signed-out', 'Signed out', 'You have left the webhook portal; this browser holds no session any more.');
}

/** Trades a portal link's code for a session, then shows the tenant's portal. */
async function openPortal(code) {
  const api = Api.portal();
  try {
    await api.openPortalSession(code);
  } catch (err) {
    if (err instanceof ApiError && err.status >= 400 && err.status < 500) showPortalNotice('spent', 'This link cannot be used', SPENT);
    else showPortalNotice('unavailable', 'The portal cannot be opened', `The service did not answer as expected (${err.message}); try the link again in a moment.`);
    return;
  }
  await resumePortal(api, sessionEnded);
}

/** The portal of the session this browser holds, or `otherwise()` without one. */
async function resumePortal(api, otherwise) {
  let me;
  try {
    me = await api.me();
  } catch {
    otherwise();
    return;
  }
  api.tenantId = me.tenant_id;
  dashboard(api, me);
}

function dashboard(api, me) {
  stopDashboard();
  const portal = api.isPortal;
  const can = (scope) => me.scopes.includes(scope);
  const tenantName = (portal && me.portal?.tenant_name) || me.tenant_id;
  document.title = portal ? `${tenantName} · webhooks` : `${me.tenant_id} · hookline`;
  if (portal) applyAccent(me.portal?.accent_color);
  api.onUnauthorized = () => {
    if (portal) return sessionEnded();
    sessionStorage.removeItem(KEY_STORAGE);
    showSignIn('The API no longer accepts this key (revoked or expired); sign in again.');
  };
  // the stats window is remembered for an API key's tab only: a portal stores nothing
  let statsWindow = (portal ? null : sessionStorage.getItem(WINDOW_STORAGE)) ?? '1h';
  const names = new Map();
  const types = typeCatalog(api);
  const overview = can('read:stats') ? new Overview(api) : null;
  const detail = can('read:deliveries') ? new DeliveryDetail(api, { tenantId: me.tenant_id, can, onReplayed: () => refresh(), onOpen: (id) => open(id) }) : null;
  const deliveries = detail ? new Deliveries(api, { onSelect: (id) => open(id), destinationName: (id) => names.get(id), canRetry: can('write:events'), onRetried: () => refresh() }) : null;
  const deadLetters = !portal && can('read:events') ? new DeadLetters(api, { onReplayed: () => refresh() }) : null;
  const destinationDetail = can('read:destinations')
    ? new DestinationDetail(api, {
        types,
        can,
        onSaved: (d) => {
          destinations.select(d.id);
          refresh();
        },
        onDeleted: () => {
          destinations.select(null);
          refresh();
        },
        onOpenDelivery: (id) => {
          open(id);
          detail?.element.scrollIntoView({ block: 'start' });
        },
      })
    : null;
  // a key or session limited to some destinations manages those, and creates none
  const destinations = destinationDetail ? new Destinations(api, { types, onSelect: (id) => openDestination(id), onCreate: can('write:destinations') && !me.resource_ids ? () => createDestination() : null }) : null;
  const updated = h('span', { class: 'muted small', 'data-updated': '' });
  if (deliveries && can('read:event-types')) {
    eventTypeCatalog(api).then((list) => {
      if (!(list instanceof Error)) deliveries.setEventTypes(list.map((t) => t.name));
    });
  }

  function open(id) {
    if (!detail) return;
    deliveries.select(id);
    detail.open(id);
  }

  function openDestination(id) {
    if (!destinationDetail.mayLeave(id)) return;
    destinations.select(id);
    destinationDetail.open(id);
  }

  function createDestination() {
    destinations.select(null);
    destinationDetail.create();
  }

  /** The destinations by name for the deliveries: from the stats when readable, else from their list. */
  async function destinationNames() {
    if (overview) return overview.destinations;
    if (!can('read:destinations')) return [];
    try {
      return (await api.get('/destinations', { limit: 200 })).destinations.map((d) => ({ destination_id: d.id, name: d.name }));
    } catch {
      return [];
    }
  }

  let running = true;
  /** The refreshes under way: a sign-out waits for them, so none is answered after the session closed. */
  let refreshing = Promise.resolve();
  const refreshSteps = [
    () => overview?.refresh(statsWindow),
    async () => {
      const list = await destinationNames();
      for (const d of list) names.set(d.destination_id, d.name);
      deliveries?.setDestinations(list);
    },
    () => deliveries?.page === 0 && deliveries.refresh(),
    () => deadLetters?.page === 0 && deadLetters.refresh(),
    () => destinations?.page === 0 && destinations.refresh(),
  ];
  async function refreshOnce() {
    for (const step of refreshSteps) {
      if (!running) return;
      await step();
    }
    const now = new Date().toISOString();
    updated.textContent = `Updated ${dateTime(now).slice(11)}`;
    updated.dataset.updated = now;
  }
  function refresh() {
    const run = refreshOnce();
    refreshing = Promise.all([refreshing, run]).then(() => undefined, () => undefined);
    return run;
  }

  const windowSelect = overview
    ? h(
        'select',
        {
          'aria-label': 'Window',
          name: 'window',
          onchange: () => {
            statsWindow = windowSelect.value;
            if (!portal) sessionStorage.setItem(WINDOW_STORAGE, statsWindow);
            refresh();
          },
        },
        WINDOWS.map(([value, label]) => h('option', { value, selected: value === statsWindow }, label)),
      )
    : null;

  const who = portal
    ? h('span', { class: 'key', title: `scopes: ${me.scopes.join(', ')}`, 'data-session': '' }, me.expires_at ? `Session until ${dateTime(me.expires_at).slice(11, 16)}` : 'Portal session')
    : h('span', { class: 'key', title: `scopes: ${me.scopes.join(', ')}` }, me.name ? `${me.name} · ` : '', h('span', { class: 'mono' }, me.key_id));
  const brand = portal ? portalBrand(me.portal, me.tenant_id) : h('div', { class: 'brand' }, h('span', { class: 'brand-mark' }, 'h'), h('span', {}, 'hookline'));
  const crumbs = portal ? h('div', { class: 'crumbs' }, h('span', { class: 'muted' }, 'Webhook portal')) : h('nav', { class: 'crumbs' }, h('span', { class: 'muted' }, 'Tenant'), h('span', { class: 'tenant', 'data-tenant': me.tenant_id }, me.tenant_id));
  const deliveryRow = deliveries ? h('div', { class: 'split' }, deliveries.element, detail.element) : null;
  const destinationRow = destinations ? h('div', { class: 'split' }, destinations.element, destinationDetail.element) : null;
  // a portal is for managing destinations: they come first
  const panels = portal ? [destinationRow, deliveryRow, overview?.element] : [overview?.element, deliveryRow, destinationRow, deadLetters?.element];
  replace(
    root,
    h(
      'header',
      { class: `topbar${portal ? ' portal' : ''}` },
      brand,
      crumbs,
      h('div', { class: 'topbar-right' }, updated, windowSelect, who, h('button', { type: 'button', class: 'button ghost', 'data-action': 'sign-out', onclick: () => signOut(api) }, 'Sign out')),
    ),
    h('div', { class: 'page' }, panels.filter(Boolean)),
  );
  refresh();
  const timer = setInterval(() => {
    if (document.visibilityState === 'visible') refresh();
  }, REFRESH_MS);
  stopDashboard = () => {
    running = false;
    clearInterval(timer);
    stopDashboard = () => Promise.resolve();
    return refreshing;
  };
}

async function start() {
  if (portalCode !== null) return openPortal(portalCode);
  const key = sessionStorage.getItem(KEY_STORAGE);
  if (key) {
    try {
      await signIn(key);
    } catch (err) {
      sessionStorage.removeItem(KEY_STORAGE);
      showSignIn(err.message);
    }
    return;
  }
  // back on the page of a portal session (a reload): its cookie may still be good
  if (cameBack()) return resumePortal(Api.portal(), () => showSignIn());
  showSignIn();
}

// a portal link opened over this page: start again with its code
window.addEventListener('hashchange', () => {
  if (location.hash.startsWith('#portal=')) location.reload();
});

start();
