// The tenant's destinations, oldest first, each with its type, address and status:
// GET /v1/tenants/{tenant}/destinations, and the types' titles from GET /v1/destination-types.

import { ApiError } from '../api.js';
import { h, replace } from '../dom.js';
import { CursorPager } from '../pager.js';

const PAGE = 15;

/** The destination types by name (`kafka` → its title, config schema, …); an empty map when the API did not answer. */
export function typeCatalog(api) {
  return api
    .destinationTypes()
    .then((answer) => new Map(answer.destination_types.map((t) => [t.type, t])))
    .catch(() => new Map());
}

export function destinationStatusPill(status) {
  const cls = status === 'active' ? 'pill-ok' : status === 'disabled' ? 'pill-bad' : 'pill-muted';
  return h('span', { class: `pill ${cls}`, 'data-status': status }, status);
}

/** The type as the API names it, and its title beside it when the catalogue has it. */
export function typeLabel(type, info) {
  return h('span', { class: 'type-label' }, h('span', { class: 'type-tag mono', 'data-type': type }, type), info ? h('span', { class: 'muted small' }, info.title) : null);
}

export class Destinations {
  /** `onCreate`: opens the form of a new destination; without it none is offered. */
  constructor(api, { types, onSelect, onCreate }) {
    this.api = api;
    this.types = types;
    this.catalog = new Map();
    this.onSelect = onSelect;
    this.selected = null;
    this.message = h('p', { class: 'form-error', role: 'alert' });
    this.body = h('tbody', {});
    this.pager = new CursorPager({
      labels: ['← Previous', 'Next →'],
      load: async (cursor) => {
        this.message.textContent = '';
        const [answer, catalog] = await Promise.all([this.api.get('/destinations', { limit: PAGE, cursor }), this.types]);
        this.catalog = catalog;
        return answer;
      },
      show: (answer) => this.render(answer.destinations),
      fail: (err) => {
        this.message.textContent = err instanceof ApiError && err.status === 403 ? `Destinations: this key may not read them (${err.problem?.required_scope ?? err.slug})` : `Destinations: ${err.message}`;
      },
    });
    this.element = h(
      'section',
      { class: 'card destinations', 'data-panel': 'destinations', id: 'destinations' },
      h('header', { class: 'card-head' }, h('h2', {}, 'Destinations'), h('span', { class: 'muted small' }, 'where deliveries go, oldest first; select one for its settings and to try its transformation'), h('button', { type: 'button', class: 'button small push', onclick: () => this.refresh(), 'data-action': 'refresh-destinations' }, 'Refresh'), onCreate ? h('button', { type: 'button', class: 'button small primary', onclick: () => onCreate(), 'data-action': 'new-destination' }, 'New destination') : null),
      this.message,
      h('div', { class: 'table-wrap' }, h('table', { class: 'table rows', 'data-table': 'destinations' }, h('thead', {}, h('tr', {}, ['Name', 'Type', 'URL', 'Status', 'Transform'].map((t) => h('th', {}, t)))), this.body)),
      this.pager.element,
    );
  }

  /** The page shown, 0 the first. */
  get page() {
    return this.pager.page;
  }

  refresh() {
    return this.pager.refresh();
  }

  select(id) {
    this.selected = id;
    for (const row of this.body.children) row.classList.toggle('selected', row.dataset.destinationId === id);
  }

  render(items) {
    if (items.length === 0) {
      replace(this.body, h('tr', {}, h('td', { colspan: 5, class: 'muted empty-row' }, 'No destination yet.')));
      return;
    }
    replace(
      this.body,
      items.map((d) => {
        const type = d.type ?? 'webhook';
        return h(
          'tr',
          {
            tabindex: 0,
            class: d.id === this.selected ? 'selected' : '',
            'data-destination-id': d.id,
            'data-type': type,
            'aria-label': `${d.name}, ${type}`,
            onclick: () => this.onSelect(d.id),
            onkeydown: (e) => {
              if (e.key === 'Enter' || e.key === ' ') {
                e.preventDefault();
                this.onSelect(d.id);
              }
            },
          },
          h('td', { class: 'clip strong', title: `${d.name} · ${d.id}` }, d.name),
          h('td', {}, typeLabel(type, this.catalog.get(type))),
          h('td', { class: 'clip url-cell mono', title: d.url }, d.url),
          h('td', {}, destinationStatusPill(d.status)),
          h('td', {}, d.transformation ? h('span', { class: 'pill pill-accent', 'data-transformation': 'yes' }, 'transforms') : h('span', { class: 'muted' }, '—')),
        );
      }),
    );
  }
}
