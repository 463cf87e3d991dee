// Keyset pages of a list the API answers with `next_cursor`: the cursor of every page seen, so
// Newer goes back exactly, and the Newer / Older buttons with the page's number between them.

import { h } from './dom.js';

export class CursorPager {
  /**
   * `load(cursor)` asks for one page (null: the first) and answers the API's list; `show(answer)`
   * draws it; `fail(err)` says why a page could not be read (the page shown stays). `labels`
   * name the two buttons, for a list that is not newest first.
   */
  constructor({ load, show, fail, labels = ['← Newer', 'Older →'] }) {
    this.load = load;
    this.show = show;
    this.fail = fail;
    this.cursors = [null];
    this.page = 0;
    this.newer = h('button', { type: 'button', class: 'button', onclick: () => this.go(this.page - 1) }, labels[0]);
    this.older = h('button', { type: 'button', class: 'button', onclick: () => this.go(this.page + 1) }, labels[1]);
    this.label = h('span', { class: 'muted small' });
    this.element = h('footer', { class: 'pager' }, this.newer, this.label, this.older);
  }

  /** The first page again, for filters that changed. */
  restart() {
    this.cursors = [null];
    return this.go(0);
  }

  refresh() {
    return this.go(this.page);
  }

  async go(page) {
    if (page < 0 || page >= this.cursors.length) return;
    let answer;
    try {
      answer = await this.load(this.cursors[page]);
    } catch (err) {
      this.fail(err);
      return;
    }
    this.page = page;
    this.cursors.length = page + 1;
    if (answer.next_cursor) this.cursors.push(answer.next_cursor);
    this.newer.disabled = page === 0;
    this.older.disabled = page + 1 >= this.cursors.length;
    this.label.textContent = `Page ${page + 1}`;
    this.show(answer);
  }
}
