import type { Logger } from '../../core/log';
import type { RecordName, RecordTypes } from '../../platform/avro/records';
import { TRACEPARENT, TRACESTATE, type TraceHeaders } from '../../platform/tracing/trace-context';
import type { Span, SpanKind } from '../../platform/tracing/tracing';
import { handleInSpan } from './traced';

/** A record a stage wants written; the runner encodes it and produces it with acks=all. */
export interface Output<N extends RecordName = RecordName> {
  topic: string;
  key: string;
  record: N;
  value: RecordTypes[N];
  headers?: Record<string, string>;
}

/**
 * The header of a record decided from an input that may have been decided before (an uncertain
 * input, StageContext.uncertain): the record may repeat one already written, so the stage that
 * reads it checks, as it does its own uncertain inputs, whether its work was already done.
 */
export const UNCERTAIN_HEADER = 'hookline-uncertain';

/**
 * The header of a record a chain handed on to the next stage itself: a consumer that reads the
 * record back in that stage's place leaves it alone (it has been handled).
 */
export const CHAINED_HEADER = 'hookline-chained';

/**
 * The header of a record written without its body (an empty one in its place): a chain's output
 * that the next stage got in memory, whose record only the sink reads (for the state's row, which
 * has no body). The body travels on the records that a stage reads back: the received event and
 * the delivery task.
 */
export const BODY_OMITTED_HEADER = 'hookline-body-omitted';

export type AnyOutput = { [N in RecordName]: Output<N> }[RecordName];

/** The output as written when the next stage of a chain already has it: a webhook event without its body. */
function handedOn(o: AnyOutput, next: string): AnyOutput {
  if (o.record !== 'WebhookEvent') return { ...o, headers: { ...o.headers, [CHAINED_HEADER]: next } };
  return { ...o, value: { ...o.value, body: EMPTY_BODY, body_key: null }, headers: { ...o.headers, [CHAINED_HEADER]: next, [BODY_OMITTED_HEADER]: '1' } };
}
const EMPTY_BODY = Buffer.alloc(0);

export interface StageContext {
  log: Logger;
  /** Where the input record sits in its topic. */
  position: { partition: number; offset: string };
  /** The input record as consumed, for a dead letter that must carry its original bytes. */
  source: { topic: string; key: Buffer | null; value: Buffer };
  /**
   * The configuration version the input record names (0: written before versions). The runtime
   * has waited for this process to apply it before the handler runs, and names the version the
   * decision was made with on every output (CONFIG_VERSION_HEADER).
   */
  configVersion: bigint;
  /**
   * The W3C trace context of the record (its `traceparent` and `tracestate` headers), or inside
   * the stage's span, that span's: what the outputs carry on (TRACEPARENT), and the trace a log
   * line names (`trace_id`). Undefined for a record written without one.
   */
  trace?: TraceHeaders;
  /** The record's span in this stage, only while spans are recorded: the handler notes what it decided. */
  span?: Span;
  /**
   * The record may have been handled before, by another member of the group or an earlier run of
   * this process: it lies between the group's last commit and the end of the partition when this
   * member got it (what a previous owner could have handled without committing), or its writer
   * said so (UNCERTAIN_HEADER). Only such records are worth checking against what was done
   * already (a delivery's attempt); every other record is new.
   */
  uncertain?: boolean;
  /**
   * Frees the place the record holds in its key's queue (a destination's share of requests at
   * once) before the handler returns, when what is left of its work concerns no receiver (a
   * delivery waiting for another process's attempt). Set by the windowed runner; the place is
   * freed when the handler returns in any case.
   */
  releasePlace?: () => void;
}

/**
 * A stage that turns each input record into output records. The handler may have side
 * effects through the ports its factory was given; the runtime (consume.ts and the runners on
 * it) owns everything Kafka: consuming, batching, commits, retries and dead letters.
 */
