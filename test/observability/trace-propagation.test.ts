import type { KafkaMessage } from 'kafkajs';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { Logger } from '../../core/log';
import type { DeliveryFlow, Destination, Ingester } from '../../core/model';
import { topicNames } from '../../core/topics';
import type { WebhookEvent } from '../../platform/avro/records';
import { MAX_TRACESTATE_LENGTH, newTraceparent, recordTraceOf, requestTraceOf, validTraceparent } from '../../platform/tracing/trace-context';
import { installSpanExporter, isTracing, startSpan } from '../../platform/tracing/tracing';
import { outboundHeaders } from '../../pipeline/deliver/stage';
import { filterStage } from '../../pipeline/filter/stage';
import { routeStage } from '../../pipeline/route/stage';
import { CONFIG_VERSION_HEADER, ConfigGate } from '../../pipeline/runtime/config-version';
import type { ConsumedBatch, Consuming, EncodedOutput, RunnerDeps } from '../../pipeline/runtime/consume';
import { contextOf, handleRecord } from '../../pipeline/runtime/run-stage';
import { CHAINED_HEADER, chainStages } from '../../pipeline/runtime/stage';
import { validateStage } from '../../pipeline/validate/stage';
import { SpanKind } from '@opentelemetry/api';

const PARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('W3C trace context', () => {
  it('takes a valid traceparent as it is, a later version or upper case in its version 00 form, and nothing else', () => {
    expect(validTraceparent(PARENT)).toBe(PARENT);
    expect(validTraceparent(PARENT.toUpperCase())).toBe(PARENT);
    expect(validTraceparent(`01${PARENT.slice(2)}-later-fields`)).toBe(PARENT);
    for (const bad of ['', 'garbage', `ff${PARENT.slice(2)}`, PARENT.replace('4bf92f3577b34da6a3ce929d0e0e4736', '0'.repeat(32)), PARENT.replace('00f067aa0ba902b7', '0'.repeat(16)), PARENT.slice(0, 54), `${PARENT}0`, PARENT.replace('-01', '-1x')]) {
      expect(validTraceparent(bad)).toBeUndefined();
    }
  });

  it('reads a request\'s headers, keeping a tracestate only within its bound and printable', () => {
    expect(requestTraceOf({ traceparent: PARENT, tracestate: 'a=1, b=2' })).toEqual({ traceparent: PARENT, tracestate: 'a=1, b=2' });
    expect(requestTraceOf({ traceparent: PARENT, tracestate: ['a=1', 'b=2'] })).toEqual({ traceparent: PARENT, tracestate: 'a=1,b=2' });
    expect(requestTraceOf({ traceparent: PARENT, tracestate: `a=${'x'.repeat(MAX_TRACESTATE_LENGTH)}` })).toEqual({ traceparent: PARENT });
    expect(requestTraceOf({ traceparent: PARENT, tracestate: 'a=\u0001' })).toEqual({ traceparent: PARENT });
    expect(requestTraceOf({ tracestate: 'a=1' })).toBeUndefined();
    expect(requestTraceOf({ traceparent: [PARENT, PARENT] })).toBeUndefined();
  });

  it('reads a Kafka record\'s headers as kafkajs hands them (bytes)', () => {
    expect(recordTraceOf({ traceparent: Buffer.from(PARENT), tracestate: Buffer.from('v=1') })).toEqual({ traceparent: PARENT, tracestate: 'v=1' });
    expect(recordTraceOf({ traceparent: [Buffer.from(PARENT)] })).toEqual({ traceparent: PARENT });
    expect(recordTraceOf({ traceparent: Buffer.from('00-bad') })).toBeUndefined();
    expect(recordTraceOf(undefined)).toBeUndefined();
    expect(recordTraceOf({ traceparent: [] })).toBeUndefined();
  });

  it('begins new traces with random ids, sampled, across refills of the pool', () => {
    const made = Array.from({ length: 1_000 }, () => newTraceparent());
    for (const t of made) expect(validTraceparent(t)).toBe(t);
    expect(made.every((t) => t.endsWith('-01'))).toBe(true);
    expect(new Set(made.map((t) => t.slice(3, 35))).size).toBe(made.length);
    expect(new Set(made.map((t) => t.slice(36, 52))).size).toBe(made.length);
  });

  it('goes to the receiver in the delivery\'s headers, beside the signed ones', () => {
    const task = { delivery_id: 'dlv_1', correlation_id: 'cor_1', content_type: 'application/json', body: Buffer.from('{}'), hops: 0 } as never;
    const dest = { signing_secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', auth: null } as unknown as Destination;
    const headers = outboundHeaders(task, dest, 1_790_000_000_000, { traceparent: PARENT, tracestate: 'v=1' });
    expect([headers.traceparent, headers.tracestate]).toEqual([PARENT, 'v=1']);
    expect(outboundHeaders(task, dest, 1_790_000_000_000, { traceparent: PARENT }).tracestate).toBeUndefined();
    // the signature does not cover them
    expect(headers['webhook-signature']).toBe(outboundHeaders(task, dest, 1_790_000_000_000)['webhook-signature']);
  });
});

/**
 * The validate chain as the runtime runs it on a consumed record (handleRecord, contextOf), with
 * the configuration in memory and outputs encoded as they are (no Kafka): which trace context
 * each output carries, with spans recorded and without.
 */
describe('trace context through a stage', () => {
  const topics = topicNames('tp.');
  const T = 'tenant-tp';
  const now = new Date().toISOString();
  const ingester: Ingester = { kind: 'ingester', id: 'ing_1', tenant_id: T, name: 'i', provider: 'none', config: {}, filters: [], created_at: now, updated_at: now };
  const destination = { kind: 'destination', id: 'dst_1', tenant_id: T, name: 'd', url: 'https://example.test/hook', status: 'active', signing_secret: 'whsec_x', disabled_reason: null, created_at: now, updated_at: now } as Destination;
  const flow: DeliveryFlow = { kind: 'flow', id: 'flw_1', tenant_id: T, name: 'f', ingester_id: 'ing_1', destination_ids: ['dst_1'], created_at: now, updated_at: now };
  const config = { get: (kind: string) => (kind === 'ingester' ? ingester : destination), list: () => [flow] } as never;
  const chain = chainStages(validateStage(topics, config), filterStage(topics, config), routeStage(topics, config, 10));
  const event: WebhookEvent = {
    event_id: 'evt_1', tenant_id: T, ingester_id: 'ing_1', correlation_id: 'cor_1', received_at: Date.now(), method: 'POST', query: '',
    headers: [], content_type: 'application/json', body: Buffer.from('{}'), source_ip: null, event_type: null, hops: 0,
  };
  const log = new Logger('error');
  const consuming = {
    log,
    config: new ConfigGate(undefined, 0, log),
    stopped: () => false,
    encode: async (outputs) => outputs.map((o) => ({ topic: o.topic, key: o.key, value: Buffer.alloc(0), headers: o.headers })),
  } as Partial<Consuming> as Consuming;
  const deps = { log } as RunnerDeps;
  const batch = { topic: topics.received, partition: 0, uncertain: () => false } as Partial<ConsumedBatch> as ConsumedBatch;
  const run = (headers: KafkaMessage['headers']): Promise<EncodedOutput[]> => {
    const message = { offset: '5', key: null, value: Buffer.alloc(0), headers };
    return handleRecord(chain, deps, consuming, event, contextOf(batch, consuming, message));
  };
  const byTopic = (outs: EncodedOutput[]) => Object.fromEntries(outs.map((o) => [o.topic, o.headers ?? {}]));

  it('without an exporter, copies the record\'s trace context onto every output unchanged and records no span', async () => {
    expect(isTracing()).toBe(false);
    expect(startSpan('hookline.test', SpanKind.INTERNAL, { traceparent: PARENT })).toBeUndefined();
    const outs = byTopic(await run({ traceparent: Buffer.from(PARENT), tracestate: Buffer.from('v=1'), [CONFIG_VERSION_HEADER]: Buffer.from('3') }));
    expect(Object.keys(outs).sort()).toEqual([topics.deliveryRequested, topics.filtered, topics.validated].sort());
    // the same parent id on every output: no stage put a span of its own in between
    for (const headers of Object.values(outs)) expect([headers.traceparent, headers.tracestate, headers[CONFIG_VERSION_HEADER]]).toEqual([PARENT, 'v=1', '3']);
    expect([outs[topics.validated]![CHAINED_HEADER], outs[topics.filtered]![CHAINED_HEADER]]).toEqual(['filter', 'route']);
    // a record written without a trace context gets none made up along the way
    for (const headers of Object.values(byTopic(await run({})))) expect(headers.traceparent).toBeUndefined();
  });

  it('with an exporter, records one span per stage of the chain, each output naming the span of the stage that wrote it', async () => {
    const exporter = new InMemorySpanExporter();
    const uninstall = installSpanExporter(exporter);
    try {
      const outs = byTopic(await run({ traceparent: Buffer.from(PARENT), tracestate: Buffer.from('v=1') }));
      const spans = exporter.getFinishedSpans();
      expect(spans.map((s) => s.name)).toEqual(['hookline.validate', 'hookline.filter', 'hookline.route']);
      const [validate, filter, route] = spans as [typeof spans[number], typeof spans[number], typeof spans[number]];
      expect(spans.every((s) => s.spanContext().traceId === '4bf92f3577b34da6a3ce929d0e0e4736' && s.kind === SpanKind.CONSUMER)).toBe(true);
      expect([validate.parentSpanContext?.spanId, filter.parentSpanContext?.spanId, route.parentSpanContext?.spanId]).toEqual(['00f067aa0ba902b7', validate.spanContext().spanId, filter.spanContext().spanId]);
      expect(validate.spanContext().traceState?.get('v')).toBe('1');
      const parentIn = (topic: string) => outs[topic]!.traceparent!.slice(36, 52);
      expect([parentIn(topics.validated), parentIn(topics.filtered), parentIn(topics.deliveryRequested)]).toEqual([validate, filter, route].map((s) => s.spanContext().spanId));
      expect(outs[topics.deliveryRequested]!.tracestate).toBe('v=1');
      expect([validate.attributes['hookline.outcome'], filter.attributes['hookline.outcome'], route.attributes['hookline.outcome']]).toEqual(['validated', 'passed', 'routed']);
      expect(route.attributes['hookline.event_id']).toBe('evt_1');
    } finally {
      await uninstall();
    }
    expect(isTracing()).toBe(false);
  });
});
