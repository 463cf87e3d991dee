// Delivery attempts, newest first, searched and paged: GET /v1/tenants/{tenant}/deliveries; a
// failed one's event retried from its row (POST …/events/{event_id}/retry).

import { h, replace } from '../dom.js';
import { localInputToIso, short, when } from '../format.js';
import { CursorPager } from '../pager.js';
import { downloadExport, EXPORT_FORMATS } from '../export.js';

const PAGE = 15;

export function statusPill(status) {
  const cls = status === 'delivered' ? 'pill-ok' : status === 'failed' ? 'pill-bad' : 'pill-warn';
  return h('span', { class: `pill ${cls}` }, status);
}

export function codePill(code) {
  if (code === null || code === undefined) return h('span', { class: 'muted' }, '—');
  const cls = code < 300 ? 'code-ok' : code < 500 ? 'code-warn' : 'code-bad';
  return h('span', { class: `code ${cls}` }, String(code));
}

export class Deliveries {
  /** `canRetry`: whether a failed delivery's row offers a retry of its event; `onRetried(deliveryId)`. */
  constructor(api, { onSelect, destinationName, canRetry = false, onRetried }) {
    this.api = api;
    this.onSelect = onSelect;
    this.destinationName = destinationName;
    this.canRetry = canRetry;
    this.onRetried = onRetried;
    this.eventTypes = h('datalist', { id: 'delivery-event-types' });
    this.selected = null;
    this.filters = {};
    this.fields = {
      status: h('select', { name: 'status', 'aria-label': 'Status' }, h('option', { value: '' }, 'Any status'), ['delivered', 'retrying', 'failed', 'dropped'].map((v) => h('option', { value: v }, v))),
      destination_id: h('select', { name: 'destination_id', 'aria-label': 'Destination' }, h('option', { value: '' }, 'Any destination')),
      event_type: h('input', { name: 'event_type', type: 'text', placeholder: 'Event type', 'aria-label': 'Event type', list: this.eventTypes.id, maxlength: 200 }),
      response_code: h('input', { name: 'response_code', type: 'text', placeholder: 'Code: 503, 5xx', 'aria-label': 'Response code or class', maxlength: 3, class: 'narrow' }),
      from: h('input', { name: 'from', type: 'datetime-local', 'aria-label': 'From', title: 'From (local time)' }),
      to: h('input', { name: 'to', type: 'datetime-local', 'aria-label': 'To', title: 'To (local time)' }),
      q: h('input', { name: 'q', type: 'search', placeholder: 'Search bodies…', 'aria-label': 'Search the bodies', maxlength: 200, class: 'grow' }),
    };
    this.retryOut = h('div', { class: 'replay-result', 'data-result': 'retry', role: 'status' });
    this.exportFormat = h('select', { name: 'export_format', 'aria-label': 'Export format', class: 'narrow' }, EXPORT_FORMATS.map((f) => h('option', { value: f.value }, f.label)));
    this.message = h('p', { class: 'form-error', role: 'alert' });
    this.body = h('tbody', {});
    this.pager = new CursorPager({
      load: (cursor) => {
        this.message.textContent = '';
        return this.api.get('/deliveries', { ...this.filters, limit: PAGE, cursor });
      },
      show: (answer) => this.render(answer.deliveries),
      fail: (err) => {
        this.message.textContent = err.message;
      },
    });
    const form = h(
      'form',
      {
        class: 'filters',
        onsubmit: (e) => {
          e.preventDefault();
          this.apply();
        },
      },
      Object.values(this.fields),
      this.eventTypes,
      h('button', { type: 'submit', class: 'button primary' }, 'Search'),
      h('button', { type: 'button', class: 'button ghost', onclick: () => this.reset(form) }, 'Reset'),
    );
    this.element = h(
      'section',
      { class: 'card deliveries' },
      h('header', { class: 'card-head' }, h('h2', {}, 'Deliveries'), h('span', { class: 'muted small' }, 'one row per attempt, newest first'), h('button', { type: 'button', class: 'button small push', onclick: () => this.refresh(), 'data-action': 'refresh' }, 'Refresh'), this.exportFormat, h('button', { type: 'button', class: 'button small', onclick: () => this.export(), 'data-action': 'export', title: 'Download this search, oldest first' }, 'Export')),
      form,
      this.message,
      this.retryOut,
      h('div', { class: 'table-wrap' }, h('table', { class: 'table rows', 'data-table': 'deliveries' }, h('thead', {}, h('tr', {}, ['Time', 'Status', 'Code', 'Destination', 'Event type', 'Delivery', '#', canRetry ? '' : null].filter((t) => t !== null).map((t) => h('th', {}, t)))), this.body)),
      this.pager.element,
    );
  }

