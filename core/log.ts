import pino, { type Logger as Pino } from 'pino';
import type { LogFormat, LogLevel } from './config';
import { REDACTED_VALUE } from './secrets/redacted-headers';

/** Fields a log line may carry; ids let a reader follow one event across stages. */
export interface LogFields {
  tenant_id?: string;
  event_id?: string;
  delivery_id?: string;
  destination_id?: string;
  ingester_id?: string;
  correlation_id?: string;
  request_id?: string;
  stage?: string;
  [key: string]: unknown;
}

/** A line as written (secrets redacted, errors as name and message), read back for the sinks. */
export interface LogRecord extends LogFields {
  ts: string;
  level: LogLevel;
  msg: string;
}

export type LogSink = (record: LogRecord) => void;

/** Where a logger's lines go: one line, with its newline, at a time. */
export type LogOutput = (line: string) => void;

let pending: string[] = [];
let flushScheduled = false;

/** Writes what is pending on stdout now; the exit handler calls it, and so may a fatal path. */
export function flushStdout(): void {
  flushScheduled = false;
  if (pending.length === 0) return;
  const text = pending.join('');
  pending = [];
  process.stdout.write(text);
}

/**
 * Lines for stdout, written once per turn of the event loop rather than once each: stdout is
 * synchronous on Linux (files and pipes), and a write per line costs a system call per
 * delivery under load. What is pending is written before the process exits, also when it
 * exits on an uncaught exception. (pino's asynchronous destination would lose, or reorder,
 * a write still in flight at `process.exit`; its synchronous flush fsyncs every time.)
 */
export function writeStdoutLine(line: string): void {
  pending.push(line);
  if (flushScheduled) return;
  flushScheduled = true;
  setImmediate(flushStdout);
}
process.on('exit', flushStdout);

/**
 * Names whose values never reach a log line or a sink, whatever logs them: credentials and the
 * secret-bearing members of configuration. At the top of a line they are pino's `redact` paths;
 * inside an object field (`*.secret`, `headers.authorization`, deeper) the walk below censors
 * them, and the value of a `{ name, value }` header whose name is one of them.
 */
export const SECRET_NAMES: ReadonlySet<string> = new Set([
  'secret', 'secrets', 'signing_secret', 'client_secret', 'webhook_secret', 'api_key', 'apikey', 'x-api-key',
  'password', 'passphrase', 'token', 'access_token', 'refresh_token', 'private_key', 'kek',
  'authorization', 'proxy-authorization', 'cookie', 'set-cookie',
]);
export const REDACTED_PATHS: readonly string[] = [...SECRET_NAMES, 'apiKey'].map((name) => (/^[A-Za-z_]+$/.test(name) ? name : `["${name}"]`));

/**
 * Readable lines for a terminal, rendered in this process (no worker thread to lose at exit).
 * pino-pretty (and its colour and date libraries) is loaded here, by a process that asks for
 * readable lines: one that writes JSON never loads it.
 */
export function prettyOutput(write: LogOutput = writeStdoutLine, colorize = Boolean(process.stdout.isTTY)): LogOutput {
  const { prettyFactory } = require('pino-pretty') as typeof import('pino-pretty');
  const pretty = prettyFactory({ colorize, timestampKey: 'ts', messageKey: 'msg', translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true });
  return (line) => write(pretty(line));
}

/** The output of a `LOG_FORMAT`. */
export function logOutput(format: LogFormat, write: LogOutput = writeStdoutLine): LogOutput {
  return format === 'pretty' ? prettyOutput(write) : write;
}

/** The output the pino instances of one logger tree write to; it keeps the line a sink asked for. */
class LineTap {
  capturing = false;
  line: string | undefined;
  constructor(private readonly out: LogOutput) {}
  write(line: string): void {
    if (this.capturing) this.line = line;
    this.out(line);
  }
}

interface Tree {
  tap: LineTap;
  sinks: LogSink[];
  /** Writes lines whose fields repeat a child's binding, merged in one object; every level passes (the logger checked its own). */
  flat: Pino;
}

let stampSecond = Number.NaN;
let stampPrefix = '';

/**
 * pino's `ts` member, now in ISO 8601 UTC as `Date#toISOString` writes it. Lines of one second
 * share its text, formatted once; only the milliseconds are written for each (a Date and its
 * formatting per line cost more than the rest of a delivery's line).
 */
function timestamp(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== stampSecond) {
    stampPrefix = `,"ts":"${new Date(second * 1000).toISOString().slice(0, 20)}`;
    stampSecond = second;
  }
  const millis = now - second * 1000;
  return `${stampPrefix}${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z"`;
}

function rootPino(level: LogLevel, tap: LineTap): Pino {
  return pino(
    {
      level,
      base: null,
      // a string level, as the log consumers (the `logs` topic, the logs API) read it
      formatters: { level: (label) => ({ level: label }), log: forLine },
      timestamp,
      redact: { paths: [...REDACTED_PATHS], censor: REDACTED_VALUE },
    },
    tap,
  );
}

