// What can be done to a destination from its panel: change it, pause or resume it (a merge patch
// of `enabled` under If-Match), rotate its signing secret (the new one shown once) and delete it,
// the last two only after a confirmation.

import { ApiError } from '../api.js';
import { h, replace } from '../dom.js';
import { dateTime } from '../format.js';
import { showSecretOnce } from './secret-notice.js';

export class DestinationActions {
  /**
   * `onChanged(destination, etag, note?)` after a pause, resume or rotation (`note`: what to say
   * beside the panel drawn again); `onStale()` when it changed
   * elsewhere (412); `onEdit()`; `onDeleted(id)`. `etagOf()`: the version shown now (a saved
   * transformation moves it).
   */
  constructor(api, { destination, etagOf, onChanged, onStale, onEdit, onDeleted }) {
    this.api = api;
    this.destination = destination;
    this.etagOf = etagOf;
    Object.assign(this, { onChanged, onStale, onEdit, onDeleted });
    const d = destination;
    const paused = d.status !== 'active';
    this.out = h('div', { class: 'action-result', 'data-result': 'destination-action', role: 'status' });
    this.element = h(
      'div',
      { class: 'actions' },
      h('button', { type: 'button', class: 'button', 'data-action': 'edit-destination', onclick: () => this.onEdit() }, 'Edit'),
      h('button', { type: 'button', class: 'button', 'data-action': paused ? 'resume-destination' : 'pause-destination', title: paused ? 'Deliver again, starting with what was held' : 'Hold its deliveries until it is resumed', onclick: (e) => this.setEnabled(paused, e.currentTarget) }, paused ? 'Resume' : 'Pause'),
      h('button', { type: 'button', class: 'button', 'data-action': 'rotate-secret', onclick: () => this.confirmRotate() }, 'Rotate secret'),
      h('button', { type: 'button', class: 'button danger', 'data-action': 'delete-destination', onclick: () => this.confirmDelete() }, 'Delete'),
    );
  }

  path() {
    return `/destinations/${encodeURIComponent(this.destination.id)}`;
  }

  failed(what, err) {
    if (err instanceof ApiError && err.status === 412) {
      this.onStale();
      return;
    }
    replace(this.out, h('p', { class: 'bad-text', 'data-action-result': 'refused' }, `${what}: ${err.message}`));
  }

  async setEnabled(enabled, button) {
    button.disabled = true;
    try {
      const { body, etag } = await this.api.patch(this.path(), { enabled }, { ifMatch: this.etagOf() });
      this.onChanged(body, etag, h('p', { class: 'ok-text', 'data-action-result': enabled ? 'resumed' : 'paused' }, enabled ? 'Resumed: deliveries go out again.' : 'Paused: deliveries are held until it is resumed.'));
    } catch (err) {
      button.disabled = false;
      this.failed(enabled ? 'Not resumed' : 'Not paused', err);
    }
  }

  /** A confirmation in the panel, its first button the one that acts. */
  confirm(kind, text, act, actLabel, danger) {
    const yes = h('button', { type: 'button', class: `button ${danger ? 'danger-solid' : 'primary'}`, 'data-action': `confirm-${kind}`, onclick: () => act(yes) }, actLabel);
    replace(this.out, h('div', { class: 'confirm-box', role: 'group', 'aria-label': actLabel, 'data-confirm': kind }, h('p', {}, text), h('div', { class: 'toolbar' }, yes, h('button', { type: 'button', class: 'button ghost', 'data-action': `cancel-${kind}`, onclick: () => replace(this.out) }, 'Cancel'))));
    yes.focus();
  }

  confirmRotate() {
    this.confirm('rotate', 'Make a new signing secret? For a day the previous secret keeps signing beside it (every delivery carries both signatures), so your receiver can switch without missing one.', (b) => this.rotate(b), 'Rotate the secret', false);
  }

  confirmDelete() {
    this.confirm('delete', `Delete ${this.destination.name}? Its pending deliveries fail and it receives nothing more. This cannot be undone.`, (b) => this.remove(b), 'Delete for good', true);
  }

  async rotate(button) {
    button.disabled = true;
    let rotated;
    try {
      rotated = await this.api.postTagged(`${this.path()}/rotate-secret`, {});
    } catch (err) {
      button.disabled = false;
      this.failed('Not rotated', err);
      return;
    }
    const { signing_secret: secret, previous_secret_expires_at: until } = rotated.body;
    const note = () => h('p', { class: 'ok-text', 'data-action-result': 'rotated' }, `Secret rotated${until ? `; the previous one also signs until ${dateTime(until)}` : ''}.`);
    replace(this.out, note());
    await showSecretOnce({ title: `New signing secret of ${this.destination.name}`, note: 'Deliveries are signed with this secret from now on.', secret });
    try {
      const { body, etag } = await this.api.getTagged(this.path());
      this.onChanged(body, etag, note());
    } catch (err) {
      this.failed('Rotated, but the destination cannot be read again', err);
    }
  }

  async remove(button) {
    button.disabled = true;
    try {
      await this.api.remove(this.path());
      this.onDeleted(this.destination.id);
    } catch (err) {
      button.disabled = false;
      this.failed('Not deleted', err);
    }
  }
}
