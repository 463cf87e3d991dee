// Records a stage of the pipeline set aside, newest first, each with its stage and reason, and
// putting one back once its cause is fixed: GET and POST /v1/tenants/{tenant}/dead-letters.

import { ApiError } from '../api.js';
import { h, replace } from '../dom.js';
import { short, when } from '../format.js';
import { CursorPager } from '../pager.js';

const PAGE = 10;
const STAGES = ['validate', 'filter', 'route', 'deliver', 'release', 'retry', 'evidence-sequencer'];

export class DeadLetters {
  constructor(api, { onReplayed }) {
    this.api = api;
    this.onReplayed = onReplayed;
    // replayed from this page: shown so at once, before the list has the replay copied
    this.replayed = new Map();
    this.stage = h('select', { name: 'stage', 'aria-label': 'Stage', onchange: () => this.pager.restart() }, h('option', { value: '' }, 'Any stage'), STAGES.map((s) => h('option', { value: s }, s)));
    this.message = h('p', { class: 'form-error', role: 'alert' });
    this.result = h('div', { class: 'replay-result', 'data-result': 'dead-letter-replay', role: 'status' });
    this.body = h('tbody', {});
    this.pager = new CursorPager({
      load: (cursor) => {
        this.message.textContent = '';
        return this.api.get('/dead-letters', { stage: this.stage.value, limit: PAGE, cursor });
      },
      show: (answer) => this.render(answer.dead_letters),
      fail: (err) => {
        this.message.textContent = err instanceof ApiError && err.status === 403 ? `Dead letters: this key may not read them (${err.problem?.required_scope ?? err.slug})` : err.message;
      },
    });
    this.element = h(
      'section',
      { class: 'card dead-letters', 'data-panel': 'dead-letters' },
      h('header', { class: 'card-head' }, h('h2', {}, 'Dead letters'), h('span', { class: 'muted small' }, 'records a stage set aside, newest first; replay one once its cause is fixed'), h('button', { type: 'button', class: 'button small push', onclick: () => this.refresh(), 'data-action': 'refresh-dead-letters' }, 'Refresh')),
      h('div', { class: 'filters' }, this.stage),
      this.message,
      this.result,
      h('div', { class: 'table-wrap' }, h('table', { class: 'table', 'data-table': 'dead-letters' }, h('thead', {}, h('tr', {}, ['Time', 'Stage', 'Reason', 'Event', 'Read at', ''].map((t) => h('th', {}, t)))), this.body)),
      this.pager.element,
    );
  }

  /** The page shown, 0 the newest. */
  get page() {
    return this.pager.page;
  }

  refresh() {
    return this.pager.refresh();
  }

  render(items) {
    if (items.length === 0) {
      replace(this.body, h('tr', {}, h('td', { colspan: 6, class: 'muted empty-row' }, 'No record was set aside.')));
      return;
    }
    replace(
      this.body,
      items.map((l) => {
        const replayedAt = l.replayed_at ?? this.replayed.get(l.id);
        const button = h('button', { type: 'button', class: 'button small', 'data-action': 'replay-dead-letter', title: 'Put the record back where it was read: its stage handles it again', onclick: () => this.replay(l, button) }, 'Replay');
        return h(
          'tr',
          { 'data-letter': l.id, 'data-event': l.event_id ?? '' },
          h('td', { class: 'nowrap', title: l.at }, when(l.at)),
          h('td', {}, h('span', { class: 'pill pill-bad' }, l.stage)),
          h('td', { class: 'reason', title: l.reason }, l.reason),
          h('td', { class: 'mono nowrap', title: l.event_id ?? '' }, l.event_id ? short(l.event_id, 12) : h('span', { class: 'muted' }, '—')),
          h('td', { class: 'mono nowrap', title: `${l.source.topic} ${l.source.partition}/${l.source.offset}` }, `${l.source.partition}/${l.source.offset}`),
          h('td', { class: 'nowrap' }, replayedAt ? h('span', { class: 'pill pill-muted', 'data-replayed': l.id, title: l.replayed_by ? `by ${l.replayed_by}` : '' }, `replayed ${when(replayedAt)}`) : button),
        );
      }),
    );
  }

  async replay(letter, button) {
    button.disabled = true;
    replace(this.result, h('p', { class: 'muted' }, 'Sending…'));
    try {
      const r = await this.api.post(`/dead-letters/${encodeURIComponent(letter.id)}/replay`);
      this.replayed.set(letter.id, r.replayed_at);
      replace(this.result, h('p', { class: 'ok-text', 'data-replay': 'replayed' }, `Put back: ${r.message}.`));
      this.onReplayed?.();
    } catch (err) {
      button.disabled = false;
      replace(this.result, h('p', { class: 'bad-text', 'data-replay': 'refused' }, `Replay refused: ${err.message}`));
    }
    await this.refresh();
  }
}
