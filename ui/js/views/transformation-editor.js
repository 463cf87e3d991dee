// A destination's transformation: the code in an editor, tried on a saved payload or a typed body
// (POST …/transformation/test, nothing sent or saved), then saved (PATCH, a JSON merge patch
// under If-Match).

import { ApiError } from '../api.js';
import { h, replace } from '../dom.js';
import { dateTime } from '../format.js';
import { field, none, problemList, refusalText } from './parts.js';

const CODE_ID = 'destination-transformation';
const PAYLOAD_ID = 'transformation-payload';
const BODY_ID = 'transformation-body';
const ERRORS_ID = 'transformation-errors';
/** The option of the payload select that runs on the body typed below. */
const TYPED = '';

const PLACEHOLDER = 'function transform(event) {\n  // event: { id, delivery_id, destination_id, attempt, content_type, received_at, body }\n  return { body: event.body };\n}';

/** Text that is JSON, indented; anything else as it is. */
function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

export class TransformationEditor {
  /**
   * `destination` at version `etag`; `payloads`: the saved payloads, or the error reading them;
   * `keepCode`: code to put in the editor instead of the saved one; `onSaved(destination, etag)`;
   * `onReload(code)`: reads the destination again, the code kept.
   */
  constructor(api, { destination, etag, payloads, keepCode, onSaved, onReload }) {
    this.api = api;
    this.destination = destination;
    this.etag = etag;
    this.onSaved = onSaved;
    this.onReload = onReload;
    this.element = this.render(destination, payloads, keepCode);
  }

  /** Whether the code in the editor differs from the saved transformation. */
  get dirty() {
    return this.code.value !== (this.destination.transformation ?? '');
  }

  render(d, payloads, keepCode) {
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
    const payloadNote = payloads instanceof Error ? h('p', { class: 'muted small' }, `Saved payloads: ${refusalText(payloads)}; type a body instead.`) : list.length === 0 ? h('p', { class: 'muted small' }, 'No saved payload yet: type a body.') : null;
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
      this.onSaved(body, this.etag);
    } catch (err) {
      if (err instanceof ApiError && err.status === 412) {
        const reload = h('button', { type: 'button', class: 'link', 'data-action': 'reload-destination', onclick: () => this.onReload(this.code.value) }, 'Load the current version');
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
