import { readFileSync } from 'node:fs';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, SimpleSpanProcessor, TraceIdRatioBasedSampler, type Sampler, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { RecordingProvider, TracingOptions } from './tracing';

// The OpenTelemetry SDK's side of tracing: the tracer provider with its processor, sampler and
// limits, and the OTLP/HTTP exporter, built from the configuration's values. Only ./tracing.ts
// loads this module, when a process begins to record spans.

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

function provider(processor: SpanProcessor, serviceName: string, serviceVersion: string | undefined, settings?: TracerSettings): RecordingProvider {
  return new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName, ...(serviceVersion ? { [ATTR_SERVICE_VERSION]: serviceVersion } : {}) }),
    spanProcessors: [processor],
    ...(settings ? { sampler: samplerOf(settings), generalLimits: settings.attributeLimits, spanLimits: settings.spanLimits } : {}),
  });
}

/** A provider that batches spans and exports them by OTLP/HTTP. */
export function exportingProvider(options: TracingOptions): RecordingProvider {
  const { scheduledDelayMs, exportTimeoutMs, maxQueueSize, maxExportBatchSize } = options.batch;
  const processor = new BatchSpanProcessor(otlpExporter(options), { scheduledDelayMillis: scheduledDelayMs, exportTimeoutMillis: exportTimeoutMs, maxQueueSize, maxExportBatchSize });
  return provider(processor, options.serviceName, options.serviceVersion, options);
}

/** A provider that hands each span to `exporter` as it ends. */
export function recordingProvider(exporter: SpanExporter, serviceName: string): RecordingProvider {
  return provider(new SimpleSpanProcessor(exporter), serviceName, undefined);
}
