import type { Attributes } from '@opentelemetry/api';
import type { RecordName, RecordTypes } from '../../platform/avro/records';
import { endSpan, isTracing, SpanKind, SPAN_ATTRIBUTES, spanTrace, startSpan } from '../../platform/tracing/tracing';
import type { AnyOutput, RecordStage, StageContext } from './stage';

/** The attributes of a record's span: where it was read and the ids it carries. */
function recordAttributes(value: unknown, topic: string): Attributes {
  const v = value as { tenant_id?: unknown; event_id?: unknown; ingester_id?: unknown; delivery_id?: unknown; destination_id?: unknown; attempt?: unknown };
  const attributes: Attributes = { 'messaging.system': 'kafka', 'messaging.operation.type': 'process', 'messaging.destination.name': topic };
  if (typeof v.tenant_id === 'string') attributes[SPAN_ATTRIBUTES.tenantId] = v.tenant_id;
  if (typeof v.event_id === 'string') attributes[SPAN_ATTRIBUTES.eventId] = v.event_id;
  if (typeof v.ingester_id === 'string') attributes[SPAN_ATTRIBUTES.ingesterId] = v.ingester_id;
  if (typeof v.delivery_id === 'string') attributes[SPAN_ATTRIBUTES.deliveryId] = v.delivery_id;
  if (typeof v.destination_id === 'string') attributes[SPAN_ATTRIBUTES.destinationId] = v.destination_id;
  if (typeof v.attempt === 'number') attributes[SPAN_ATTRIBUTES.attempt] = v.attempt;
  return attributes;
}

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
  const span = startSpan(`hookline.${stage.name}`, stage.spanKind ?? SpanKind.CONSUMER, ctx.trace, () => recordAttributes(value, stage.input.topic))!;
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
