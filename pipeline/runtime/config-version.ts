import type { IHeaders } from 'kafkajs';
import type { Logger } from '../../core/log';
import type { TraceHeaders } from '../../platform/tracing/trace-context';
import type { AnyOutput } from './stage';
import { CONFIG_VERSION_HEADER } from '../../core/config-version';

export { CONFIG_VERSION_HEADER };

/** What the runtime needs of the configuration store: its version, and a way to wait for one. */
export interface ConfigVersions {
  /** The newest configuration version applied in this process. */
  readonly version: bigint;
  /** True once `version` has reached `v`; false when `timeoutMs` passed first. */
  waitForVersion(v: bigint, timeoutMs: number): Promise<boolean>;
}

/** How long warnings about late configuration are held back after one, to keep the log readable. */
const WARN_INTERVAL_MS = 10_000;

const DECIMAL = /^\d{1,19}$/;

/** The version a consumed record names; 0 for a record written before versions (or without one). */
export function requiredVersion(headers: IHeaders | undefined): bigint {
  const raw = headers?.[CONFIG_VERSION_HEADER];
  const text = Array.isArray(raw) ? raw[0]?.toString() : raw?.toString();
  return text !== undefined && DECIMAL.test(text) ? BigInt(text) : 0n;
}

/**
 * `outputs` with the header naming `version`, and the trace context `trace` (the input's) on
 * those that carry none of their own (a stage's span puts its own there). Runs for every output
 * of every stage: each output and its headers are made as literals of one shape (one spread at
 * most), which V8 builds several times faster than spreads of varying objects.
 */
export function stampVersion(outputs: readonly AnyOutput[], version: bigint, trace?: TraceHeaders): AnyOutput[] {
  const value = version.toString();
  return outputs.map((o) => {
    let headers: Record<string, string>;
    if (o.headers === undefined) {
      if (trace === undefined) headers = { [CONFIG_VERSION_HEADER]: value };
      else if (trace.tracestate === undefined) headers = { traceparent: trace.traceparent, [CONFIG_VERSION_HEADER]: value };
      else headers = { traceparent: trace.traceparent, tracestate: trace.tracestate, [CONFIG_VERSION_HEADER]: value };
    } else if (trace === undefined) headers = { ...o.headers, [CONFIG_VERSION_HEADER]: value };
    else if (trace.tracestate === undefined) headers = { traceparent: trace.traceparent, ...o.headers, [CONFIG_VERSION_HEADER]: value };
    else headers = { traceparent: trace.traceparent, tracestate: trace.tracestate, ...o.headers, [CONFIG_VERSION_HEADER]: value };
    // every member of Output, named
    return { topic: o.topic, key: o.key, record: o.record, value: o.value, headers } as AnyOutput;
  });
}

/**
 * Holds a stage's decision until this process knows the configuration its input was decided
 * with, within bounds: past `waitMs` the record goes ahead with what this process has (never
 * blocked for good, never dropped), and a warning says so at most once per interval. Without a
 * store (a runner in a tool or test) nothing waits and outputs carry their input's version.
 */
export class ConfigGate {
  private lastWarning = -Infinity;
  private wentAhead = 0;

  constructor(
    private readonly versions: ConfigVersions | undefined,
    private readonly waitMs: number,
    private readonly log: Logger,
  ) {}

  /**
   * Undefined when the decision may be made now: this process has `required` already (the common
   * case costs no promise and no timer), or the record asks for nothing (version 0: written before
   * versions). Otherwise a promise that resolves once it has, or once the wait is over.
   */
  ready(required: bigint): Promise<void> | undefined {
    const versions = this.versions;
    if (!versions || required === 0n || versions.version >= required) return undefined;
    return versions.waitForVersion(required, this.waitMs).then((reached) => {
      if (!reached) this.noteWentAhead(required, versions.version);
    });
  }

  /**
   * The version a decision made now was made with: the input's, or this process's if newer. Read
   * after the decision, so that whatever the handler saw (its own writes included) is covered.
   */
  decided(required: bigint): bigint {
    const own = this.versions?.version ?? 0n;
    return own > required ? own : required;
  }

  private noteWentAhead(required: bigint, have: bigint): void {
    this.wentAhead++;
    const now = Date.now();
    if (now - this.lastWarning < WARN_INTERVAL_MS) return;
    this.lastWarning = now;
    this.log.warn('configuration not caught up in time; records decided with what this process has', {
      required_version: required.toString(),
      config_version: have.toString(),
      wait_ms: this.waitMs,
      records: this.wentAhead,
    });
    this.wentAhead = 0;
  }
}
