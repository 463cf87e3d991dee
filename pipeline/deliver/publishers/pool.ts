import { createHash } from 'node:crypto';
import type { Logger } from '../../../core/log';
import type { Destination, DestinationType } from '../../../core/model';
import { endpointsOf, typeOf } from '../../../core/destination-types';
import { PublishFailed, type OutboundMessage, type Publisher } from './publisher';
import { sealedFailure, secretsOf } from './failure';

/** One open connection to one destination's broker, ready to send to what the destination names. */
export interface BrokerConnection {
  /**
   * Resolves at the broker's acknowledgement of `message`; rejects with what failed (a
   * PublishFailed in the tenant's terms, where the type knows them). Many sends run at once.
   */
  send(message: OutboundMessage, timeoutMs: number): Promise<void>;
  /** False once the connection is gone or unusable: the pool drops it and the next publish connects again. */
  readonly open: boolean;
  /** Why sends wait, when the broker said so (an AMQP broker blocking publishers); put in the timeout's message. */
  stalled?(): string | undefined;
  /** Closes the connection; never rejects, and ends even when the broker does not answer. */
  close(): Promise<void>;
}

export interface ConnectOptions {
  /** Longest the connection (socket, TLS, handshake, authentication) may take. */
  connectTimeoutMs: number;
  /** The publish timeout of the send that opened the connection: the bound for the client's own request timeouts. */
  requestTimeoutMs: number;
}

/** How one destination type connects: the pool shares, reuses and closes what it opens. */
export interface Connector {
  connect(destination: Destination, options: ConnectOptions): Promise<BrokerConnection>;
}

export type BrokerType = Exclude<DestinationType, 'webhook'>;

export interface ConnectionPoolOptions {
  connectors: Record<BrokerType, Connector>;
  /** A connection that sent nothing for this long is closed. */
  idleMs: number;
  connectTimeoutMs: number;
  log?: Logger;
}

/** Longest a close waits for the broker before the pool stops waiting (the connection is dropped all the same). */
const CLOSE_WAIT_MS = 2_000;

interface Entry {
  readonly destinationId: string;
  readonly fingerprint: string;
  readonly connection: Promise<BrokerConnection>;
  ready: BrokerConnection | undefined;
  failed: boolean;
  inFlight: number;
  lastUsed: number;
  /** When the last acknowledgement arrived: a timeout with none since its send began means a dead connection. */
  lastAck: number;
  retired: boolean;
  closing: Promise<void> | undefined;
}

/**
 * What makes a destination's connection: its type, address, settings and credentials. A change
 * to any of them makes a new connection (and closes the old); kept as a hash, so that the
 * credentials are not held twice.
 */
export function fingerprintOf(destination: Destination): string {
  const stable = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(stable)
      : typeof v === 'object' && v !== null
        ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, stable((v as Record<string, unknown>)[k])]))
        : v;
  const text = JSON.stringify(stable({ type: typeOf(destination), url: destination.url, config: destination.config ?? null, auth: destination.auth ?? null }));
  return createHash('sha256').update(text).digest('base64url');
}

/** The broker's address as the destination names it, for messages: `host:port[,host:port]`. */
export function whereOf(destination: Destination): string {
  const parsed = endpointsOf(typeOf(destination), destination.url);
  if ('problem' in parsed) return destination.url;
  return parsed.endpoints.map(({ host, port }) => `${host.includes(':') ? `[${host}]` : host}:${port}`).join(',');
}

/**
 * What `work` gives within `ms`, or `late()`'s failure. `work` is not stopped: the caller
 * decides what becomes of what it gives later.
 */
function within<T>(work: Promise<T>, ms: number, late: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), ms);
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}

class TimedOut extends PublishFailed {}

/**
 * The broker publisher: one connection per destination, opened on its first publish and shared
 * by every publish to it (hundreds may be in flight at once), so that a dead or slow broker
 * holds up only its own destination's deliveries. A connection is made again when the
 * destination changed (its fingerprint), when it failed or closed, and after it sat idle.
 */
