// One destination: its type and what counts as delivered for it, its address, its config as its
// type's schema describes it, its masked credentials, and its transformation, which can be tried
// on a saved payload or a typed body (POST …/transformation/test, nothing sent or saved) and then
// saved (PATCH, a JSON merge patch under If-Match).

import { ApiError } from '../api.js';
import { h, replace } from '../dom.js';
import { dateTime } from '../format.js';
import { destinationStatusPill, typeLabel } from './destinations.js';

const CODE_ID = 'destination-transformation';
const PAYLOAD_ID = 'transformation-payload';
const BODY_ID = 'transformation-body';
const ERRORS_ID = 'transformation-errors';
/** The option of the payload select that runs on the body typed below. */
const TYPED = '';

const PLACEHOLDER = 'function transform(event) {\n  // event: { id, delivery_id, destination_id, attempt, content_type, received_at, body }\n  return { body: event.body };\n}';

function section(title, ...body) {
  return h('section', { class: 'detail-section' }, h('h3', {}, title), ...body);
}

function field(label, ...value) {
  return h('div', { class: 'field' }, h('dt', {}, label), h('dd', {}, ...value));
}

const none = (text = '—') => h('span', { class: 'muted' }, text);

/** A schema's description, its `backticked` parts as code: text nodes only. */
function described(text) {
  return String(text)
    .split('`')
    .map((part, i) => (i % 2 === 1 ? h('code', {}, part) : part));
}

/** Text that is JSON, indented; anything else as it is. */
function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

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

export class DestinationDetail {
  constructor(api, { types, onSaved }) {
    this.api = api;
    this.types = types;
    this.onSaved = onSaved;
    this.element = h('section', { class: 'card detail', 'data-panel': 'destination' });
    this.empty();
  }

  empty() {
    this.destination = null;
    replace(this.element, h('div', { class: 'detail-empty' }, h('h2', {}, 'Destination'), h('p', { class: 'muted' }, 'Select a destination in the list to see its type, address and config, and to write and try its transformation before saving it.')));
  }

  /** Whether the code in the editor differs from the saved transformation. */
  get dirty() {
    return Boolean(this.code && this.destination && this.code.value !== (this.destination.transformation ?? ''));
  }

  /** Whether another destination may replace this one: asks first when the editor holds unsaved code. */
  mayLeave(id) {
    return !this.dirty || this.destination.id === id || window.confirm(`Discard the unsaved transformation of ${this.destination.name}?`);
  }

  /** Opens a destination; `keepCode` stays in the editor (a reload after someone else's change). */
  async open(id, { keepCode } = {}) {
    // the same destination again: read anew, the code being written stays
    if (keepCode === undefined && this.dirty && this.destination.id === id) keepCode = this.code.value;
    this.openedId = id;
    replace(this.element, h('p', { class: 'muted' }, 'Loading…'));
    let got;
    try {
      got = await this.api.getTagged(`/destinations/${encodeURIComponent(id)}`);
    } catch (err) {
      if (this.openedId === id) replace(this.element, h('p', { class: 'form-error' }, `Destination ${id}: ${err.message}`));
      return;
    }
    const [catalog, payloads] = await Promise.all([this.types, this.api.get('/saved-payloads', { limit: 200 }).then((a) => a.saved_payloads, (err) => err)]);
    if (this.openedId !== id) return;
    this.destination = got.body;
    this.etag = got.etag;
    this.render(got.body, catalog.get(got.body.type ?? 'webhook'), payloads, keepCode);
  }

