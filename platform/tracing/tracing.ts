import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, createTraceState, trace, type Attributes, type Link, type Span, type TimeInput, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { readFileSync } from 'node:fs';
import { AlwaysOffSampler, AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, SimpleSpanProcessor, TraceIdRatioBasedSampler, type Sampler, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ATTR_ERROR_TYPE, ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
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
let provider: BasicTracerProvider | undefined;

/** What the tracer is built from: the configuration's (core/config.ts), with the endpoint and the headers as values. */
export interface TracingOptions extends Omit<TracingConfig, 'endpoint' | 'headers'> {
  /** The OTLP/HTTP traces endpoint (`.../v1/traces`). */
  endpoint: string;
  serviceVersion?: string;
  /** Headers of every export request (a hosted collector's credentials). */
  headers: Readonly<Record<string, string>>;
}

type ExporterConfig = NonNullable<ConstructorParameters<typeof OTLPTraceExporter>[0]>;

/** The variables the exporter would read headers from itself (core/config.ts has read them). */
const HEADER_VARIABLES = ['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS'] as const;

/**
 * The OTLP/HTTP exporter, with the headers it is given and no others. It would merge the headers
 * of the environment's variables under them, name by name, where the configuration lets the
 * traces variable replace the general one whole; so it is made with those variables out of its
 * sight (the constructor is where it reads them, synchronously).
 */
function otlpExporter(options: TracingOptions): OTLPTraceExporter {
  const saved = HEADER_VARIABLES.map((name) => [name, process.env[name]] as const);
  for (const name of HEADER_VARIABLES) delete process.env[name];
  try {
    const { ca, cert, key } = options.tls;
    return new OTLPTraceExporter({
      url: options.endpoint,
      headers: { ...options.headers },
      timeoutMillis: options.timeoutMs,
      compression: options.compression as ExporterConfig['compression'],
      // given whole, so that the exporter reads no certificate variable itself
      httpAgentOptions: { keepAlive: true, ...(ca ? { ca: readFileSync(ca) } : {}), ...(cert && key ? { cert: readFileSync(cert), key: readFileSync(key) } : {}) },
    });
  } finally {
    for (const [name, value] of saved) if (value !== undefined) process.env[name] = value;
  }
}

/** OTEL_TRACES_SAMPLER's sampler: its root decision, under the parent's sampled flag for `parentbased_`. */
function samplerOf(options: Pick<TracingOptions, 'sampler' | 'samplerRatio'>): Sampler {
  const name = options.sampler.replace(/^parentbased_/, '');
  const root = name === 'always_off' ? new AlwaysOffSampler() : name === 'traceidratio' ? new TraceIdRatioBasedSampler(options.samplerRatio) : new AlwaysOnSampler();
  return options.sampler.startsWith('parentbased_') ? new ParentBasedSampler({ root }) : root;
}

/** The tracer's own settings, every one given: the SDK falls back to the environment for what is not. */
type TracerSettings = Pick<TracingOptions, 'sampler' | 'samplerRatio' | 'attributeLimits' | 'spanLimits'>;

function install(processor: SpanProcessor, serviceName: string, serviceVersion: string | undefined, settings?: TracerSettings): () => Promise<void> {
  const own = new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName, ...(serviceVersion ? { [ATTR_SERVICE_VERSION]: serviceVersion } : {}) }),
    spanProcessors: [processor],
    ...(settings ? { sampler: samplerOf(settings), generalLimits: settings.attributeLimits, spanLimits: settings.spanLimits } : {}),
  });
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
  const { scheduledDelayMs, exportTimeoutMs, maxQueueSize, maxExportBatchSize } = options.batch;
  const processor = new BatchSpanProcessor(otlpExporter(options), { scheduledDelayMillis: scheduledDelayMs, exportTimeoutMillis: exportTimeoutMs, maxQueueSize, maxExportBatchSize });
  return install(processor, options.serviceName, options.serviceVersion, options);
}

/**
 * Records spans into `exporter`, each as it ends (tests pass an InMemorySpanExporter), until the
 * returned function is called.
 */
export function installSpanExporter(exporter: SpanExporter, serviceName = 'hookline'): () => Promise<void> {
  return install(new SimpleSpanProcessor(exporter), serviceName, undefined);
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
    span.setAttribute(ATTR_ERROR_TYPE, err instanceof Error ? err.name : 'error');
  }
  span.end();
}
