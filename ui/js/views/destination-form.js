// Creating a destination, or changing one: its type (on creation, from GET /v1/destination-types),
// name, URL, its type's config as fields built from the type's schema, and the event types it
// receives. A creation is POST …/destinations (its answer carries the signing secret, shown once
// by the caller); a change is a JSON merge patch of the members that changed, under If-Match.

import { ApiError } from '../api.js';
import { h, replace } from '../dom.js';
import { typeLabel } from './destinations.js';
import { EventTypePicker } from './event-type-picker.js';
import { described, fieldErrors, problemList } from './parts.js';

const ids = { name: 'destination-form-name', url: 'destination-form-url', type: 'destination-form-type' };

const typesOf = (schema) => (Array.isArray(schema.type) ? schema.type : [schema.type]);

/** An input for one config member from its schema: a checkbox, a select of its values, a number or a text. */
function configInput(name, schema, value) {
  const id = `destination-form-config-${name}`;
  const types = typesOf(schema);
  const common = { id, name: `config.${name}`, 'data-config-input': name, 'aria-describedby': schema.description ? `${id}-note` : null };
  if (types.includes('boolean')) return h('input', { ...common, type: 'checkbox', checked: value === undefined ? schema.default === true : value === true });
  if (Array.isArray(schema.enum)) {
    const select = h('select', common, schema.enum.map((v) => h('option', { value: v === null ? '' : String(v) }, v === null ? 'none' : String(v))));
    select.value = value === undefined || value === null ? (schema.default ?? (schema.enum.includes(null) ? '' : String(schema.enum[0]))) : String(value);
    return select;
  }
  const numeric = types.includes('integer') || types.includes('number');
  const input = h('input', { ...common, type: numeric ? 'number' : 'text', spellcheck: 'false', autocomplete: 'off', step: types.includes('integer') ? '1' : null, minlength: schema.minLength, maxlength: schema.maxLength, placeholder: schema.default === undefined ? null : String(schema.default) });
  input.value = value === undefined || value === null ? '' : typeof value === 'string' || typeof value === 'number' ? String(value) : JSON.stringify(value);
  return input;
}

/** A config member's value as the form holds it; undefined: left out of the config. */
function configValueOf(input, schema, required, before) {
  const types = typesOf(schema);
  if (input.type === 'checkbox') return input.checked || before !== undefined || schema.default === undefined ? input.checked : undefined;
  const text = input.value;
  if (text === '') return required && types.includes('string') ? '' : before !== undefined && types.includes('null') ? null : undefined;
  if (input.type === 'number') return Number(text);
  return text;
}

export class DestinationForm {
  /**
   * `destination` with its `etag`: the one to change (null: a new one); `types`: the destination
   * types by name (a promise); `catalog`: the event types or the error reading them; `onDone(destination,
   * etag, secret)` once saved (`secret` only on creation); `onCancel()`.
   */
  constructor(api, { destination = null, etag = null, types, catalog, onDone, onCancel }) {
    this.api = api;
    this.destination = destination;
    this.etag = etag;
    this.onDone = onDone;
    this.onCancel = onCancel;
    this.element = h('div', { class: 'destination-form-wrap', 'data-form': destination ? 'edit-destination' : 'new-destination' }, h('p', { class: 'muted' }, 'Loading…'));
    types.then((catalogue) => this.render(catalogue, catalog));
  }

  render(typeCatalog, catalog) {
    const d = this.destination;
    this.typeCatalog = typeCatalog.size > 0 ? typeCatalog : new Map([['webhook', { type: 'webhook', title: 'Webhook', config_schema: null, url_example: '' }]]);
    this.name = h('input', { id: ids.name, name: 'name', type: 'text', required: true, maxlength: 200, autocomplete: 'off' });
    this.name.value = d?.name ?? '';
    this.url = h('input', { id: ids.url, name: 'url', type: 'text', inputmode: 'url', required: true, spellcheck: 'false', autocomplete: 'off', class: 'mono' });
    this.url.value = d?.url ?? '';
    this.type = h(
      'select',
      { id: ids.type, name: 'type', onchange: () => this.typeChanged() },
      [...this.typeCatalog.values()].map((t) => h('option', { value: t.type }, `${t.title} (${t.type})`)),
    );
    this.type.value = d?.type ?? (this.typeCatalog.has('webhook') ? 'webhook' : this.type.options[0]?.value);
    this.typeNote = h('p', { class: 'muted small hint' });
    this.config = h('div', { class: 'config-inputs' });
    this.picker = new EventTypePicker({ catalog, chosen: d ? d.event_types : null });
    this.out = h('div', { class: 'save-result', 'data-result': 'destination-form', role: 'alert' });
    this.submit = h('button', { type: 'submit', class: 'button primary', 'data-action': d ? 'save-destination' : 'create-destination' }, d ? 'Save changes' : 'Create destination');
    const form = h(
      'form',
      {
        class: 'destination-form',
        novalidate: true,
        onsubmit: (e) => {
          e.preventDefault();
          this.save();
        },
      },
      h('header', { class: 'detail-head' }, h('div', {}, h('div', { class: 'eyebrow' }, d ? 'Change destination' : 'New destination'), h('h2', {}, d ? d.name : 'Where deliveries go'))),
      d
        ? h('div', { class: 'form-row' }, h('span', { class: 'field-label' }, 'Type'), typeLabel(d.type ?? 'webhook', this.typeCatalog.get(d.type ?? 'webhook')))
        : h('div', { class: 'form-row' }, h('label', { for: ids.type, class: 'field-label' }, 'Type'), this.type, this.typeNote),
      h('div', { class: 'form-row' }, h('label', { for: ids.name, class: 'field-label' }, 'Name'), this.name),
      h('div', { class: 'form-row' }, h('label', { for: ids.url, class: 'field-label' }, 'URL'), this.url),
      this.config,
      this.picker.element,
      this.out,
      h('div', { class: 'toolbar' }, this.submit, h('button', { type: 'button', class: 'button ghost', 'data-action': 'cancel-destination-form', onclick: () => this.onCancel() }, 'Cancel')),
    );
    replace(this.element, form);
    this.typeChanged();
    queueMicrotask(() => this.name.focus());
  }