  render(d, info, payloads, keepCode) {
    const type = d.type ?? 'webhook';
    replace(
      this.element,
      h(
        'header',
        { class: 'detail-head' },
        h('div', {}, h('div', { class: 'eyebrow' }, 'Destination'), h('h2', { 'data-destination-name': '' }, d.name), h('span', { class: 'mono muted small', title: d.id }, d.id)),
      ),
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
        field('Event types', d.event_types ? h('span', { class: 'mono' }, d.event_types.join(', ')) : none('all of its flows')),
        field('Filter', d.filter ? `${d.filter.length} rule${d.filter.length === 1 ? '' : 's'}` : none('none')),
        info ? h('div', { class: 'field wide' }, h('dt', {}, 'Headers travel in'), h('dd', {}, info.headers_in)) : null,
      ),
      section(info?.title ? `Config · ${info.title}` : 'Config', configFields(d.config, info)),
      this.transformationSection(d, payloads, keepCode),
    );
  }

  transformationSection(d, payloads, keepCode) {
    this.code = h('textarea', {
      id: CODE_ID,
      name: 'transformation',
      class: 'code-editor',
      rows: 12,
      spellcheck: 'false',
      autocomplete: 'off',
      autocapitalize: 'off',
      wrap: 'off',
      placeholder: PLACEHOLDER,
      'aria-describedby': `${CODE_ID}-note ${ERRORS_ID}`,
      oninput: () => this.edited({ typed: true }),
      onkeydown: (e) => {
        if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
          e.preventDefault();
          this.test();
        }
      },
    });
    this.code.value = keepCode ?? d.transformation ?? '';
    this.state = h('span', { class: 'muted small', 'data-state': '', role: 'status' });
    this.saveOut = h('div', { id: ERRORS_ID, class: 'save-result', 'data-result': 'transformation-save', role: 'alert' });
    this.testOut = h('div', { class: 'transform-result', 'data-result': 'transformation-test', role: 'status' });
    const list = payloads instanceof Error ? [] : payloads;
    this.payload = h(
      'select',
      { id: PAYLOAD_ID, name: 'payload', onchange: () => this.bodyInUse() },
      list.map((p) => h('option', { value: p.id }, p.name)),
      h('option', { value: TYPED }, 'The body typed below'),
    );
    this.payload.value = list.length > 0 ? list[0].id : TYPED;
    this.body = h('textarea', {
      id: BODY_ID,
      name: 'body',
      class: 'code-editor small-editor',
      rows: 5,
      spellcheck: 'false',
      autocomplete: 'off',
      wrap: 'off',
      placeholder: '{ "type": "order.created", "order": 1042 }',
      // typing a body means running on it
      oninput: () => {
        this.payload.value = TYPED;
        this.bodyInUse();
      },
    });
    this.bodyNote = h('span', { class: 'muted small' });
    this.testButton = h('button', { type: 'button', class: 'button', 'data-action': 'test-transformation', title: 'Run the code in the editor on the payload (Ctrl+Enter); nothing is sent or saved', onclick: () => this.test() }, 'Test');
    this.saveButton = h('button', { type: 'button', class: 'button primary', 'data-action': 'save-transformation', title: 'Save the code in the editor as this destination\'s transformation (empty: none)', onclick: () => this.save() }, 'Save transformation');
    this.revertButton = h('button', { type: 'button', class: 'button ghost', 'data-action': 'revert-transformation', title: 'Put the saved transformation back in the editor', onclick: () => this.revert() }, 'Revert');
    const payloadNote = payloads instanceof Error ? h('p', { class: 'muted small' }, `Saved payloads: ${payloads instanceof ApiError && payloads.status === 403 ? 'this key may not read them' : payloads.message}; type a body instead.`) : list.length === 0 ? h('p', { class: 'muted small' }, 'No saved payload yet: type a body.') : null;
    this.edited();
    this.bodyInUse();
    return h(
      'section',
      { class: 'detail-section transformation' },
      h('h3', {}, 'Transformation'),
      h('label', { for: CODE_ID, class: 'field-label' }, 'Code'),
      h('p', { id: `${CODE_ID}-note`, class: 'muted small hint' }, 'JavaScript defining ', h('code', {}, 'function transform(event)'), ', run in a sandbox before every attempt. Return ', h('code', {}, 'null'), ' to drop the delivery, or ', h('code', {}, '{ body, headers?, method?, path? }'), '. Empty: bodies are sent as received.'),
      this.code,
      h(
        'div',
        { class: 'try-row' },
        h('div', { class: 'try-payload' }, h('label', { for: PAYLOAD_ID, class: 'field-label' }, 'Run on'), this.payload, payloadNote),
        h('div', { class: 'try-body' }, h('label', { for: BODY_ID, class: 'field-label' }, 'Body (JSON, or text) ', this.bodyNote), this.body),
      ),
      h('div', { class: 'toolbar' }, this.testButton, this.saveButton, this.revertButton, this.state),
      this.saveOut,
      this.testOut,
    );
  }

  /** Says whether a run takes the typed body or the saved payload chosen. */
  bodyInUse() {
    const used = this.payload.value === TYPED;
    this.body.classList.toggle('unused', !used);
    this.bodyNote.textContent = used ? '' : '· not used while a saved payload is chosen';
  }

  /** Says whether the editor holds what is saved. */
  edited({ typed = false } = {}) {
    const saved = this.destination?.transformation ?? '';
    const dirty = this.code.value !== saved;
    this.state.dataset.state = dirty ? 'unsaved' : 'saved';
    this.state.textContent = dirty ? 'Unsaved changes' : saved === '' ? 'No transformation saved: bodies are sent as received' : 'Saved';
    this.state.className = dirty ? 'small warn-text' : 'muted small';
    this.revertButton.disabled = !dirty;
    // a result shown is of code the editor no longer holds
    if (typed && this.testOut.hasChildNodes()) this.testOut.classList.add('stale');
  }

  revert() {
    this.code.value = this.destination?.transformation ?? '';
    this.code.removeAttribute('aria-invalid');
    replace(this.saveOut);
    this.edited();
    this.code.focus();
  }

  /** Runs the code in the editor (or, with the editor empty, no code) on the chosen payload. */
  async test() {
    const d = this.destination;
    if (!d) return;
    const code = this.code.value;
    const request = {};
    let on;
    if (this.payload.value !== TYPED) {
      request.payload_id = this.payload.value;
      on = `saved payload “${this.payload.selectedOptions[0]?.textContent ?? this.payload.value}”`;
    } else {
      const text = this.body.value;
      if (text.trim() === '') {
        replace(this.testOut, h('p', { class: 'bad-text', 'data-outcome': 'error' }, 'Type a body to run on, or choose a saved payload.'));
        this.testOut.classList.remove('stale');
        this.body.focus();
        return;
      }
      try {
        request.body = JSON.parse(text);
        on = 'the JSON body typed';
      } catch {
        request.body = text;
        on = 'the body typed, as text (it is not JSON)';
      }
    }
    if (code.trim() !== '') request.transformation = code;
    else if (d.transformation) {
      replace(this.testOut, h('p', { class: 'muted', 'data-outcome': 'none' }, 'The editor is empty: without a transformation a delivery sends its body as received. Save to remove the saved transformation.'));
      this.testOut.classList.remove('stale');
      return;
    }
    this.testButton.disabled = true;
    replace(this.testOut, h('p', { class: 'muted' }, 'Running…'));
    this.testOut.classList.remove('stale');
    try {
      const result = await this.api.post(`/destinations/${encodeURIComponent(d.id)}/transformation/test`, request);
      this.showTest(result, { on, code: code.trim() === '' ? 'no transformation' : code === (d.transformation ?? '') ? 'the saved code' : 'the code in the editor (not saved)' });
    } catch (err) {
      replace(this.testOut, h('div', { 'data-outcome': 'error' }, h('p', { class: 'bad-text' }, `Test refused: ${err.message}`), problemList(err)));
    } finally {
      this.testButton.disabled = false;
    }
  }

  showTest(r, { on, code }) {
    const cls = r.outcome === 'send' ? 'pill-ok' : r.outcome === 'drop' ? 'pill-warn' : 'pill-bad';
    const meaning = r.outcome === 'send' ? 'an attempt would send this' : r.outcome === 'drop' ? 'the transformation returned null: nothing would be sent, the attempt is recorded as dropped' : 'the attempt would fail, and be retried as any failure';
    const headers = Object.entries(r.headers ?? {});
    replace(
      this.testOut,
      h(
        'div',
        { 'data-outcome': r.outcome },
        h('div', { class: 'outcome-line' }, h('span', { class: `pill ${cls}`, 'data-test': 'outcome' }, r.outcome), h('span', {}, meaning), h('span', { class: 'muted small push', 'data-test': 'cpu' }, `${r.cpu_ms} ms CPU`)),
        h('p', { class: 'muted small' }, `Ran ${code} on ${on}.`),
        r.error ? h('pre', { class: 'body error-body', 'data-test': 'error' }, r.error) : null,
        r.outcome === 'send'
          ? [
              h(
                'dl',
                { class: 'fields compact' },
                field('Method', r.method ? h('span', { class: 'method', 'data-test': 'method' }, r.method) : none('as configured')),
                field('Path', r.path ? h('span', { class: 'mono', 'data-test': 'path' }, r.path) : none('the URL\'s')),
                field('Content type', r.content_type ? h('span', { class: 'mono', 'data-test': 'content-type' }, r.content_type) : none('as received')),
                h('div', { class: 'field wide' }, h('dt', {}, 'SHA-256'), h('dd', { class: 'mono hash', 'data-test': 'sha256', title: 'what the attempt row and its evidence leaf carry' }, r.body_sha256 ?? '—')),
              ),
              h('div', { class: 'field-label' }, 'Headers added'),
              headers.length === 0
                ? h('p', { class: 'muted small', 'data-test': 'headers' }, 'none')
                : h('table', { class: 'table compact', 'data-test': 'headers' }, h('tbody', {}, headers.map(([name, value]) => h('tr', {}, h('td', { class: 'mono' }, name), h('td', { class: 'mono' }, value))))),
              h('div', { class: 'field-label' }, 'Body'),
              h('pre', { class: 'body', 'data-test': 'body' }, r.body === undefined || r.body === '' ? none('(empty)') : pretty(r.body)),
            ]
          : null,
      ),
    );
  }

  /** Saves the editor's code (empty: no transformation), only over the version shown. */
  async save() {
    const d = this.destination;
    if (!d) return;
    const code = this.code.value;
    const value = code.trim() === '' ? null : code;
    this.saveButton.disabled = true;
    replace(this.saveOut, h('p', { class: 'muted' }, 'Saving…'));
    try {
      const { body, etag } = await this.api.patch(`/destinations/${encodeURIComponent(d.id)}`, { transformation: value }, { ifMatch: this.etag });
      this.destination = body;
      if (etag) this.etag = etag;
      if (value === null) this.code.value = '';
      this.code.removeAttribute('aria-invalid');
      replace(this.saveOut, h('p', { class: 'ok-text', 'data-save': 'saved' }, value === null ? 'Saved: no transformation, bodies are sent as received.' : `Saved at ${dateTime(body.updated_at).slice(11)}: deliveries from now on run it.`));
      this.edited();
      this.onSaved?.(body);
    } catch (err) {
      if (err instanceof ApiError && err.status === 412) {
        const reload = h('button', { type: 'button', class: 'link', 'data-action': 'reload-destination', onclick: () => this.open(d.id, { keepCode: this.code.value }) }, 'Load the current version');
        replace(this.saveOut, h('div', { 'data-save': 'conflict' }, h('p', { class: 'bad-text' }, 'Not saved: the destination changed since it was opened. '), h('p', {}, reload, ' (your code stays in the editor), then save again.')));
      } else {
        if (err instanceof ApiError && err.problem?.errors?.some((e) => e.field === 'transformation')) this.code.setAttribute('aria-invalid', 'true');
        replace(this.saveOut, h('div', { 'data-save': 'refused' }, h('p', { class: 'bad-text' }, `Not saved: ${err.message}`), problemList(err)));
      }
    } finally {
      this.saveButton.disabled = false;
    }
  }
}

/** The API's validation errors, one per field. */
function problemList(err) {
  const errors = err instanceof ApiError && Array.isArray(err.problem?.errors) ? err.problem.errors : [];
  if (errors.length === 0) return null;
  return h('ul', { class: 'field-errors' }, errors.map((e) => h('li', { 'data-field': e.field ?? '' }, h('span', { class: 'mono strong' }, e.field ?? ''), ' ', String(e.message ?? ''))));
}
