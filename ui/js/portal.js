// The portal: a page a tenant's user opens from a one-time link an operator made
// (`/ui/#portal=<code>`). The code is traded for an HttpOnly session cookie and taken off the
// address at once; nothing of the session is kept in the page's storage. The tenant's name, logo
// and accent colour brand the page.

import { h } from './dom.js';

const ACCENT = /^#[0-9a-f]{6}$/i;

/** The one-time code of a portal link, taken off the address (history, bookmarks) at once; null without one. */
export function takePortalCode() {
  if (!location.hash.startsWith('#portal=')) return null;
  const code = new URLSearchParams(location.hash.slice(1)).get('portal') ?? '';
  history.replaceState(null, '', `${location.pathname}${location.search}`);
  return code;
}

/**
 * Whether this load came back to the page (a reload, back or forward), when a portal session's
 * cookie from before may be there. A first visit does not ask: without a session the API's 401
 * is all it would learn.
 */
export function cameBack() {
  const type = performance.getEntriesByType('navigation')[0]?.type;
  return type === 'reload' || type === 'back_forward';
}

/** A logo the page shows: an https: address or an inline image, nothing else. */
export function logoAllowed(url) {
  if (typeof url !== 'string') return false;
  if (/^data:image\//i.test(url)) return true;
  try {
    return new URL(url).protocol === 'https:';
  } catch {
    return false;
  }
}

const channels = (hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
const toHex = (rgb) => `#${rgb.map((c) => Math.round(c).toString(16).padStart(2, '0')).join('')}`;
const mix = (rgb, toward, share) => rgb.map((c, i) => c + (toward[i] - c) * share);

/** The accent colour and its tints as the stylesheet's custom properties (set from here: the policy allows no inline style). */
export function applyAccent(color) {
  if (typeof color !== 'string' || !ACCENT.test(color)) return;
  const rgb = channels(color);
  // relative luminance (WCAG 2): white text on a dark accent, near-black on a light one
  const [r, g, b] = rgb.map((c) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  });
  const light = 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.4;
  const style = document.documentElement.style;
  style.setProperty('--accent', color);
  style.setProperty('--accent-strong', toHex(mix(rgb, [0, 0, 0], 0.18)));
  style.setProperty('--accent-soft', toHex(mix(rgb, [255, 255, 255], 0.88)));
  style.setProperty('--on-accent', light ? '#111827' : '#ffffff');
}

/** The top bar's brand in portal mode: the tenant's logo (when allowed) and name. */
export function portalBrand(portal, tenantId) {
  const name = portal?.tenant_name || tenantId;
  const logo = logoAllowed(portal?.logo_url) ? h('img', { class: 'brand-logo', src: portal.logo_url, alt: '', 'data-logo': '' }) : h('span', { class: 'brand-mark', 'aria-hidden': 'true' }, name.slice(0, 1).toUpperCase());
  return h('div', { class: 'brand' }, logo, h('span', { class: 'tenant-name', 'data-tenant-name': '', 'data-tenant': tenantId, title: tenantId }, name));
}

/** A card in place of the page: the link is spent, the session ended, or signed out. No key field. */
export function portalNotice(kind, title, text) {
  return h(
    'section',
    { class: 'signin' },
    h('div', { class: 'signin-card notice-card', role: 'alert', 'data-portal-notice': kind }, h('h1', {}, title), h('p', {}, text), h('p', { class: 'muted small' }, 'Whoever gave you access to these webhooks can send a new link.')),
  );
}
