// The dashboard: sign in with an API key, then the key's tenant only (the API enforces it; the
// page asks GET /v1/me which tenant that is).

import { Api, ApiError } from './api.js';
import { h, replace } from './dom.js';
import { dateTime } from './format.js';
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

const root = document.getElementById('app');

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

function signOut() {
  sessionStorage.removeItem(KEY_STORAGE);
  location.reload();
}

function showSignIn(error) {
  document.title = 'Sign in · hookline';
  replace(root, signInView({ onSubmit: signIn, error }));
}

function dashboard(api, me) {
  document.title = `${me.tenant_id} · hookline`;
  let statsWindow = sessionStorage.getItem(WINDOW_STORAGE) ?? '1h';
  const names = new Map();
  const overview = new Overview(api);
  const detail = new DeliveryDetail(api, {
    tenantId: me.tenant_id,
    onReplayed: () => refresh(),
    onOpen: (id) => open(id),
  });
  const deliveries = new Deliveries(api, { onSelect: (id) => open(id), destinationName: (id) => names.get(id) });
  const deadLetters = new DeadLetters(api, { onReplayed: () => refresh() });
  const types = typeCatalog(api);
  const destinationDetail = new DestinationDetail(api, { types, onSaved: () => destinations.refresh() });
  const destinations = new Destinations(api, { types, onSelect: (id) => openDestination(id) });
  const updated = h('span', { class: 'muted small', 'data-updated': '' });

  function open(id) {
    deliveries.select(id);
    detail.open(id);
  }

  function openDestination(id) {
    if (!destinationDetail.mayLeave(id)) return;
    destinations.select(id);
    destinationDetail.open(id);
  }

  async function refresh() {
    await overview.refresh(statsWindow);
    for (const d of overview.destinations) names.set(d.destination_id, d.name);
    deliveries.setDestinations(overview.destinations);
    if (deliveries.page === 0) await deliveries.refresh();
    if (deadLetters.page === 0) await deadLetters.refresh();
    if (destinations.page === 0) await destinations.refresh();
    const now = new Date().toISOString();
    updated.textContent = `Updated ${dateTime(now).slice(11)}`;
    updated.dataset.updated = now;
  }

  const windowSelect = h(
    'select',
    {
      'aria-label': 'Window',
      name: 'window',
      onchange: () => {
        statsWindow = windowSelect.value;
        sessionStorage.setItem(WINDOW_STORAGE, statsWindow);
        refresh();
      },
    },
    WINDOWS.map(([value, label]) => h('option', { value, selected: value === statsWindow }, label)),
  );

  replace(
    root,
    h(
      'header',
      { class: 'topbar' },
      h('div', { class: 'brand' }, h('span', { class: 'brand-mark' }, 'h'), h('span', {}, 'hookline')),
      h('nav', { class: 'crumbs' }, h('span', { class: 'muted' }, 'Tenant'), h('span', { class: 'tenant', 'data-tenant': me.tenant_id }, me.tenant_id)),
      h('div', { class: 'topbar-right' }, updated, windowSelect, h('span', { class: 'key', title: `scopes: ${me.scopes.join(', ')}` }, me.name ? `${me.name} · ` : '', h('span', { class: 'mono' }, me.key_id)), h('button', { type: 'button', class: 'button ghost', onclick: signOut }, 'Sign out')),
    ),
    h('div', { class: 'page' }, overview.element, h('div', { class: 'split' }, deliveries.element, detail.element), h('div', { class: 'split' }, destinations.element, destinationDetail.element), deadLetters.element),
  );
  refresh();
  setInterval(() => {
    if (document.visibilityState === 'visible') refresh();
  }, REFRESH_MS);
}

async function start() {
  const key = sessionStorage.getItem(KEY_STORAGE);
  if (!key) return showSignIn();
  try {
    await signIn(key);
  } catch (err) {
    sessionStorage.removeItem(KEY_STORAGE);
    showSignIn(err.message);
  }
}

start();
