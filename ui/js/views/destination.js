// One destination: its type and what counts as delivered for it, its address, its config as its
// type's schema describes it, its masked credentials, the event types it receives, and its
// transformation (transformation-editor.js); and, as the session's scopes allow, changing,
// pausing, rotating and deleting it, and sending it a test event.

import { h, replace } from '../dom.js';
import { dateTime } from '../format.js';
import { destinationStatusPill, typeLabel } from './destinations.js';
import { eventTypeCatalog } from '../catalog.js';
import { DestinationActions } from './destination-actions.js';
import { DestinationForm } from './destination-form.js';
import { described, field, none, section } from './parts.js';
import { showSecretOnce } from './secret-notice.js';
import { TestSend } from './test-send.js';
import { TransformationEditor } from './transformation-editor.js';

/** Credentials as the API shows them: the secret part already masked by the service. */
function authText(auth) {
  if (!auth) return none('none');
  if (auth.type === 'basic') return h('span', { 'data-auth': 'basic' }, 'basic · user ', h('span', { class: 'mono' }, auth.username), ' · password ', h('span', { class: 'mono' }, auth.password));
  if (auth.type === 'bearer') return h('span', { 'data-auth': 'bearer' }, 'bearer · token ', h('span', { class: 'mono' }, auth.token));
  if (auth.type === 'header') return h('span', { 'data-auth': 'header' }, 'header · ', h('span', { class: 'mono' }, `${auth.name}: ${auth.value}`));
  return h('span', { class: 'mono' }, JSON.stringify(auth));
}

/** A config value, read-only: strings as they are, anything else as JSON; absent ones with the schema's default. */
function configValue(value, schema) {
  if (value === undefined) return schema && 'default' in schema ? none(`not set (default ${JSON.stringify(schema.default)})`) : none('not set');
  if (value === null) return none('null');
  if (typeof value === 'string') return value === '' ? h('span', { class: 'config-value mono' }, '""') : h('span', { class: 'config-value mono' }, value);
  return h('span', { class: 'config-value mono' }, JSON.stringify(value));
}

/** The config as labelled fields: every property of the type's schema with its description, then any member the schema does not name. */
function configFields(config, info) {
  const schema = info?.config_schema;
  if (!schema) {
    if (config === null || config === undefined) return h('p', { class: 'muted', 'data-config': 'none' }, `${info?.title ?? 'This type'} takes no config.`);
    return h('pre', { class: 'body' }, JSON.stringify(config, null, 2));
  }
  const properties = schema.properties ?? {};
  const required = new Set(schema.required ?? []);
  const values = config ?? {};
  const extra = Object.keys(values).filter((k) => !(k in properties));
  return h(
    'dl',
    { class: 'config-fields', 'data-config': 'fields' },
    Object.entries(properties).map(([name, prop]) =>
      h(
        'div',
        { class: 'config-field', 'data-config-field': name },
        h('dt', {}, h('span', { class: 'mono strong' }, name), required.has(name) ? h('span', { class: 'muted small' }, ' required') : null),
        h('dd', {}, configValue(values[name], prop), prop.description ? h('p', { class: 'muted small config-note' }, described(prop.description)) : null),
      ),
    ),
    extra.map((name) => h('div', { class: 'config-field', 'data-config-field': name }, h('dt', {}, h('span', { class: 'mono strong' }, name)), h('dd', {}, configValue(values[name]), h('p', { class: 'muted small config-note' }, 'not in the type\'s schema')))),
  );
}

/** The event types a destination receives, each with its description from the catalogue. */
function subscriptionList(chosen, catalog) {
  if (chosen === null) return h('p', { 'data-subscriptions': 'all' }, 'All event types of its delivery flows.');
  const descriptions = new Map(catalog instanceof Error ? [] : catalog.map((t) => [t.name, t.description]));
  return h('ul', { class: 'subscriptions', 'data-subscriptions': 'chosen' }, chosen.map((name) => h('li', { 'data-subscribed': name }, h('span', { class: 'mono strong' }, name), descriptions.get(name) ? h('span', { class: 'muted small' }, ' ', described(descriptions.get(name))) : null)));
}