  /** The page shown, 0 the newest. */
  get page() {
    return this.pager.page;
  }

  /** The destinations the filter offers (from the stats). */
  setDestinations(list) {
    const select = this.fields.destination_id;
    const chosen = select.value;
    replace(select, h('option', { value: '' }, 'Any destination'), list.map((d) => h('option', { value: d.destination_id }, d.name)));
    select.value = list.some((d) => d.destination_id === chosen) ? chosen : '';
  }

  /** The event type names the filter suggests (the catalogue's). */
  setEventTypes(names) {
    replace(this.eventTypes, names.map((name) => h('option', { value: name })));
  }

  apply() {
    const f = this.fields;
    this.filters = {
      status: f.status.value,
      destination_id: f.destination_id.value,
      event_type: f.event_type.value.trim(),
      response_code: f.response_code.value.trim(),
      from: localInputToIso(f.from.value),
      to: localInputToIso(f.to.value),
      q: f.q.value.trim(),
    };
    return this.pager.restart();
  }

  /** Downloads the current search (the filters applied, not those only typed) in the chosen format. */
  async export() {
    this.message.textContent = '';
    try {
      const { more } = await downloadExport(this.api, 'deliveries', this.filters, this.exportFormat.value);
      if (more) this.message.textContent = 'Downloaded the oldest 10,000 attempts of this search; narrow it (From, To) or use `npm run cli -- export deliveries` for all of them.';
    } catch (err) {
      this.message.textContent = err.message;
    }
  }

  reset(form) {
    form.reset();
    return this.apply();
  }

  refresh() {
    return this.pager.refresh();
  }

  select(id) {
    this.selected = id;
    for (const row of this.body.children) row.classList.toggle('selected', row.dataset.delivery === id);
  }

  render(items) {
    if (items.length === 0) {
      replace(this.body, h('tr', {}, h('td', { colspan: this.canRetry ? 8 : 7, class: 'muted empty-row' }, 'No delivery attempts match.')));
      return;
    }
    replace(
      this.body,
      items.map((d) =>
        h(
          'tr',
          {
            tabindex: 0,
            class: d.id === this.selected ? 'selected' : '',
            'data-delivery': d.id,
            'data-event': d.event_id,
            onclick: () => this.onSelect(d.id),
            onkeydown: (e) => {
              if (e.key === 'Enter') this.onSelect(d.id);
            },
          },
          h('td', { class: 'nowrap', title: d.attempted_at }, when(d.attempted_at)),
          h('td', {}, statusPill(d.status)),
          h('td', {}, codePill(d.response_code)),
          h('td', { class: 'clip', title: d.destination_id }, this.destinationName(d.destination_id) ?? h('span', { class: 'mono' }, short(d.destination_id))),
          h('td', { class: 'clip' }, d.event_type ?? h('span', { class: 'muted' }, '—')),
          h('td', { class: 'mono nowrap', title: d.id }, short(d.id, 12)),
          h('td', { class: 'num' }, String(d.attempt_number)),
          this.canRetry ? h('td', {}, d.status === 'failed' ? this.retryButton(d) : null) : null,
        ),
      ),
    );
  }

  retryButton(d) {
    const button = h(
      'button',
      {
        type: 'button',
        class: 'button small',
        'data-action': 'retry-event',
        title: 'Deliver the event again to each destination where it failed, as new deliveries',
        onclick: (e) => {
          e.stopPropagation();
          this.retry(d, button);
        },
        onkeydown: (e) => e.stopPropagation(),
      },
      'Retry',
    );
    return button;
  }

  async retry(d, button) {
    button.disabled = true;
    replace(this.retryOut, h('p', { class: 'muted' }, 'Sending…'));
    try {
      const r = await this.api.post(`/events/${encodeURIComponent(d.event_id)}/retry`);
      replace(this.retryOut, h('p', { class: 'ok-text', 'data-retry': 'queued' }, `Event ${d.event_id} queued again as ${r.delivery_ids.join(', ')}. `, h('button', { type: 'button', class: 'link', onclick: () => this.onSelect(r.delivery_id) }, 'Open it')));
      this.onRetried?.(r.delivery_id);
    } catch (err) {
      button.disabled = false;
      replace(this.retryOut, h('p', { class: 'bad-text', 'data-retry': 'refused' }, `Retry refused: ${err.message}`));
    }
  }
}
