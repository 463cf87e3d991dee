import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, createTraceState, trace, type Attributes, type Link, type Span, type TimeInput, type Tracer, type TracerProvider } from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { TracingConfig } from '../../core/config';
import { newTraceparent, parentIdOf, traceIdOf, type TraceHeaders } from './trace-context';

export { SpanKind, SpanStatusCode, type Span };

/** Attribute names of the pipeline's spans (the ids every log line carries, and what the step decided). */
export const SPAN_ATTRIBUTES = {
  tenantId: 'hookline.tenant_id',
  eventId: 'hookline.event_id',
  ingesterId: 'hookline.ingester_id',
  deliveryId: 'hookline.delivery_id',
  destinationId: 'hookline.destination_id',
  attempt: 'hookline.attempt',
  /** What the step came to: received, validated, passed, routed, delivered, retrying, held, stored... */
  outcome: 'hookline.outcome',
} as const;

/** A delivery's ids, as its records carry them. */
export interface DeliveryIds {
  tenant_id: string;
  event_id: string;
  ingester_id?: string;
  delivery_id?: string;
  destination_id?: string;
  attempt?: number;
}

/**
 * The attributes of a stage's span over one record of `topic` about a delivery (or an event,
 * without the delivery's ids): what it read and whose it is.
 */
export function recordSpanAttributes(topic: string, ids: DeliveryIds): Attributes {
  return {
    'messaging.system': 'kafka',
    'messaging.operation.type': 'process',
    'messaging.destination.name': topic,
    [SPAN_ATTRIBUTES.tenantId]: ids.tenant_id,
    [SPAN_ATTRIBUTES.eventId]: ids.event_id,
    ...(ids.ingester_id !== undefined ? { [SPAN_ATTRIBUTES.ingesterId]: ids.ingester_id } : {}),
    ...(ids.delivery_id !== undefined ? { [SPAN_ATTRIBUTES.deliveryId]: ids.delivery_id } : {}),
    ...(ids.destination_id !== undefined ? { [SPAN_ATTRIBUTES.destinationId]: ids.destination_id } : {}),
    ...(ids.attempt !== undefined ? { [SPAN_ATTRIBUTES.attempt]: ids.attempt } : {}),
  };
}

let tracer: Tracer | undefined;
let provider: RecordingProvider | undefined;

/** What the tracer is built from: the configuration's (core/config.ts), with the endpoint and the headers as values. */
export interface TracingOptions extends Omit<TracingConfig, 'endpoint' | 'headers'> {
  /** The OTLP/HTTP traces endpoint (`.../v1/traces`). */
  endpoint: string;
  serviceVersion?: string;
  /** Headers of every export request (a hosted collector's credentials). */
  headers: Readonly<Record<string, string>>;
}

/** A tracer provider of the SDK, which sends what it still holds when shut down. */
export interface RecordingProvider extends TracerProvider {
  shutdown(): Promise<void>;
}

/**
 * The OpenTelemetry SDK (./sdk.ts), loaded when a process first records spans: a process
 * without tracing never loads it, nor the exporter's HTTP and protobuf stack.
 */
function sdk(): typeof import('./sdk') {
  return require('./sdk') as typeof import('./sdk');
}

function install(own: RecordingProvider): () => Promise<void> {
  const previous = provider;
  provider = own;
  tracer = own.getTracer('hookline');
  void previous?.shutdown();
  return async () => {
    if (provider === own) {
      provider = undefined;
      tracer = undefined;
    }
    // spans still queued are sent before the process goes
    await own.shutdown();
  };
}

/**
 * Records spans and exports them by OTLP/HTTP (batched in the background) until the returned
 * function is called, which sends what is queued. Without this (no OTEL_EXPORTER_OTLP_*
 * endpoint) the process records no span at all: only the trace context travels.
 */
export function startTracing(options: TracingOptions): () => Promise<void> {
  return install(sdk().exportingProvider(options));
}

/**
 * Records spans into `exporter`, each as it ends (tests pass an InMemorySpanExporter), until the
 * returned function is called.
 */
export function installSpanExporter(exporter: SpanExporter, serviceName = 'hookline'): () => Promise<void> {
  return install(sdk().recordingProvider(exporter, serviceName));
}

/** True while spans are recorded in this process. */
export function isTracing(): boolean {
  return tracer !== undefined;
}

/** A span's attributes, made only when the span is: a function, so that nothing is built while no span is recorded. */
export type SpanAttributes = () => Attributes;

/**
 * A span of one record's step, child of the span its trace context names (a new trace without
 * one); undefined when this process records no spans, so that the hot path then makes none (nor
 * its attributes).
 */
export function startSpan(name: string, kind: SpanKind, parent: TraceHeaders | undefined, attributes?: SpanAttributes, startTime?: TimeInput): Span | undefined {
  if (!tracer) return undefined;
  let ctx = ROOT_CONTEXT;
  if (parent) {
    const flags = parent.traceparent.slice(53, 55);
    ctx = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: traceIdOf(parent)!,
      spanId: parentIdOf(parent),
      traceFlags: Number.parseInt(flags, 16),
      isRemote: true,
      ...(parent.tracestate ? { traceState: createTraceState(parent.tracestate) } : {}),
    });
  }
  return tracer.startSpan(name, { kind, attributes: attributes?.(), startTime }, ctx);
}

/** The trace context that names `span` as the parent of what follows, with the trace's state unchanged. */
export function spanTrace(span: Span, parent: TraceHeaders | undefined): TraceHeaders {
  const { traceId, spanId, traceFlags } = span.spanContext();
  const traceparent = `00-${traceId}-${spanId}-${traceFlags & 1 ? '01' : '00'}`;
  return parent?.tracestate ? { traceparent, tracestate: parent.tracestate } : { traceparent };
}

/**
 * The trace of work that enters here (a webhook, a replay): continued from `parent` when the
 * caller sent one, else new. With spans recorded, the entry's span and its context; else the
 * parent's context as it came (passed on unchanged), or a new trace context. `links` are made
 * with the span only.
 */
export function beginTrace(name: string, kind: SpanKind, parent: TraceHeaders | undefined, attributes?: SpanAttributes, links?: () => Link[]): { trace: TraceHeaders; span: Span | undefined } {
  const span = startSpan(name, kind, parent, attributes);
  if (span) {
    if (links) span.addLinks(links());
    return { trace: spanTrace(span, parent), span };
  }
  return { trace: parent ?? { traceparent: newTraceparent() }, span: undefined };
}

const NO_SPAN_ID = '0'.repeat(16);

/**
 * A link to a trace known by its id alone (a delivery row keeps no span id): OpenTelemetry records
 * a link with an all-zero span id when it carries attributes, which say what the trace was.
 */
export function traceLink(traceId: string, attributes: Attributes): Link {
  return { context: { traceId, spanId: NO_SPAN_ID, traceFlags: TraceFlags.SAMPLED, isRemote: true }, attributes };
}

/** Ends a span: failed when `err` is given (its class as error.type, its message as status). */
export function endSpan(span: Span, err?: unknown): void {
  if (err !== undefined) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
    span.setAttribute('error.type', err instanceof Error ? err.name : 'error');
  }
  span.end();
}
