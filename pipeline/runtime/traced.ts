import type { RecordName, RecordTypes } from '../../platform/avro/records';
import { endSpan, isTracing, recordSpanAttributes, SpanKind, spanTrace, startSpan, type DeliveryIds } from '../../platform/tracing/tracing';
import type { AnyOutput, RecordStage, StageContext } from './stage';

/**
 * Runs a stage's handler on one record inside the record's span in that stage
 * (`hookline.<stage>`, child of the span the record's trace context names), when this process
 * records spans: the handler sees the span and its trace context, and every output carries that
 * context on. Without spans recorded it is the bare handler call: no span, no object more; the
 * runner then copies the record's own trace context onto the outputs (stampVersion).
 */
export function handleInSpan<N extends RecordName>(stage: RecordStage<N>, value: RecordTypes[N], ctx: StageContext): Promise<AnyOutput[]> {
  // not async itself: the common case adds not even a promise to the handler's
  return stage.ownSpans || !isTracing() ? stage.handle(value, ctx) : handleTraced(stage, value, ctx);
}

async function handleTraced<N extends RecordName>(stage: RecordStage<N>, value: RecordTypes[N], ctx: StageContext): Promise<AnyOutput[]> {
  const span = startSpan(`hookline.${stage.name}`, stage.spanKind ?? SpanKind.CONSUMER, ctx.trace, () => recordSpanAttributes(stage.input.topic, value as DeliveryIds))!;
  const trace = spanTrace(span, ctx.trace);
  try {
    const outputs = await stage.handle(value, { ...ctx, trace, span });
    endSpan(span);
    return outputs.map((o) => ({ ...o, headers: { ...trace, ...o.headers } }) as AnyOutput);
  } catch (err) {
    endSpan(span, err);
    throw err;
  }
}