export class DestinationDetail {
  /**
   * `types`: the destination types by name (a promise); `can(scope)`: whether the session holds a
   * scope (what it may not do is not offered); `onSaved(destination)` after a change or creation,
   * `onDeleted(id)`, `onOpenDelivery(id)` for a test event's delivery.
   */
  constructor(api, { types, can = () => true, onSaved, onDeleted, onOpenDelivery }) {
    this.api = api;
    this.types = types;
    this.can = can;
    this.onSaved = onSaved;
    this.onDeleted = onDeleted;
    this.onOpenDelivery = onOpenDelivery;
    this.element = h('section', { class: 'card detail', 'data-panel': 'destination' });
    this.empty();
  }

  empty() {
    this.destination = null;
    this.transformation = null;
    replace(this.element, h('div', { class: 'detail-empty' }, h('h2', {}, 'Destination'), h('p', { class: 'muted' }, 'Select a destination in the list to see its type, address and config, and to write and try its transformation before saving it.')));
  }

  /** Whether the code in the editor differs from the saved transformation. */
  get dirty() {
    return Boolean(this.transformation?.dirty);
  }

  /** Whether another destination may replace this one: asks first when the editor holds unsaved code. */
  mayLeave(id) {
    return !this.dirty || this.destination.id === id || window.confirm(`Discard the unsaved transformation of ${this.destination.name}?`);
  }

  /** The event types (or the error reading them), when the session may read them. */
  eventTypes() {
    return this.can('read:event-types') ? eventTypeCatalog(this.api) : Promise.resolve(new Error('this session may not read the event types'));
  }

  /** Opens a destination; `keepCode` stays in the editor (a reload after someone else's change); `note` is said above it. */
  async open(id, { keepCode, note } = {}) {
    // the same destination again: read anew, the code being written stays
    if (keepCode === undefined && this.dirty && this.destination.id === id) keepCode = this.transformation.code.value;
    this.openedId = id;
    replace(this.element, h('p', { class: 'muted' }, 'Loading…'));
    let got;
    try {
      got = await this.api.getTagged(`/destinations/${encodeURIComponent(id)}`);
    } catch (err) {
      if (this.openedId === id) replace(this.element, h('p', { class: 'form-error' }, `Destination ${id}: ${err.message}`));
      return;
    }
    const payloads = this.can('read:payloads') ? this.api.get('/saved-payloads', { limit: 200 }).then((a) => a.saved_payloads, (err) => err) : new Error('this session may not read them');
    const [catalog, saved, eventTypes] = await Promise.all([this.types, payloads, this.eventTypes()]);
    if (this.openedId !== id) return;
    this.destination = got.body;
    this.etag = got.etag;
    this.render(got.body, catalog.get(got.body.type ?? 'webhook'), saved, { keepCode, eventTypes, note });
  }

  /** The form of a new destination in the panel. */
  async create() {
    if (!this.mayLeave(null)) return;
    this.openedId = null;
    this.destination = null;
    this.transformation = null;
    const form = new DestinationForm(this.api, {
      types: this.types,
      catalog: await this.eventTypes(),
      onCancel: () => this.empty(),
      onDone: async (destination, _etag, secret) => {
        this.onSaved?.(destination);
        await showSecretOnce({ title: `Signing secret of ${destination.name}`, note: 'Every delivery to this destination carries a webhook-signature header made with this secret (Standard Webhooks).', secret });
        await this.open(destination.id, { note: h('p', { class: 'ok-text', 'data-action-result': 'created' }, `Created ${destination.name}.`) });
      },
    });
    replace(this.element, form.element);
  }

