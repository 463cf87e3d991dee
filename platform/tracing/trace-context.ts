import { randomFillSync } from 'node:crypto';
import type { IHeaders } from 'kafkajs';

/** The W3C Trace Context headers, on HTTP requests and on Kafka records alike. */
export const TRACEPARENT = 'traceparent';
export const TRACESTATE = 'tracestate';

/**
 * The trace context one record (or request) carries: `traceparent`, and `tracestate` only when
 * there is one (a header with an undefined value would not encode). Copied from each record onto
 * the records written from it; a stage that records a span puts its own span id in.
 */
export interface TraceHeaders {
  traceparent: string;
  tracestate?: string;
}

/** Version 00 (the one written here): version, 32 hex trace id, 16 hex parent id, 2 hex flags. */
const TRACEPARENT_00 = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
/** A later version may append fields; its first four keep the version 00 layout. */
const TRACEPARENT_LATER = /^(?!ff)[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:-[\x21-\x7e]*)?$/;
const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_SPAN_ID = '0'.repeat(16);
/**
 * Most characters of a `tracestate` kept; a longer one is dropped (W3C asks to pass on at least
 * 512). It comes from the sender of a webhook, so it is bounded like anything else it supplies.
 */
export const MAX_TRACESTATE_LENGTH = 512;
const TRACESTATE_TEXT = /^[\x20-\x7e]*$/;

/** The `traceparent` in its version 00 form when `raw` is a valid one, else undefined. */
export function validTraceparent(raw: string): string | undefined {
  if (raw.length === 55 && TRACEPARENT_00.test(raw)) {
    return raw.startsWith(ZERO_TRACE_ID, 3) || raw.startsWith(ZERO_SPAN_ID, 36) ? undefined : raw;
  }
  const m = TRACEPARENT_LATER.exec(raw.trim().toLowerCase());
  if (!m || m[1] === ZERO_TRACE_ID || m[2] === ZERO_SPAN_ID) return undefined;
  return `00-${m[1]}-${m[2]}-${m[3]}`;
}

/** The trace context of a request or record from its header values; undefined without a valid `traceparent`. */
export function traceContextOf(traceparent: string | undefined, tracestate: string | undefined): TraceHeaders | undefined {
  if (traceparent === undefined) return undefined;
  const parent = validTraceparent(traceparent);
  if (parent === undefined) return undefined;
  const state = tracestate?.trim();
  return state && state.length <= MAX_TRACESTATE_LENGTH && TRACESTATE_TEXT.test(state) ? { traceparent: parent, tracestate: state } : { traceparent: parent };
}

function headerText(raw: Buffer | string | (Buffer | string)[] | undefined): string | undefined {
  if (raw === undefined) return undefined;
  // a header repeated: the first traceparent wins; tracestate members join (W3C allows the split)
  if (Array.isArray(raw)) return raw.length === 0 ? undefined : raw.map((v) => v.toString()).join(',');
  return raw.toString();
}

/** The headers of a consumed Kafka record, as kafkajs hands them. */
export type RecordHeaders = IHeaders | undefined;

/** The trace context a consumed Kafka record carries, if any (read for every record a stage handles). */
export function recordTraceOf(headers: RecordHeaders): TraceHeaders | undefined {
  const parent = headers?.[TRACEPARENT];
  if (parent === undefined) return undefined;
  const text = headerText(Array.isArray(parent) ? parent[0] : parent);
  const traceparent = text === undefined ? undefined : validTraceparent(text);
  if (traceparent === undefined) return undefined;
  const state = headers![TRACESTATE];
  return state === undefined ? { traceparent } : traceContextOf(traceparent, headerText(state));
}

/** The trace context of an HTTP request's headers (Node joins a repeated header with ", "). */
export function requestTraceOf(headers: Record<string, string | string[] | undefined>): TraceHeaders | undefined {
  const parent = headers[TRACEPARENT];
  const state = headers[TRACESTATE];
  return traceContextOf(typeof parent === 'string' ? parent : undefined, Array.isArray(state) ? state.join(',') : state);
}

/** The trace id (32 hex) of a trace context, for log lines and delivery rows. */
export function traceIdOf(trace: TraceHeaders | undefined): string | undefined {
  return trace?.traceparent.slice(3, 35);
}

/** The parent (span) id (16 hex) a trace context names. */
export function parentIdOf(trace: TraceHeaders): string {
  return trace.traceparent.slice(36, 52);
}

/** Ids drawn per refill: one system call for this many new traces. */
const POOLED_IDS = 256;
/** A trace id (16 bytes) and a span id (8 bytes). */
const ID_BYTES = 24;
const pool = Buffer.allocUnsafe(POOLED_IDS * ID_BYTES);
let next = pool.length;
const HEX = Buffer.from('0123456789abcdef', 'latin1');
/** The header being written: the ids' hex goes between the fixed parts, then one string is made of it. */
const written = Buffer.from(`00-${ZERO_TRACE_ID}-${ZERO_SPAN_ID}-01`, 'latin1');

/**
 * A new trace: random trace and parent ids from a pooled buffer (refilled from the system's
 * generator every POOLED_IDS traces, so a webhook costs no system call and one string), marked
 * sampled so that a receiver that records traces keeps its spans of the delivery.
 */
export function newTraceparent(): string {
  for (;;) {
    if (next + ID_BYTES > pool.length) {
      randomFillSync(pool);
      next = 0;
    }
    let traceBits = 0;
    let spanBits = 0;
    let at = 3;
    for (let i = 0; i < ID_BYTES; i++) {
      const byte = pool[next + i]!;
      if (i < 16) traceBits |= byte;
      else spanBits |= byte;
      // the dash between the trace id and the span id
      if (i === 16) at++;
      written[at++] = HEX[byte >> 4]!;
      written[at++] = HEX[byte & 15]!;
    }
    next += ID_BYTES;
    // an all-zero id is invalid (W3C); the odds are nil, the check is free
    if (traceBits !== 0 && spanBits !== 0) return written.toString('latin1');
  }
}
