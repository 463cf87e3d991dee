// One delivery: the request its event sent, every attempt with its response, a replay, and the
// evidence of its latest sealed attempt verified here in the page (evidence.js).

import { h, replace } from '../dom.js';
import { verifyEvidence } from '../evidence.js';
import { bytes, dateTime, short } from '../format.js';
import { bytesToHex, sha256 } from '../merkle.js';
import { decodeBase64 } from '../signed-note.js';
import { codePill, statusPill } from './deliveries.js';
import { field, refusalText, section } from './parts.js';

const utf8 = new TextEncoder();

/** A body for reading: JSON indented when it is JSON, else as it is. Only text nodes. */
function bodyBlock(text, contentType) {
  let shown = text;
  if (/json/i.test(contentType ?? '') || /^\s*[[{]/.test(text)) {
    try {
      shown = JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      shown = text;
    }
  }
  return h('pre', { class: 'body' }, shown === '' ? h('span', { class: 'muted' }, '(empty)') : shown);
}

export class DeliveryDetail {
  /** `can(scope)`: whether the session holds a scope; a replay it may not ask for is not offered. */
  constructor(api, { tenantId, can = () => true, onReplayed, onOpen }) {
    this.api = api;
    this.can = can;
    this.tenantId = tenantId;
    this.onReplayed = onReplayed;
    this.onOpen = onOpen;
    this.element = h('section', { class: 'card detail', 'data-panel': 'delivery' });
    this.empty();
  }

  empty() {
    this.delivery = null;
    replace(this.element, h('div', { class: 'detail-empty' }, h('h2', {}, 'Delivery'), h('p', { class: 'muted' }, 'Select a delivery in the list to see its request, every attempt with its response, replay it, and verify its evidence.')));
  }

  async open(id) {
    this.openedId = id;
    replace(this.element, h('p', { class: 'muted' }, 'Loading…'));
    let delivery;
    try {
      delivery = await this.api.get(`/deliveries/${encodeURIComponent(id)}`);
    } catch (err) {
      replace(this.element, h('p', { class: 'form-error' }, `Delivery ${id}: ${err.message}`));
      return;
    }
    if (this.openedId !== id) return;
    this.delivery = delivery;
    const [event, destination] = await Promise.all([this.api.get(`/events/${encodeURIComponent(delivery.event_id)}`).catch((err) => err), this.api.get(`/destinations/${encodeURIComponent(delivery.destination_id)}`).catch((err) => err)]);
    if (this.openedId !== id) return;
    this.render(delivery, event, destination);
  }

  render(d, event, destination) {
    this.replayOut = h('div', { class: 'replay-result', 'data-result': 'replay', role: 'status' });
    this.evidenceOut = h('div', { class: 'evidence', 'data-result': 'evidence', role: 'status' });
    const mayReplay = this.can(d.status === 'failed' ? 'write:events' : 'write:replays');
    const replayButton = mayReplay ? h('button', { type: 'button', class: 'button', 'data-action': 'replay', disabled: d.status === 'retrying', title: d.status === 'retrying' ? 'Still retrying: it can be replayed once it ends' : 'Deliver this again as a new delivery', onclick: () => this.replay(replayButton) }, d.status === 'failed' ? 'Retry' : 'Replay') : null;
    const verifyButton = h('button', { type: 'button', class: 'button primary', 'data-action': 'verify', onclick: () => this.verify(verifyButton) }, 'Verify evidence');
    replace(
      this.element,
      h(
        'header',
        { class: 'detail-head' },
        h('div', {}, h('div', { class: 'eyebrow' }, 'Delivery'), h('h2', { class: 'mono', title: d.id }, d.id)),
        h('div', { class: 'actions' }, replayButton, verifyButton),
      ),
      this.replayOut,
      h(
        'dl',
        { class: 'fields' },
        field('Status', statusPill(d.status), ' ', codePill(d.response_code)),
        field('Event', h('span', { class: 'mono', title: d.event_id }, d.event_id)),
        field('Event type', event instanceof Error ? '—' : (event.event_type ?? '—')),
        field('Destination', destination instanceof Error ? h('span', { class: 'mono' }, d.destination_id) : destination.name, h('span', { class: 'mono muted small block' }, d.destination_id)),
        field('Attempts', String(d.attempts.length)),
        field('Last attempt', dateTime(d.attempted_at)),
      ),
      section('Evidence', this.evidenceOut),
      this.requestSection(d, event, destination),
      section('Attempts', h('ol', { class: 'attempts' }, [...d.attempts].reverse().map((a) => this.attemptItem(a)))),
    );
    this.hashCheck(d, event);
  }

  requestSection(d, event, destination) {
    const url = destination instanceof Error ? null : destination.url;
    if (event instanceof Error) {
      return section('Request', h('p', { class: 'request-line' }, h('span', { class: 'method' }, 'POST'), ' ', url ?? h('span', { class: 'mono' }, d.destination_id)), h('p', { class: 'muted' }, `The event's body: ${refusalText(event)}.`));
    }
    this.hashOut = h('span', { class: 'muted small', 'data-result': 'body-hash' }, 'checking SHA-256…');
    return section(
      'Request',
      h('p', { class: 'request-line' }, h('span', { class: 'method' }, 'POST'), ' ', h('span', { class: 'mono' }, url ?? d.destination_id)),
      h('dl', { class: 'fields compact' }, field('Content type', event.content_type ?? '—'), field('Body', `${bytes(event.body_bytes)}${event.body_truncated ? ' (first 64 KiB shown)' : ''}`, ' · ', this.hashOut), field('Received', dateTime(event.received_at))),
      event.body === null ? h('p', { class: 'form-error' }, 'The stored body does not match the SHA-256 recorded when it was received.') : event.body_encoding === 'base64' ? h('pre', { class: 'body' }, `(binary, base64)\n${event.body}`) : bodyBlock(event.body, event.content_type),
    );
  }

  /** The body shown hashes to what the attempts record as sent (when it is shown whole). */
  async hashCheck(d, event) {
    if (event instanceof Error || !this.hashOut || event.body === null) return;
    if (event.body_truncated) {
      this.hashOut.textContent = `SHA-256 ${short(event.body_sha256, 12)}`;
      return;
    }
    const raw = event.body_encoding === 'base64' ? decodeBase64(event.body) : utf8.encode(event.body);
    const digest = raw ? bytesToHex(await sha256(raw)) : '';
    const ok = digest === event.body_sha256 && d.attempts.every((a) => a.body_sha256 === digest);
    this.hashOut.textContent = ok ? 'SHA-256 matches every attempt' : 'SHA-256 does not match the attempts';
    this.hashOut.title = digest;
    this.hashOut.className = ok ? 'ok-text small' : 'bad-text small';
  }

  attemptItem(a) {
    return h(
      'li',
      { class: 'attempt', 'data-attempt': a.attempt_number },
      h('div', { class: 'attempt-head' }, h('span', { class: 'attempt-no' }, `#${a.attempt_number}`), statusPill(a.status), codePill(a.response_code), h('span', { class: 'muted small push', title: a.attempted_at }, dateTime(a.attempted_at))),
      a.error_message ? h('p', { class: 'bad-text small' }, a.error_message) : null,
      h('div', { class: 'response-label muted small' }, a.response_code === null ? 'No response' : `Response ${a.response_code} · body (first 4 KiB)`),
      a.response_body === null ? null : bodyBlock(a.response_body, ''),
    );
  }

  /**
   * A failed delivery is retried (POST .../events/{id}/retry: each dead delivery of the event
   * once); a delivered one is replayed by a replay job over the instant of its latest attempt,
   * for its destination.
   */
  async replay(button) {
    const d = this.delivery;
    button.disabled = true;
    replace(this.replayOut, h('p', { class: 'muted' }, 'Sending…'));
    try {
      if (d.status === 'failed') {
        const r = await this.api.post(`/events/${encodeURIComponent(d.event_id)}/retry`);
        replace(this.replayOut, h('p', { class: 'ok-text', 'data-replay': 'queued' }, `Queued again as ${r.delivery_id}. `, h('button', { type: 'button', class: 'link', onclick: () => this.onOpen(r.delivery_id) }, 'Open it')));
        this.onReplayed();
        return;
      }
      const at = Date.parse(d.attempted_at);
      let job = await this.api.post('/replays', { from: new Date(at).toISOString(), to: new Date(at + 1).toISOString(), destination_id: d.destination_id, status: 'delivered' });
      const line = h('p', { class: 'muted', 'data-replay': job.status }, `Replay job ${job.id} accepted: ${job.matched} ${job.matched === 1 ? 'delivery' : 'deliveries'} to replay.`);
      replace(this.replayOut, line);
      try {
        for (let i = 0; i < 120 && job.status === 'running'; i++) {
          await new Promise((r) => setTimeout(r, 1000));
          job = await this.api.get(`/replays/${encodeURIComponent(job.id)}`);
        }
      } catch (err) {
        line.textContent += ` Its progress cannot be read: ${refusalText(err)}.`;
        this.onReplayed();
        return;
      }
      line.dataset.replay = job.status;
      line.className = job.status === 'completed' ? 'ok-text' : job.status === 'running' ? 'muted' : 'bad-text';
      line.textContent = `Replay job ${job.id} ${job.status}: ${job.replayed} of ${job.matched} replayed as new deliveries${job.skipped ? `, ${job.skipped} skipped` : ''}.`;
      this.onReplayed();
    } catch (err) {
      replace(this.replayOut, h('p', { class: 'bad-text', 'data-replay': 'refused' }, `Replay refused: ${err.message}`));
    } finally {
      button.disabled = false;
    }
  }

  /** Fetches the evidence and the log's key, and checks them here (waits a while for a pending seal). */
  async verify(button) {
    const d = this.delivery;
    button.disabled = true;
    replace(this.evidenceOut, h('p', { class: 'muted' }, 'Fetching the evidence…'));
    try {
      let evidence = await this.api.get(`/evidence/${encodeURIComponent(d.id)}`);
      for (let i = 0; i < 30 && evidence.status !== 'confirmed'; i++) {
        replace(this.evidenceOut, h('p', { class: 'muted', 'data-evidence': 'pending' }, 'Not sealed into a checkpoint yet; waiting…'));
        await new Promise((r) => setTimeout(r, 1000));
        evidence = await this.api.get(`/evidence/${encodeURIComponent(d.id)}`);
      }
      // the record of the attempt the evidence is for: read again, it may be newer than the page
      const [log, delivery] = await Promise.all([this.api.get('/evidence-log'), this.api.get(`/deliveries/${encodeURIComponent(d.id)}`)]);
      const result = await verifyEvidence({ tenantId: this.tenantId, delivery, evidence, log });
      this.showEvidence(result, evidence);
    } catch (err) {
      replace(this.evidenceOut, h('p', { class: 'bad-text', 'data-evidence': 'error' }, `Evidence: ${refusalText(err)}`));
    } finally {
      button.disabled = false;
    }
  }

  showEvidence(result, evidence) {
    const names = { sealed: 'Sealed', leaf: 'Leaf', signature: 'Signature', checkpoint: 'Checkpoint', inclusion: 'Inclusion proof', format: 'Format' };
    replace(
      this.evidenceOut,
      h(
        'div',
        { class: `verdict ${result.verified ? 'verdict-ok' : 'verdict-bad'}`, 'data-evidence': result.verified ? 'verified' : 'failed' },
        h('span', { class: 'verdict-mark', 'aria-hidden': 'true' }, result.verified ? '✓' : '✕'),
        h('div', {}, h('div', { class: 'verdict-title' }, result.verified ? 'Verified' : 'Verification failed'), h('div', { class: 'small' }, result.verified ? `Attempt ${evidence.attempt_number} is leaf ${result.leafIndex} of the signed tree of ${result.treeSize} leaves, checked in this browser.` : 'The evidence does not prove this delivery record; see the failed check below.')),
      ),
      h('dl', { class: 'fields compact' }, field('Leaf', result.leafIndex === undefined ? '—' : `#${result.leafIndex}`), field('Tree size', result.treeSize === undefined ? '—' : String(result.treeSize)), field('Root', h('span', { class: 'mono', title: result.rootHash ?? '', 'data-root': result.rootHash ?? '' }, result.rootHash ? short(result.rootHash, 16) : '—'))),
      h(
        'ul',
        { class: 'checks' },
        result.checks.map((c) => h('li', { class: c.ok === true ? 'check-ok' : c.ok === false ? 'check-bad' : 'check-skip', 'data-check': c.name }, h('span', { class: 'check-mark', 'aria-hidden': 'true' }, c.ok === true ? '✓' : c.ok === false ? '✕' : '–'), h('span', { class: 'check-name' }, names[c.name] ?? c.name), h('span', { class: 'check-detail' }, c.detail))),
      ),
    );
  }
}
