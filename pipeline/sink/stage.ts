import { errorMessage } from '../../core/log';
import { consumerSpec, type Topics } from '../../core/topics';
import type { DeadLetter, DeadLetterReplay, DeliveryOutcome, EventTransition, EvidenceBatch, LogEntry, RecordName, WebhookEvent } from '../../platform/avro/records';
import { consume, type ConsumedBatch, type Consuming, type RunnerDeps, type RunningStage } from '../runtime/consume';
import { decideBatch, fencingTokenOf, type ChainHead } from '../evidence/chain';
import { recordSinkFlush, secondsSince } from '../../platform/metrics/metrics';
import { ackedRow, deadLetterReplayRow, deadLetterRow, eventRow, eventTypeRow, evidenceRows, logRow, outcomeRows, receivedRow, stateRow, transitionRow } from './rows';
import { ownerOfLetter, type LetterOwner } from '../dead-letter';
import { withExpiry, type RetentionOf } from './expiry';
import { recordTraceOf, traceIdOf, type RecordHeaders } from '../../platform/tracing/trace-context';
import { endSpan, recordSpanAttributes, isTracing, SPAN_ATTRIBUTES, SpanKind, startSpan, type Span } from '../../platform/tracing/tracing';

/**
 * The tables the sink fills, in the order a flush inserts them: a checkpoint row goes in only
 * after the leaves and nodes its proofs need.
 */
export const SINK_TABLES = ['events', 'event_types', 'event_transitions', 'deliveries', 'destination_changes', 'logs', 'dead_letters', 'dead_letter_replays', 'evidence_nodes', 'evidence_leaves', 'evidence_checkpoints'] as const;
export type SinkTable = (typeof SINK_TABLES)[number];

/** Columns named on insert where the JSON row is not the table's shape (an EPHEMERAL input). */
export const INSERT_COLUMNS: Partial<Record<SinkTable, string[]>> = { evidence_nodes: ['level', 'idx', 'hash_hex'] };

/** The port the sink writes through: one insert per call. */
export interface RowWriter {
  insert(table: SinkTable, rows: Record<string, unknown>[]): Promise<void>;
}

export interface SinkOptions {
  /** Rows gathered before an insert. */
  batchRows: number;
  /** Longest a row waits before its insert. */
  flushMs: number;
  /** Each tenant's retention: rows get their expiry columns from it. Unset: the tables' defaults (kept for ever). */
  retention?: RetentionOf;
  /** Whether a tenant is erased or being erased: its rows are dropped, not written back (the evidence log's excepted). */
  erased?: (tenantId: string) => boolean;
}

/** The evidence log's tables keep every row: leaves are hashes, and each proof needs all of them. */
const EVIDENCE_TABLES: ReadonlySet<SinkTable> = new Set(['evidence_nodes', 'evidence_leaves', 'evidence_checkpoints']);

/** The rows of a table that may be written: none of a tenant that is erased. */
function rowsToWrite(table: SinkTable, rows: Record<string, unknown>[], erased: ((tenantId: string) => boolean) | undefined): Record<string, unknown>[] {
  if (!erased || EVIDENCE_TABLES.has(table)) return rows;
  return rows.some((r) => erased(String(r.tenant_id))) ? rows.filter((r) => !erased(String(r.tenant_id))) : rows;
}

/** `f` asked once per tenant: an insert holds thousands of rows of a few tenants. */
function perTenant<T>(f: (tenantId: string) => T): (tenantId: string) => T {
  const known = new Map<string, T>();
  return (tenantId) => {
    if (known.has(tenantId)) return known.get(tenantId)!;
    const v = f(tenantId);
    known.set(tenantId, v);
    return v;
  };
}

interface Buffer {
  rows: Map<SinkTable, Record<string, unknown>[]>;
  count: number;
  /** The next offset to commit per topic-partition once these rows are in. */
  offsets: Map<string, { topic: string; partition: number; offset: string }>;
  /**
   * The `acked` rows of deliveries whose successful outcome is sealed in this buffer's evidence:
   * inserted after the evidence tables, so a delivery shows `acked` only once its proof can be read.
   */
  acked: Record<string, unknown>[];
  /** While spans are recorded: the `hookline.sink` span of each event and attempt in this buffer, ended once its rows are in. */
  spans: Span[];
}

