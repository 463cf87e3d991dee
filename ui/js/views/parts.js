// Pieces the detail panels and forms share: a titled section, a labelled value, an absent value,
// a schema's description, and the API's validation errors by field.

import { ApiError } from '../api.js';
import { h } from '../dom.js';

export function section(title, ...body) {
  return h('section', { class: 'detail-section' }, h('h3', {}, title), ...body);
}

export function field(label, ...value) {
  return h('div', { class: 'field' }, h('dt', {}, label), h('dd', {}, ...value));
}

export const none = (text = '—') => h('span', { class: 'muted' }, text);

/** A schema's description, its `backticked` parts as code: text nodes only. */
export function described(text) {
  return String(text)
    .split('`')
    .map((part, i) => (i % 2 === 1 ? h('code', {}, part) : part));
}

/** The API's validation errors of a refusal (`errors`: one per field), or none. */
export function fieldErrors(err) {
  return err instanceof ApiError && Array.isArray(err.problem?.errors) ? err.problem.errors : [];
}

/** The API's validation errors, one per field. */
export function problemList(err) {
  const errors = fieldErrors(err);
  if (errors.length === 0) return null;
  return h('ul', { class: 'field-errors' }, errors.map((e) => h('li', { 'data-field': e.field ?? '' }, h('span', { class: 'mono strong' }, e.field ?? ''), ' ', String(e.message ?? ''))));
}

/** Why a read was refused, in the page's words: a scope the session lacks, or the API's message. */
export function refusalText(err) {
  return err instanceof ApiError && err.status === 403 ? `not allowed here (${err.problem?.required_scope ?? err.slug})` : err.message;
}

/** JSON indented for reading. */
export function prettyJson(value) {
  return JSON.stringify(value, null, 2);
}
