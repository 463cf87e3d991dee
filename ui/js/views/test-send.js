// Sending a test event to one destination (POST …/destinations/{id}/test-events): an event
// type's example, edited here, or a saved payload. The delivery it makes is followed in the
// deliveries list until its attempt is there, and can then be opened like any other.

import { h, replace } from '../dom.js';
import { exampleOf } from '../catalog.js';
import { codePill, statusPill } from './deliveries.js';
import { prettyJson, problemList, refusalText } from './parts.js';

const TYPE_ID = 'test-event-type';
const SOURCE_ID = 'test-event-source';
const BODY_ID = 'test-event-body';
/** The option of the payload select that sends the JSON typed below. */
const TYPED = '';
const FOLLOW_TRIES = 90;
const FINAL = new Set(['delivered', 'failed', 'dropped']);

export class TestSend {
  /**
   * `catalog`, `payloads`: the event types and saved payloads, or the errors reading them;
   * `canFollow`: whether the deliveries may be read; `onOpenDelivery(id)`.
   */
  constructor(api, { destination, catalog, payloads, canFollow, onOpenDelivery }) {
    this.api = api;
    this.destination = destination;
    this.canFollow = canFollow;
    this.onOpenDelivery = onOpenDelivery;
    this.sends = 0;
    const types = catalog instanceof Error ? [] : catalog;
    this.types = new Map(types.map((t) => [t.name, t]));
    const subscribed = destination.event_types;
    const receives = (name) => subscribed === null || subscribed.some((s) => s === name || s === '*' || (s.endsWith('*') && name.startsWith(s.slice(0, -1))));
    this.type = h(
      'select',
      { id: TYPE_ID, name: 'event_type', onchange: () => this.typeChanged() },
      types.length === 0 ? h('option', { value: '' }, 'No type (the catalogue is empty)') : types.map((t) => h('option', { value: t.name }, receives(t.name) ? t.name : `${t.name} (not subscribed)`)),
    );
    this.type.value = types.find((t) => receives(t.name))?.name ?? types[0]?.name ?? '';
    const saved = payloads instanceof Error ? [] : payloads;
    this.source = h('select', { id: SOURCE_ID, name: 'payload_source', onchange: () => this.sourceChanged() }, h('option', { value: TYPED }, 'The JSON below'), saved.map((p) => h('option', { value: p.id }, `Saved: ${p.name}`)));
    this.body = h('textarea', {
      id: BODY_ID,
      name: 'payload',
      class: 'code-editor small-editor',
      rows: 8,
      spellcheck: 'false',
      autocomplete: 'off',
      wrap: 'off',
      oninput: () => {
        this.source.value = TYPED;
        this.body.removeAttribute('aria-invalid');
        this.sourceChanged();
      },
    });
    this.button = h('button', { type: 'button', class: 'button primary', 'data-action': 'send-test-event', onclick: () => this.send() }, 'Send test event');
    this.out = h('div', { class: 'save-result', 'data-result': 'test-send', role: 'status' });
    this.typeChanged();
    this.element = h(
      'section',
      { class: 'detail-section test-send', 'data-section': 'test-send' },
      h('h3', {}, 'Send a test event'),
      h('p', { class: 'muted small hint' }, 'Delivered to this destination only, signed and recorded like any event, with its evidence.'),
      h(
        'div',
        { class: 'try-row' },
        h('div', {}, h('label', { for: TYPE_ID, class: 'field-label' }, 'Event type'), this.type, h('label', { for: SOURCE_ID, class: 'field-label' }, 'Payload'), this.source, payloads instanceof Error ? h('p', { class: 'muted small' }, `Saved payloads: ${refusalText(payloads)}.`) : null),
        h('div', {}, h('label', { for: BODY_ID, class: 'field-label' }, 'JSON'), this.body),
      ),
      h('div', { class: 'toolbar' }, this.button),
      this.out,
    );
  }

  /** The example of the type chosen, in the editor (while the typed JSON is what is sent). */
  typeChanged() {
    if (this.source.value !== TYPED) return;
    this.body.value = prettyJson(exampleOf(this.types.get(this.type.value)));
    this.body.removeAttribute('aria-invalid');
  }

  sourceChanged() {
    this.body.classList.toggle('unused', this.source.value !== TYPED);
  }

  /** The request, or null with the reason shown. */
  request() {
    const request = this.type.value ? { event_type: this.type.value } : {};
    if (this.source.value !== TYPED) return { ...request, saved_payload_id: this.source.value };
    let payload;
    try {
      payload = JSON.parse(this.body.value);
    } catch (err) {
      payload = err;
    }
    if (payload instanceof Error || typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
      this.body.setAttribute('aria-invalid', 'true');
      replace(this.out, h('p', { class: 'bad-text', 'data-test-send': 'invalid' }, payload instanceof Error ? `The JSON does not parse: ${payload.message}` : 'The payload must be a JSON object.'));
      this.body.focus();
      return null;
    }
    return { ...request, payload };
  }

  async send() {
    const request = this.request();
    if (!request) return;
    const send = ++this.sends;
    this.button.disabled = true;
    replace(this.out, h('p', { class: 'muted' }, 'Sending…'));
    let sent;
    try {
      sent = await this.api.post(`/destinations/${encodeURIComponent(this.destination.id)}/test-events`, request);
    } catch (err) {
      replace(this.out, h('div', { 'data-test-send': 'refused' }, h('p', { class: 'bad-text' }, `Not sent: ${err.message}`), problemList(err)));
      return;
    } finally {
      this.button.disabled = false;
    }
    const state = h('span', { class: 'muted small', 'data-delivery-state': 'waiting' }, this.canFollow ? 'waiting for its first attempt…' : '');
    const open = h('button', { type: 'button', class: 'button small', 'data-action': 'open-test-delivery', hidden: true, onclick: () => this.onOpenDelivery(sent.delivery_id) }, 'Open the delivery');
    replace(
      this.out,
      h(
        'div',
        { 'data-test-send': 'sent', 'data-delivery-id': sent.delivery_id, 'data-event-id': sent.event_id },
        h('p', { class: 'ok-text' }, `Sent ${sent.event_type ?? 'an event'} as `, h('span', { class: 'mono' }, sent.event_id), '.'),
        h('p', { class: 'outcome-line' }, 'Delivery ', h('span', { class: 'mono', 'data-test-delivery': '' }, sent.delivery_id), state, open),
      ),
    );
    if (this.canFollow) await this.follow(send, sent.delivery_id, state, open);
  }

  /** Reads the destination's latest deliveries until this one's attempt ends (or the panel moves on). */
  async follow(send, deliveryId, state, open) {
    for (let i = 0; i < FOLLOW_TRIES && send === this.sends && this.element.isConnected; i++) {
      await new Promise((r) => setTimeout(r, 1000));
      let row;
      try {
        const answer = await this.api.get('/deliveries', { destination_id: this.destination.id, limit: 50 });
        row = answer.deliveries.find((d) => d.id === deliveryId);
      } catch (err) {
        replace(state, `cannot be followed: ${refusalText(err)}`);
        return;
      }
      if (!row) continue;
      replace(state, statusPill(row.status), ' ', codePill(row.response_code));
      state.dataset.deliveryState = row.status;
      open.hidden = false;
      if (FINAL.has(row.status)) return;
    }
  }
}