const emptyBuffer = (): Buffer => ({ rows: new Map(), count: 0, offsets: new Map(), acked: [], spans: [] });

/** The span of an event's or an attempt's way into ClickHouse, child of the span that wrote its record. */
function storeSpan(table: 'events' | 'deliveries', topic: string, headers: RecordHeaders, ids: { tenant_id: string; event_id: string; delivery_id?: string; destination_id?: string }): Span | undefined {
  return startSpan('hookline.sink', SpanKind.CONSUMER, recordTraceOf(headers), () => ({
    ...recordSpanAttributes(topic, ids),
    'db.system.name': 'clickhouse',
    'db.collection.name': table,
  }));
}

/** Rows of a buffer per table, as its flush inserts them (the `acked` rows go into event_transitions). */
function rowCounts(b: Buffer): [SinkTable, number][] {
  const counts = [...b.rows].map(([table, rows]): [SinkTable, number] => [table, rows.length + (table === 'event_transitions' ? b.acked.length : 0)]);
  if (b.acked.length > 0 && !b.rows.has('event_transitions')) counts.push(['event_transitions', b.acked.length]);
  return counts;
}

/** What the sink makes of one input topic: the rows of a table, or a state row per event record. */
interface SinkInput {
  record: RecordName;
  table: SinkTable;
  /** Set for the stages' event outputs: each record is the record of this state, at its Kafka time. */
  state?: 'validated' | 'filtered';
  /** The fields its rows need, when not the whole record. */
  fields?: readonly string[];
}

/** What a state row needs of an event record: its body and headers are skipped, not decoded. */
const STATE_FIELDS = ['event_id', 'tenant_id', 'ingester_id', 'correlation_id'] as const;

/**
 * Copies events, transitions, delivery attempts (and the destination changes they made), logs,
 * the dead letters of every stage with their replays, and the sealed evidence log into
 * ClickHouse, thousands of rows per insert and at most `flushMs` late. Offsets are committed
 * only after the insert, and every table dedupes on its ORDER BY, so records consumed twice
 * leave one row. Once a delivered attempt's evidence is in (its leaf, the nodes of its proof
 * and the signed checkpoint: evidence `confirmed`) the delivery moves to `acked`.
 */