export class ConnectionPool implements Publisher {
  private readonly entries = new Map<string, Entry>();
  /** Connections retired while sends were in flight on them, closed when the last one ends. */
  private readonly retiring = new Set<Entry>();
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly options: ConnectionPoolOptions) {
    const every = Math.min(30_000, Math.max(50, Math.floor(options.idleMs / 2)));
    this.sweeper = setInterval(() => this.sweep(), every);
    this.sweeper.unref();
  }

  async publish(destination: Destination, message: OutboundMessage, timeoutMs: number): Promise<{ durationMs: number }> {
    const started = performance.now();
    const secrets = secretsOf(destination.auth);
    if (this.closed) throw new PublishFailed('the broker publisher is closed');
    let entry: Entry | undefined;
    let sentAt = 0;
    try {
      entry = this.entryFor(destination, timeoutMs);
      entry.inFlight++;
      entry.lastUsed = Date.now();
      const where = whereOf(destination);
      const connection = await within(entry.connection, timeoutMs, () => new TimedOut(`no acknowledgement from the broker within ${timeoutMs} ms (still connecting to ${where})`));
      const remaining = Math.max(1, Math.round(timeoutMs - (performance.now() - started)));
      sentAt = Date.now();
      await within(connection.send(message, remaining), remaining, () => {
        const why = connection.stalled?.();
        return new TimedOut(`no acknowledgement from the broker within ${timeoutMs} ms${why ? ` (${why})` : ''}`);
      });
      entry.lastAck = Date.now();
      return { durationMs: Math.round(performance.now() - started) };
    } catch (err) {
      // a send that timed out with no acknowledgement since it began: the connection is
      // probably dead without having noticed (a host gone, a frozen broker); the next connects again
      if (entry && err instanceof TimedOut && entry.ready && entry.lastAck < sentAt) this.retire(entry);
      throw sealedFailure(err, secrets);
    } finally {
      if (entry) {
        entry.inFlight--;
        entry.lastUsed = Date.now();
        if (entry.retired && entry.inFlight === 0) void this.closeEntry(entry, 'retired');
      }
    }
  }

  async release(destinationId: string): Promise<void> {
    const entry = this.entries.get(destinationId);
    const retiring = [...this.retiring].filter((e) => e.destinationId === destinationId);
    if (entry) this.entries.delete(destinationId);
    await Promise.all([...(entry ? [entry] : []), ...retiring].map((e) => this.closeEntry(e, 'released')));
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    const all = [...this.entries.values(), ...this.retiring];
    this.entries.clear();
    await Promise.all(all.map((e) => this.closeEntry(e, 'publisher closed')));
  }

  /** Connections open or opening now, those still finishing sends after being retired included. */
  openCount(): number {
    return this.entries.size + this.retiring.size;
  }

  private entryFor(destination: Destination, timeoutMs: number): Entry {
    const fingerprint = fingerprintOf(destination);
    const current = this.entries.get(destination.id);
    if (current && current.fingerprint === fingerprint && !current.failed && (current.ready === undefined || current.ready.open)) return current;
    if (current) this.retire(current);
    const type = typeOf(destination);
    if (type === 'webhook') throw new PublishFailed('a webhook destination is sent over HTTP, not through a broker publisher');
    const entry = this.open(destination, fingerprint, this.options.connectors[type], timeoutMs);
    this.entries.set(destination.id, entry);
    return entry;
  }

  private open(destination: Destination, fingerprint: string, connector: Connector, timeoutMs: number): Entry {
    const { connectTimeoutMs } = this.options;
    const attempt = connector.connect(destination, { connectTimeoutMs, requestTimeoutMs: timeoutMs });
    const where = whereOf(destination);
    const connection = within(attempt, connectTimeoutMs, () => new PublishFailed(`could not connect to ${where} within ${connectTimeoutMs} ms`));
    const entry: Entry = {
      destinationId: destination.id,
      fingerprint,
      connection,
      ready: undefined,
      failed: false,
      inFlight: 0,
      lastUsed: Date.now(),
      lastAck: 0,
      retired: false,
      closing: undefined,
    };
    connection.then(
      (c) => {
        entry.ready = c;
        this.options.log?.debug('broker connection open', { destination_id: destination.id, tenant_id: destination.tenant_id, broker: where });
        if (entry.retired && entry.inFlight === 0) void this.closeEntry(entry, 'retired');
      },
      () => {
        entry.failed = true;
        if (this.entries.get(entry.destinationId) === entry) this.entries.delete(entry.destinationId);
        // a connection that arrives after its timeout belongs to nobody
        attempt.then((late) => late.close(), () => undefined);
      },
    );
    return entry;
  }

  /** Takes `entry` out of use: closed now when idle, else when its last send ends. */
  private retire(entry: Entry): void {
    if (this.entries.get(entry.destinationId) === entry) this.entries.delete(entry.destinationId);
    if (entry.retired) return;
    entry.retired = true;
    if (entry.inFlight === 0) void this.closeEntry(entry, 'retired');
    else this.retiring.add(entry);
  }

  /**
   * Closes `entry`'s connection; one still connecting is closed when it arrives, without the
   * caller waiting for it (a broker that does not answer would hold a release or a shutdown).
   */
  private closeEntry(entry: Entry, reason: string): Promise<void> {
    entry.retired = true;
    this.retiring.delete(entry);
    entry.closing ??= entry.connection.then(
      async (c) => {
        await within(c.close(), CLOSE_WAIT_MS, () => new Error('close timed out')).catch(() => undefined);
        this.options.log?.debug('broker connection closed', { destination_id: entry.destinationId, reason });
      },
      () => undefined,
    );
    return entry.ready ? entry.closing : Promise.resolve();
  }

  private sweep(): void {
    const now = Date.now();
    for (const entry of [...this.entries.values()]) {
      if (entry.inFlight > 0) continue;
      const gone = entry.ready !== undefined && !entry.ready.open;
      if (gone || now - entry.lastUsed >= this.options.idleMs) {
        this.entries.delete(entry.destinationId);
        void this.closeEntry(entry, gone ? 'connection lost' : 'idle');
      }
    }
  }
}
