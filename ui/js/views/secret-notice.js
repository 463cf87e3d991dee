// A signing secret, shown once: in a modal dialog with a read-only field to copy it from. The API
// shows a secret only in the answer that made it; once the dialog closes the page keeps nothing
// of it (the field is emptied and the dialog removed).

import { h } from '../dom.js';

const FIELD_ID = 'signing-secret-once';

/** Shows `secret` until the dialog is closed; resolves then. */
export function showSecretOnce({ title, note, secret }) {
  const input = h('input', { id: FIELD_ID, type: 'text', readonly: true, class: 'mono secret-field', spellcheck: 'false', autocomplete: 'off', 'data-secret': '', 'aria-describedby': `${FIELD_ID}-note`, onfocus: () => input.select() });
  input.value = secret;
  const copied = h('span', { class: 'small', role: 'status' });
  const copy = h(
    'button',
    {
      type: 'button',
      class: 'button',
      'data-action': 'copy-secret',
      onclick: async () => {
        input.focus();
        try {
          await navigator.clipboard.writeText(input.value);
          copied.textContent = 'Copied.';
        } catch {
          copied.textContent = 'Selected: press Ctrl+C (⌘C) to copy.';
        }
      },
    },
    'Copy',
  );
  const dialog = h(
    'dialog',
    { class: 'secret-dialog', 'aria-labelledby': `${FIELD_ID}-title`, 'data-dialog': 'secret' },
    h('h2', { id: `${FIELD_ID}-title` }, title),
    h('p', { id: `${FIELD_ID}-note`, class: 'small' }, note, ' It is shown only now: store it where your receiver reads it before closing this.'),
    h('label', { for: FIELD_ID, class: 'field-label' }, 'Signing secret'),
    h('div', { class: 'secret-row' }, input, copy),
    copied,
    h('div', { class: 'toolbar end' }, h('button', { type: 'button', class: 'button primary', 'data-action': 'close-secret', onclick: () => dialog.close() }, 'Done')),
  );
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => {
      input.value = '';
      dialog.remove();
      resolve();
    });
    document.body.append(dialog);
    dialog.showModal();
    input.focus();
  });
}