export interface RecordStage<N extends RecordName = RecordName> {
  kind: 'record';
  name: string;
  input: { topic: string; record: N };
  /**
   * Topics its outputs may go to (from the consumer table in core/topics.ts): the runner treats
   * an output elsewhere as the handler's failure. Unset, any topic is allowed.
   */
  writes?: readonly string[];
  /** How many records of one batch are handled at once; outputs keep input order. */
  concurrency?: number;
  /**
   * The failure policy: times `handle` is tried on one record before the record becomes a dead
   * letter (with the reason and its original bytes) and the partition goes on. Default 3.
   */
  attempts?: number;
  handle(value: RecordTypes[N], ctx: StageContext): Promise<AnyOutput[]>;
  /** The kind of its spans (`hookline.<name>`); default CONSUMER. */
  spanKind?: SpanKind;
  /**
   * True when the handler makes the spans itself and puts their trace context on its outputs (a
   * chain: one span per stage in it), instead of one span around the whole handler.
   */
  ownSpans?: boolean;
}

/** Throws when an output goes to a topic the stage does not declare it writes. */
export function checkWrites(stage: { name: string; writes?: readonly string[] }, outputs: readonly AnyOutput[]): void {
  if (!stage.writes) return;
  for (const o of outputs) {
    if (!stage.writes.includes(o.topic)) throw new Error(`stage ${stage.name} wrote to ${o.topic}, which it does not declare`);
  }
}

/** The trace context an output names (a stage's span put it there), if any. */
function traceOfHeaders(headers: Record<string, string> | undefined): TraceHeaders | undefined {
  const traceparent = headers?.[TRACEPARENT];
  if (traceparent === undefined) return undefined;
  const tracestate = headers![TRACESTATE];
  return tracestate === undefined ? { traceparent } : { traceparent, tracestate };
}

export type Stage = RecordStage<'WebhookEvent'> | RecordStage<'DeliveryTask'> | RecordStage<'DeliveryOutcome'>;

/**
 * Stages that follow one another run as one: each record of the first stage's input goes
 * through the first handler, and every output bound for the next stage's input topic also goes
 * straight into the next handler, and so on. Every output is still written, so each state keeps
 * its record on its topic; what is saved is reading those records back (a consume, a decode and
 * a batch) between stages of the same process. The chain takes the first stage's name, group
 * and input; a downstream handler logs under its own name and sees the chain's input record as
 * its source (a dead letter it writes carries the bytes as they were received). An event handed
 * on is written without its body (BODY_OMITTED_HEADER): its reader already has it, and the record
 * is read back only for its state (a crash reads the chain's input again, body and all).
 */
export function chainStages<N extends RecordName>(first: RecordStage<N>, ...rest: RecordStage<N>[]): RecordStage<N> {
  const stages = [first, ...rest];
  // a chained stage logs under its own name: its logger is made once per runner's logger, not per record
  const loggers = new WeakMap<Logger, Logger[]>();
  const logsOf = (log: Logger) => {
    let children = loggers.get(log);
    if (!children) loggers.set(log, (children = stages.map((s, i) => (i === 0 ? log : log.child({ stage: s.name })))));
    return children;
  };
  return {
    kind: 'record',
    name: first.name,
    input: first.input,
    writes: first.writes && rest.every((s) => s.writes) ? [...new Set(stages.flatMap((s) => s.writes!))] : undefined,
    concurrency: first.concurrency,
    attempts: first.attempts,
    // each stage of the chain has its span: an output handed on carries its stage's trace context
    ownSpans: true,
    async handle(value, ctx) {
      const outputs: AnyOutput[] = [];
      let inputs: { value: RecordTypes[N]; trace: TraceHeaders | undefined }[] = [{ value, trace: ctx.trace }];
      for (let i = 0; i < stages.length && inputs.length > 0; i++) {
        const next = stages[i + 1];
        const passed: typeof inputs = [];
        const stageCtx = i === 0 ? ctx : { ...ctx, log: logsOf(ctx.log)[i]! };
        for (const input of inputs) {
          // without spans recorded every stage sees the chain's input's trace context: no new context
          const produced = await handleInSpan(stages[i]!, input.value, input.trace === stageCtx.trace ? stageCtx : { ...stageCtx, trace: input.trace });
          checkWrites(stages[i]!, produced);
          for (const o of produced) {
            if (next && o.topic === next.input.topic) {
              passed.push({ value: o.value as RecordTypes[N], trace: traceOfHeaders(o.headers) ?? input.trace });
              outputs.push(handedOn(o, next.name));
            } else outputs.push(o);
          }
        }
        inputs = passed;
      }
      return outputs;
    },
  };
}
