import type { LogLevel } from './config';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

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

export interface LogRecord extends LogFields {
  ts: string;
  level: LogLevel;
  msg: string;
}

export type LogSink = (record: LogRecord) => void;

let pending: string[] = [];
let flushScheduled = false;

function flushStdout(): void {
  flushScheduled = false;
  if (pending.length === 0) return;
  const text = pending.join('');
  pending = [];
  process.stdout.write(text);
}

/**
 * Lines for stdout, written once per turn of the event loop rather than once each: stdout is
 * synchronous on Linux (files and pipes), and a write per line costs a system call per
 * delivery under load. What is pending is written before the process exits.
 */
export function writeStdoutLine(line: string): void {
  pending.push(line);
  if (flushScheduled) return;
  flushScheduled = true;
  setImmediate(flushStdout);
}
process.on('exit', flushStdout);

/** Structured JSON lines on stdout, plus any sinks added later (e.g. the ClickHouse log table). */
export class Logger {
  private readonly sinks: LogSink[] = [];
  private readonly baseHasObject: boolean;

  constructor(
    private level: LogLevel = 'info',
    private readonly base: LogFields = {},
    private readonly write: (line: string) => void = writeStdoutLine,
    sinks?: LogSink[],
  ) {
    if (sinks) this.sinks = sinks;
    this.baseHasObject = hasObjectField(base);
  }

  child(fields: LogFields): Logger {
    return new Logger(this.level, { ...this.base, ...fields }, this.write, this.sinks);
  }

  addSink(sink: LogSink): void {
    this.sinks.push(sink);
  }

  setLevel(level: LogLevel): void {
    this.level = level;
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
    this.log(level, msg, fields, false);
  }

  private log(level: LogLevel, msg: string, fields?: LogFields, toSinks = true): void {
    if (RANK[level] < RANK[this.level]) return;
    const record: LogRecord = { ts: new Date().toISOString(), level, msg, ...this.base, ...fields };
    // a replacer slows every stringify down; only a field that is an object can hold an Error
    this.write(`${this.baseHasObject || hasObjectField(fields) ? JSON.stringify(record, errorReplacer) : JSON.stringify(record)}\n`);
    if (toSinks) for (const sink of this.sinks) sink(record);
  }
}

function hasObjectField(fields: LogFields | undefined): boolean {
  if (!fields) return false;
  for (const key in fields) if (typeof fields[key] === 'object' && fields[key] !== null) return true;
  return false;
}

function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message };
  return value;
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