  /** The form of the destination shown, filled in. */
  async edit() {
    const d = this.destination;
    const form = new DestinationForm(this.api, {
      destination: d,
      etag: this.etag,
      types: this.types,
      catalog: await this.eventTypes(),
      onCancel: () => this.open(d.id),
      onDone: (saved) => {
        this.onSaved?.(saved);
        this.open(saved.id, { note: h('p', { class: 'ok-text', 'data-action-result': 'saved' }, 'Saved.') });
      },
    });
    replace(this.element, form.element);
  }

  render(d, info, payloads, { keepCode, eventTypes, note } = {}) {
    const type = d.type ?? 'webhook';
    const actions = this.can('write:destinations')
      ? new DestinationActions(this.api, {
          destination: d,
          etagOf: () => this.etag,
          onEdit: () => this.edit(),
          onChanged: (changed, etag, said) => {
            this.destination = changed;
            this.etag = etag;
            this.onSaved?.(changed);
            this.open(changed.id, { note: said });
          },
          onStale: () => this.open(d.id, { note: h('p', { class: 'bad-text', 'data-action-result': 'stale' }, 'The destination changed since it was opened: here it is as it is now; try again.') }),
          onDeleted: (id) => {
            this.empty();
            this.onDeleted?.(id);
          },
        })
      : null;
    if (note && actions) replace(actions.out, note);
    this.transformation = new TransformationEditor(this.api, {
      destination: d,
      etag: this.etag,
      payloads,
      keepCode,
      onSaved: (saved, etag) => {
        this.destination = saved;
        this.etag = etag;
        this.onSaved?.(saved);
      },
      onReload: (code) => this.open(d.id, { keepCode: code }),
    });
    const testSend = this.can('write:events') ? new TestSend(this.api, { destination: d, catalog: eventTypes, payloads, canFollow: this.can('read:deliveries'), onOpenDelivery: (id) => this.onOpenDelivery?.(id) }) : null;
    replace(
      this.element,
      h(
        'header',
        { class: 'detail-head' },
        h('div', {}, h('div', { class: 'eyebrow' }, 'Destination'), h('h2', { 'data-destination-name': '' }, d.name), h('span', { class: 'mono muted small', title: d.id }, d.id)),
        actions?.element,
      ),
      actions ? actions.out : note,
      h(
        'dl',
        { class: 'fields' },
        field('Type', h('span', { 'data-field': 'type' }, typeLabel(type, info))),
        field('Status', destinationStatusPill(d.status), d.disabled_reason ? h('span', { class: 'muted small block' }, d.disabled_reason) : null),
        field('Updated', h('span', { title: d.updated_at }, dateTime(d.updated_at))),
        h('div', { class: 'field wide' }, h('dt', {}, 'URL'), h('dd', { class: 'mono', 'data-field': 'url' }, d.url)),
        h('div', { class: 'field wide' }, h('dt', {}, 'Delivered when'), h('dd', { 'data-field': 'delivered-when' }, info ? info.delivered_when : none('the type is not in GET /v1/destination-types'))),
        field('Auth', h('span', { 'data-field': 'auth' }, authText(d.auth))),
        field('Retry schedule', d.retry_schedule_ms ? h('span', { class: 'mono' }, d.retry_schedule_ms.map((ms) => `${ms} ms`).join(' · ')) : none('the service\'s')),
        field('Rate limit', d.rate_limit_per_s ? `${d.rate_limit_per_s}/s` : none('none')),
        field('Ordered', d.ordered ? 'yes, one at a time' : 'no'),
        field('Filter', d.filter ? `${d.filter.length} rule${d.filter.length === 1 ? '' : 's'}` : none('none')),
        field('Secret', d.previous_secret_expires_at ? `rotated; the previous one signs until ${dateTime(d.previous_secret_expires_at)}` : none('shown once, when made')),
        info ? h('div', { class: 'field wide' }, h('dt', {}, 'Headers travel in'), h('dd', {}, info.headers_in)) : null,
      ),
      section('Subscriptions', subscriptionList(d.event_types, eventTypes)),
      testSend?.element,
      section(info?.title ? `Config · ${info.title}` : 'Config', configFields(d.config, info)),
      this.transformation.element,
    );
  }
}