export async function runSink(topics: Topics, writer: RowWriter, deps: RunnerDeps, options: SinkOptions): Promise<RunningStage> {
  const tableOf = new Map<string, SinkInput>([
    [topics.received, { record: 'WebhookEvent', table: 'events' }],
    // validation sets the event's type: the search reads it from event_types
    [topics.validated, { record: 'WebhookEvent', table: 'event_transitions', state: 'validated', fields: [...STATE_FIELDS, 'received_at', 'event_type'] }],
    [topics.filtered, { record: 'WebhookEvent', table: 'event_transitions', state: 'filtered', fields: STATE_FIELDS }],
    [topics.transitions, { record: 'EventTransition', table: 'event_transitions' }],
    [topics.deliveryCompleted, { record: 'DeliveryOutcome', table: 'deliveries' }],
    [topics.logs, { record: 'LogEntry', table: 'logs' }],
    [topics.evidenceLeaves, { record: 'EvidenceBatch', table: 'evidence_leaves' }],
    [topics.eventsDlq, { record: 'DeadLetter', table: 'dead_letters' }],
    [topics.eventsDlqReplays, { record: 'DeadLetterReplay', table: 'dead_letter_replays' }],
  ]);
  const inputs = consumerSpec(topics, 'sink').reads.map((topic) => {
    const into = tableOf.get(topic);
    if (!into) throw new Error(`the sink reads ${topic} but has no table for it`);
    return { topic, ...into };
  });
  const byTopic = new Map(inputs.map((i) => [i.topic, i]));
  let buffer = emptyBuffer();
  let flushing: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  /** Set by the first batch; flushes run from timers too. */
  let consuming: Consuming;
  /**
   * The last evidence batch taken since the last assignment: each next one must extend it
   * (pipeline/evidence/chain.ts). After a rebalance reading may start again further back, and the
   * first batch read is taken as it is (a batch read twice dedupes in its tables).
   */
  let evidenceHead: ChainHead | undefined;

  const insertAll = async (b: Buffer) => {
    const started = performance.now();
    for (let attempt = 1; ; attempt++) {
      try {
        // judged at insert time, not when read: a row buffered before its tenant's erasure began is dropped too
        const erased = options.erased && perTenant(options.erased);
        for (const table of SINK_TABLES) {
          const rows = rowsToWrite(table, b.rows.get(table) ?? [], erased);
          if (rows.length > 0) await writer.insert(table, rows);
        }
        const acked = rowsToWrite('event_transitions', b.acked, erased);
        if (acked.length > 0) await writer.insert('event_transitions', acked);
        await consuming.commitNow([...b.offsets.values()]);
        recordSinkFlush(rowCounts(b), secondsSince(started));
        for (const span of b.spans) {
          span.setAttribute(SPAN_ATTRIBUTES.outcome, 'stored');
          endSpan(span);
        }
        return;
      } catch (err) {
        if (consuming.stopped() && attempt >= 3) {
          for (const span of b.spans) endSpan(span, err);
          throw err;
        }
        consuming.log.error('sink insert failed; trying again', { attempt, rows: b.count, error: errorMessage(err) });
        await new Promise((r) => setTimeout(r, Math.min(10_000, 100 * 2 ** attempt)));
      }
    }
  };

  /** Writes what is buffered; concurrent callers share one flush. */
  const flush = (): Promise<void> => {
    if (timer) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (flushing) return flushing.then(() => (buffer.count > 0 ? flush() : undefined));
    if (buffer.count === 0) return Promise.resolve();
    const b = buffer;
    buffer = emptyBuffer();
    flushing = insertAll(b).finally(() => {
      flushing = undefined;
    });
    return flushing;
  };

  /** Adds decoded records to the current buffer, synchronously: no flush can swap it midway. */
  const appendRows = (input: SinkInput, topic: string, values: unknown[], times: number[], headers: RecordHeaders[], owners: LetterOwner[]) => {
    const { table } = input;
    // read once per batch: spans are made only while this process records them
    const tracing = isTracing();
    const rowsOf = (t: SinkTable) => {
      let rows = buffer.rows.get(t);
      if (!rows) buffer.rows.set(t, (rows = []));
      return rows;
    };
    const rows = rowsOf(table);
    // a row's expiry columns, from its tenant's retention and the time it records
    const retention = options.retention && perTenant(options.retention);
    const expiring = <R extends { tenant_id: string }>(t: SinkTable, row: R, atMs: number): R => (retention ? withExpiry(t, row, atMs, retention) : row);
    for (let i = 0; i < values.length; i++) {
      const value = values[i];
      switch (table) {
        case 'events': {
          const event = value as WebhookEvent;
          rows.push(expiring('events', eventRow(event), event.received_at));
          const span = tracing ? storeSpan('events', topic, headers[i], event) : undefined;
          if (span) buffer.spans.push(span);
          // the event record is the record of its `received` state
          rowsOf('event_transitions').push(expiring('event_transitions', receivedRow(event), event.received_at));
          buffer.count++;
          break;
        }
        case 'event_transitions':
          rows.push(input.state ? expiring(table, stateRow(value as WebhookEvent, input.state, times[i]!), times[i]!) : expiring(table, transitionRow(value as EventTransition), (value as EventTransition).at));
          if (input.state === 'validated' && (value as WebhookEvent).event_type) rowsOf('event_types').push(expiring('event_types', eventTypeRow(value as WebhookEvent), (value as WebhookEvent).received_at));
          break;
        case 'deliveries': {
          const outcome = value as DeliveryOutcome;
          const made = outcomeRows(outcome, traceIdOf(recordTraceOf(headers[i])));
          const span = tracing ? storeSpan('deliveries', topic, headers[i], outcome) : undefined;
          if (span) buffer.spans.push(span);
          rows.push(expiring('deliveries', made.deliveries, outcome.attempted_at));
          rowsOf('logs').push(expiring('logs', made.logs, outcome.attempted_at + outcome.duration_ms));
          if (made.event_transitions) rowsOf('event_transitions').push(expiring('event_transitions', made.event_transitions, outcome.attempted_at + outcome.duration_ms));
          if (made.destination_changes) rowsOf('destination_changes').push(made.destination_changes);
          buffer.count += 1;
          break;
        }
        case 'evidence_leaves': {
          const b = value as EvidenceBatch;
          const decision = decideBatch(evidenceHead, b);
          if (!decision.apply) {
            consuming.log.error('evidence batch not stored: it does not extend the log', { first_index: b.first_index, tree_size: b.tree_size, fencing_token: fencingTokenOf(b), reason: decision.reason });
            continue;
          }
          evidenceHead = decision.head;
          const r = evidenceRows(b);
          rows.push(...r.leaves);
          rowsOf('evidence_nodes').push(...r.nodes);
          rowsOf('evidence_checkpoints').push(r.checkpoint);
          buffer.count += r.leaves.length + r.nodes.length;
          for (const l of b.leaves) if (l.status === 'delivered') buffer.acked.push(expiring('event_transitions', ackedRow(l, b.sealed_at), b.sealed_at));
          break;
        }
        case 'logs':
          rows.push(expiring('logs', logRow(value as LogEntry), (value as LogEntry).ts));
          break;
        case 'dead_letters':
          rows.push(expiring('dead_letters', deadLetterRow(value as DeadLetter, owners[i]!), (value as DeadLetter).at));
          break;
        case 'dead_letter_replays':
          rows.push(expiring('dead_letter_replays', deadLetterReplayRow(value as DeadLetterReplay), (value as DeadLetterReplay).replayed_at));
          break;
      }
      buffer.count++;
    }
  };

  const onBatch = async (batch: ConsumedBatch, running: Consuming) => {
    consuming = running;
    const input = byTopic.get(batch.topic)!;
    // Decode the whole batch before touching the buffer: a timer flush may swap the buffer
    // during any await, and rows, counts and offsets must all land in the same buffer.
    const values: unknown[] = [];
    const times: number[] = [];
    // the trace context of each record is read only where its rows or spans need it
    const headers: RecordHeaders[] = [];
    for (const message of batch.messages) {
      if (message.value === null) continue;
      const decoded = await batch.decode(message as typeof message & { value: Buffer });
      if (decoded.undecodable !== undefined) {
        // no row; the stage reading the topic sets the bytes aside (a body that does not open is logged once, where it was read)
        if (!decoded.unopenable) running.log.error('record skipped: it cannot be decoded', { topic: batch.topic, partition: batch.partition, offset: message.offset, reason: decoded.undecodable });
        continue;
      }
      values.push(decoded.value);
      times.push(Number(message.timestamp));
      headers.push(message.headers);
    }
    // a dead letter is filed under the tenant its input names, read from the input's own bytes
    const owners = input.table === 'dead_letters' ? await Promise.all(values.map((v) => ownerOfLetter(deps.codec, v as DeadLetter))) : [];
    appendRows(input, batch.topic, values, times, headers, owners);
    const last = batch.lastOffset();
    batch.resolve(last);
    buffer.offsets.set(`${batch.topic}:${batch.partition}`, { topic: batch.topic, partition: batch.partition, offset: (BigInt(last) + 1n).toString() });
    const flushLogged = () => flush().catch((err: unknown) => running.log.error('sink flush failed', { error: errorMessage(err) }));
    if (buffer.count >= options.batchRows) {
      // one insert at a time, while the next rows gather: reading and decoding go on during it
      if (flushing) await flushing.catch(() => undefined);
      void flushLogged();
    } else timer ??= setTimeout(() => void flushLogged(), options.flushMs);
    await batch.heartbeat();
  };

  return consume(
    deps,
    {
      name: 'sink',
      inputs,
      partitionsConsumedConcurrently: 1,
      consumer: { maxBytes: 16 * 1024 * 1024 },
      // rows wait up to flushMs for their insert anyway: a fetch may wait half of it for more
      fetchLinger: { minBytes: 512 * 1024, maxWaitMs: Math.max(1, Math.floor(options.flushMs / 2)) },
      onAssign: () => {
        evidenceHead = undefined;
      },
      beforeLeave: flush,
    },
    onBatch,
  );
}
