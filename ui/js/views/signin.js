// The sign-in card: an API key, kept in this tab's sessionStorage and sent only to this service.

import { h } from '../dom.js';

export function signInView({ onSubmit, error }) {
  const input = h('input', { id: 'api-key', name: 'api-key', type: 'password', autocomplete: 'off', spellcheck: 'false', placeholder: 'hlk_…', required: true, 'aria-describedby': 'signin-note' });
  const status = h('p', { class: 'form-error', role: 'alert' }, error ?? '');
  const button = h('button', { type: 'submit', class: 'button primary wide' }, 'Sign in');
  const form = h(
    'form',
    {
      class: 'signin-card',
      onsubmit: async (e) => {
        e.preventDefault();
        button.disabled = true;
        status.textContent = '';
        try {
          await onSubmit(input.value.trim());
        } catch (err) {
          status.textContent = err.message;
        } finally {
          button.disabled = false;
        }
      },
    },
    h('div', { class: 'brand large' }, h('span', { class: 'brand-mark' }, 'h'), h('span', {}, 'hookline')),
    h('h1', {}, 'Sign in to the dashboard'),
    h('label', { for: 'api-key' }, 'API key'),
    input,
    status,
    button,
    h('p', { id: 'signin-note', class: 'muted small' }, 'The key stays in this browser tab (sessionStorage) and is sent only to this service, as a Bearer token. The dashboard shows the key\'s own tenant, within its scopes.'),
  );
  queueMicrotask(() => input.focus());
  return h('section', { class: 'signin' }, form);
}