/**
 * Structured log lines through pino: one JSON object per line (`level`, `ts`, `msg`, then the
 * fields) on stdout, or readable lines in `pretty` format; secrets redacted by path. Records go
 * to any sinks added later (the `logs` topic) as written, redacted too.
 */
export class Logger {
  private readonly pino: Pino;
  private readonly tree: Tree;
  /** The fields of this logger and the ones it is a child of, as given: a field given again in a call replaces its value. */
  private readonly bindings: LogFields;

  /** `from` is given by `child` only. */
  constructor(level: LogLevel = 'info', base: LogFields = {}, write: LogOutput = writeStdoutLine, sinks?: LogSink[], from?: { tree: Tree; pino: Pino; bindings: LogFields }) {
    if (from) {
      this.tree = from.tree;
      this.pino = from.pino.child(forLine(base));
      this.bindings = { ...from.bindings, ...base };
      return;
    }
    const tap = new LineTap(write);
    this.tree = { tap, sinks: sinks ?? [], flat: rootPino('debug', tap) };
    const root = rootPino(level, tap);
    this.pino = Object.keys(base).length > 0 ? root.child(forLine(base)) : root;
    this.bindings = { ...base };
  }

  /** A logger whose lines carry `fields` too (a request's id, a stage); it shares the sinks. */
  child(fields: LogFields): Logger {
    return new Logger(undefined, fields, undefined, undefined, { tree: this.tree, pino: this.pino, bindings: this.bindings });
  }

  addSink(sink: LogSink): void {
    this.tree.sinks.push(sink);
  }

  setLevel(level: LogLevel): void {
    this.pino.level = level;
  }

  debug(msg: string, fields?: LogFields): void {
    this.log('debug', msg, fields);
  }
  info(msg: string, fields?: LogFields): void {
    this.log('info', msg, fields);
  }
  warn(msg: string, fields?: LogFields): void {
    this.log('warn', msg, fields);
  }
  error(msg: string, fields?: LogFields): void {
    this.log('error', msg, fields);
  }

  /**
   * A line for the process's own output only, not for the sinks (the `logs` topic): for lines
   * whose row the sink derives from a record a stage writes anyway, such as a delivery outcome.
   */
  printOnly(level: LogLevel, msg: string, fields?: LogFields): void {
    this.write(level, msg, fields);
  }

  /**
   * One line through pino. pino writes a child's bindings and the call's fields one after the
   * other, so a field in both would appear twice in one JSON object (which readers take the
   * first or the last of): such a line is written once, merged, the call's value winning.
   */
  private write(level: LogLevel, msg: string, fields: LogFields | undefined): void {
    if (fields === undefined) return this.pino[level](msg);
    for (const key in fields) {
      if (key in this.bindings) {
        if (this.pino.isLevelEnabled(level)) this.tree.flat[level]({ ...this.bindings, ...fields }, msg);
        return;
      }
    }
    this.pino[level](fields, msg);
  }

  private log(level: LogLevel, msg: string, fields?: LogFields): void {
    const { tap, sinks } = this.tree;
    if (sinks.length === 0) return this.write(level, msg, fields);
    tap.capturing = true;
    try {
      this.write(level, msg, fields);
    } finally {
      tap.capturing = false;
    }
    const line = tap.line;
    if (line === undefined) return; // below the level
    tap.line = undefined;
    // the sinks get what was written: redacted, with errors as name and message
    const record = JSON.parse(line) as LogRecord;
    for (const sink of sinks) sink(record);
  }
}

/**
 * The fields of a line as it may be written: Errors, at any depth, as their name and message
 * (JSON has nothing else of them), and secrets inside object fields censored. The caller's
 * objects are never changed: what differs is copied.
 */
function forLine(fields: Record<string, unknown>): Record<string, unknown> {
  // pino's wildcard paths (`*.secret`) cost tens of microseconds a line, every line; this walk
  // runs only for a line with an object field, and a delivery's line has none
  for (const key in fields) {
    const v = fields[key];
    if (typeof v === 'object' && v !== null) return walk(fields, 0, false) as Record<string, unknown>;
  }
  return fields;
}

function walk(value: unknown, depth: number, censorSecrets: boolean): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message };
  if (typeof value !== 'object' || value === null || depth > 16) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    value.forEach((v, i) => {
      const plain = walk(v, depth + 1, true);
      if (plain !== v) (copy ??= [...value])[i] = plain;
    });
    return copy ?? value;
  }
  // dates, buffers, class instances: as their JSON has them
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return value;
  const obj = value as Record<string, unknown>;
  let copy: Record<string, unknown> | undefined;
  // a header as a pair, as the event records carry them
  const pairName = censorSecrets && typeof obj.name === 'string' && 'value' in obj ? obj.name.toLowerCase() : undefined;
  for (const key in obj) {
    const secret = censorSecrets && (SECRET_NAMES.has(key.toLowerCase()) || (key === 'value' && pairName !== undefined && SECRET_NAMES.has(pairName)));
    const plain = secret ? (obj[key] === undefined || obj[key] === null ? obj[key] : REDACTED_VALUE) : walk(obj[key], depth + 1, true);
    if (plain !== obj[key]) (copy ??= { ...obj })[key] = plain;
  }
  return copy ?? obj;
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