  /** The type chosen: its URL example, and its config's fields. */
  typeChanged() {
    const type = this.destination?.type ?? this.type.value;
    const info = this.typeCatalog.get(type);
    this.typeNote.textContent = info?.description ?? '';
    this.url.placeholder = info?.url_example ?? '';
    const schema = info?.config_schema;
    this.configSchema = schema ?? null;
    this.configInputs = new Map();
    if (!schema) {
      replace(this.config);
      return;
    }
    const required = new Set(schema.required ?? []);
    const values = this.destination?.config ?? {};
    replace(
      this.config,
      h(
        'fieldset',
        { class: 'config-set' },
        h('legend', { class: 'field-label' }, `Config · ${info.title}`),
        Object.entries(schema.properties ?? {}).map(([name, prop]) => {
          const input = configInput(name, prop, values[name]);
          this.configInputs.set(name, input);
          const label = h('label', { for: input.id, class: 'mono strong' }, name, required.has(name) ? h('span', { class: 'muted small' }, ' required') : null);
          const note = prop.description ? h('p', { id: `${input.id}-note`, class: 'muted small config-note' }, described(prop.description)) : null;
          return h('div', { class: `config-input ${input.type === 'checkbox' ? 'inline' : ''}`, 'data-config-field-input': name }, input.type === 'checkbox' ? [input, label] : [label, input], note);
        }),
      ),
    );
  }

  /** The config the fields say, or null for a type that takes none. */
  configValue() {
    if (!this.configSchema) return null;
    const required = new Set(this.configSchema.required ?? []);
    const before = this.destination?.config ?? {};
    const config = {};
    for (const [name, input] of this.configInputs) {
      const value = configValueOf(input, this.configSchema.properties[name], required.has(name), before[name]);
      if (value !== undefined) config[name] = value;
    }
    return config;
  }

  /** What to send: the whole destination on creation, the members that changed on a change. */
  body(eventTypes) {
    const config = this.configValue();
    const name = this.name.value.trim();
    const url = this.url.value.trim();
    const d = this.destination;
    if (!d) return { name, type: this.type.value, url, ...(config === null ? {} : { config }), event_types: eventTypes };
    const changed = {};
    if (name !== d.name) changed.name = name;
    if (url !== d.url) changed.url = url;
    if (config !== null && JSON.stringify(config) !== JSON.stringify(d.config ?? {})) changed.config = config;
    if (JSON.stringify(eventTypes) !== JSON.stringify(d.event_types ?? null)) changed.event_types = eventTypes;
    return changed;
  }

  /** Marks the inputs the API named in its refusal. */
  markInvalid(err) {
    for (const input of this.element.querySelectorAll('[aria-invalid]')) input.removeAttribute('aria-invalid');
    for (const e of fieldErrors(err)) {
      const at = String(e.field ?? '').replace(/\[\d+\]$/, '');
      const input = at === 'event_types' ? this.picker.element : this.element.querySelector(`[name="${CSS.escape(at)}"]`);
      input?.setAttribute('aria-invalid', 'true');
    }
  }

  async save() {
    const eventTypes = this.picker.value();
    if (eventTypes === undefined) return;
    const missing = [this.name, this.url].find((i) => i.value.trim() === '');
    if (missing) {
      replace(this.out, h('p', { class: 'bad-text', 'data-save': 'refused' }, `Give the destination ${missing === this.name ? 'a name' : 'a URL'}.`));
      missing.setAttribute('aria-invalid', 'true');
      missing.focus();
      return;
    }
    const body = this.body(eventTypes);
    const d = this.destination;
    if (d && Object.keys(body).length === 0) {
      replace(this.out, h('p', { class: 'muted', 'data-save': 'unchanged' }, 'Nothing changed.'));
      return;
    }
    this.submit.disabled = true;
    replace(this.out, h('p', { class: 'muted' }, 'Saving…'));
    try {
      if (d) {
        const { body: saved, etag } = await this.api.patch(`/destinations/${encodeURIComponent(d.id)}`, body, { ifMatch: this.etag });
        this.onDone(saved, etag, null);
      } else {
        const { body: created, etag } = await this.api.postTagged('/destinations', body);
        const { signing_secret: secret, ...destination } = created;
        this.onDone(destination, etag, secret);
      }
    } catch (err) {
      this.markInvalid(err);
      const conflict = err instanceof ApiError && err.status === 412;
      replace(this.out, h('div', { 'data-save': conflict ? 'conflict' : 'refused' }, h('p', { class: 'bad-text' }, conflict ? 'Not saved: the destination changed since it was opened. Cancel and open it again.' : `Not saved: ${err.message}`), problemList(err)));
    } finally {
      this.submit.disabled = false;
    }
  }
}
