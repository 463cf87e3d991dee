// Which event types a destination receives: all of them (`event_types: null`), or those chosen
// from the catalogue, each shown with its description and, folded, its JSON Schema and example.
// Names the catalogue does not hold (a prefix pattern such as `order.*` set through the API)
// stay listed and chosen until unticked.

import { h, replace } from '../dom.js';
import { exampleOf } from '../catalog.js';
import { described, prettyJson, refusalText } from './parts.js';

let pickers = 0;

export class EventTypePicker {
  /** `catalog`: the event types, or the error reading them; `chosen`: the destination's `event_types`. */
  constructor({ catalog, chosen }) {
    const n = ++pickers;
    this.catalog = catalog instanceof Error ? [] : catalog;
    const known = new Set(this.catalog.map((t) => t.name));
    const others = (chosen ?? []).filter((name) => !known.has(name));
    this.all = h('input', { type: 'radio', name: `event-types-mode-${n}`, value: 'all', id: `event-types-all-${n}`, checked: chosen === null || chosen === undefined, onchange: () => this.modeChanged() });
    this.some = h('input', { type: 'radio', name: `event-types-mode-${n}`, value: 'some', id: `event-types-some-${n}`, checked: Array.isArray(chosen), onchange: () => this.modeChanged() });
    this.boxes = [];
    const box = (name, i) => {
      const input = h('input', { type: 'checkbox', id: `event-type-${n}-${i}`, value: name, checked: (chosen ?? []).includes(name), 'data-event-type': name });
      this.boxes.push(input);
      return input;
    };
    this.message = h('p', { class: 'form-error', role: 'alert' });
    this.list = h(
      'ul',
      { class: 'type-list' },
      this.catalog.map((t, i) =>
        h(
          'li',
          { class: 'type-item', 'data-catalog-type': t.name },
          h('div', { class: 'type-choice' }, box(t.name, i), h('label', { for: `event-type-${n}-${i}`, class: 'mono strong' }, t.name)),
          t.description ? h('p', { class: 'muted small type-description' }, described(t.description)) : null,
          h(
            'details',
            { class: 'type-details' },
            h('summary', {}, 'Schema and example'),
            h('div', { class: 'field-label' }, 'JSON Schema'),
            h('pre', { class: 'body', 'data-schema': t.name }, t.schema ? prettyJson(t.schema) : '(none: any JSON payload)'),
            h('div', { class: 'field-label' }, 'Example'),
            h('pre', { class: 'body', 'data-example': t.name }, prettyJson(exampleOf(t))),
          ),
        ),
      ),
      others.map((name, i) => h('li', { class: 'type-item', 'data-catalog-type': name }, h('div', { class: 'type-choice' }, box(name, this.catalog.length + i), h('label', { for: `event-type-${n}-${this.catalog.length + i}`, class: 'mono strong' }, name)), h('p', { class: 'muted small type-description' }, 'Not in the catalogue: a pattern or a name set through the API.'))),
    );
    const note = catalog instanceof Error ? h('p', { class: 'muted small' }, `The catalogue of event types cannot be read: ${refusalText(catalog)}.`) : this.catalog.length === 0 ? h('p', { class: 'muted small' }, 'The catalogue has no event type yet.') : null;
    this.element = h(
      'fieldset',
      { class: 'event-type-picker', 'data-picker': 'event-types' },
      h('legend', { class: 'field-label' }, 'Event types'),
      h('div', { class: 'choice-row' }, h('span', { class: 'radio' }, this.all, h('label', { for: this.all.id }, 'All event types')), h('span', { class: 'radio' }, this.some, h('label', { for: this.some.id }, 'Only those chosen'))),
      note,
      this.list,
      this.message,
    );
    this.modeChanged();
  }

  modeChanged() {
    const some = this.some.checked;
    this.list.hidden = !some;
    for (const b of this.boxes) b.disabled = !some;
    replace(this.message);
  }

  /** `event_types` as the API takes it (null: all), or undefined with the reason shown when none is chosen. */
  value() {
    if (this.all.checked) return null;
    const chosen = this.boxes.filter((b) => b.checked).map((b) => b.value);
    if (chosen.length === 0) {
      this.message.textContent = 'Choose at least one event type, or All event types.';
      this.boxes[0]?.focus();
      return undefined;
    }
    return chosen;
  }
}
