import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { HotHistogram, PendingCount, type HistogramSeries } from './hot';

/**
 * The Prometheus metrics of this process: one registry, the Node process metrics under their
 * standard names, and the pipeline's own under `hookline_`. Every label set is fixed or bounded
 * here; the recorders below touch series bound once, and those of every webhook, delivery and
 * Kafka request are plain numbers until a scrape reads them (./hot.ts), so a record costs an
 * addition, never a label string built or hashed for it.
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry });

/**
 * What the deliver stage did with one delivery task: the result of its attempt (the first five),
 * or why it made none (the last four). `exhausted`, `gone`, `refused` and `inactive` send the
 * delivery to the dead-letter topic.
 */
export const DELIVERY_OUTCOMES = [
  /** The destination answered 2xx. */
  'delivered',
  /** The attempt failed; the delivery waits in the delay topics for its next one. */
  'retrying',
  /** The attempt failed and the retry schedule is used up. */
  'exhausted',
  /** The destination answered 410 Gone: it is disabled. */
  'gone',
  /** The egress guard refused the destination's address: no request went out. */
  'refused',
  /** The destination was deleted or disabled: no attempt. */
  'inactive',
  /** The destination's circuit breaker is open (here or in another deliver process): no attempt, the delivery waits. */
  'breaker_open',
  /** The destination is paused: the delivery is held until it is resumed. */
  'held',
  /** The destination's rate limit: the delivery waits for its send slot. */
  'paced',
  /** The destination's transformation returned null: nothing was sent. */
  'dropped',
] as const;
export type DeliveryOutcomeLabel = (typeof DELIVERY_OUTCOMES)[number];

/** Why a Hook URL refused a webhook, from the status it answered. */
export const INGEST_REFUSALS = ['rate_limited', 'too_large', 'unknown_hook', 'suspended', 'too_many_hops', 'invalid', 'unavailable', 'error'] as const;
export type IngestRefusal = (typeof INGEST_REFUSALS)[number];

const deliveries = new Counter({
  name: 'hookline_deliveries_total',
  help: 'Delivery tasks the deliver stage handled, by outcome: the result of the attempt, or why none was made.',
  labelNames: ['outcome'] as const,
  registers: [registry],
  collect: () => {
    for (const outcome of DELIVERY_OUTCOMES) deliveryCounters[outcome].flush();
  },
});

const deliveryDuration = new HotHistogram(
  'hookline_delivery_duration_seconds',
  'Duration of outbound delivery attempts, from the request to the end of the answer (or the failure), by outcome.',
  'outcome',
  [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60],
  registry,
);

const ingestRequests = new Counter({
  name: 'hookline_ingest_requests_total',
  help: 'Webhooks POSTed to Hook URLs: accepted (Kafka has them), or refused with the reason (reason is empty for accepted).',
  labelNames: ['outcome', 'reason'] as const,
  registers: [registry],
  collect: () => {
    ingestAccepted.flush();
    for (const reason of INGEST_REFUSALS) ingestRefused[reason].flush();
  },
});

const produceDuration = new HotHistogram(
  'hookline_kafka_produce_duration_seconds',
  'Duration of the Kafka requests (acks=all) that carry gathered records, per topic in the request; one observation per request and topic, not per record.',
  'topic',
  [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registry,
);

const kafkaRequests = new Counter({
  name: 'hookline_kafka_requests_total',
  help: 'Kafka requests this process sent that the broker answered, by the Kafka API (Produce, Fetch, OffsetCommit, Heartbeat, Metadata, ...) and the client that sent it (producer, consumer, admin).',
  labelNames: ['api', 'client'] as const,
  registers: [registry],
  collect: () => {
    for (const count of requestCounters.values()) count.flush();
  },
});

const sinkRows = new Counter({
  name: 'hookline_sink_rows_total',
  help: 'Rows the sink inserted into ClickHouse (and committed the offsets of), per table.',
  labelNames: ['table'] as const,
  registers: [registry],
});

const sinkFlushDuration = new Histogram({
  name: 'hookline_sink_flush_duration_seconds',
  help: 'Duration of one sink flush: the inserts of every table of a buffer, with their retries, and the offset commit.',
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers: [registry],
});

const evidenceTreeSize = new Gauge({
  name: 'hookline_evidence_tree_size',
  help: 'Leaves in the evidence log as the sequencer of this process last resumed or sealed it.',
  registers: [registry],
});

const evidenceSealDuration = new Histogram({
  name: 'hookline_evidence_seal_duration_seconds',
  help: 'Duration of one evidence seal that appended a batch: hashing the leaves, signing the checkpoint and the fenced append to Kafka.',
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

/** A labelled child, bound once: its own methods take no labels. */
type CounterChild = { inc(value?: number): void };

function bound<K extends string, C>(keys: readonly K[], child: (key: K) => C): Record<K, C> {
  return Object.fromEntries(keys.map((k) => [k, child(k)])) as Record<K, C>;
}

// every known series exists from the start (at 0), so that rate() sees the first increment
const deliveryCounters: Record<DeliveryOutcomeLabel, PendingCount> = bound(DELIVERY_OUTCOMES, (o) => {
  deliveries.inc({ outcome: o }, 0);
  return new PendingCount(deliveries.labels(o));
});
const deliveryTimers: Partial<Record<DeliveryOutcomeLabel, HistogramSeries>> = bound(DELIVERY_OUTCOMES.slice(0, 5) as DeliveryOutcomeLabel[], (o) => deliveryDuration.series(o));
ingestRequests.inc({ outcome: 'accepted', reason: '' }, 0);
const ingestAccepted = new PendingCount(ingestRequests.labels('accepted', ''));
const ingestRefused: Record<IngestRefusal, PendingCount> = bound(INGEST_REFUSALS, (r) => {
  ingestRequests.inc({ outcome: 'refused', reason: r }, 0);
  return new PendingCount(ingestRequests.labels('refused', r));
});
const produceTimers = new Map<string, HistogramSeries>();
// keyed by client and API name: a few dozen Kafka APIs, three clients
const requestCounters = new Map<string, PendingCount>();
const sinkCounters = new Map<string, CounterChild>();

/** One delivery task handled; `seconds` is the attempt's duration when one was made. */
export function recordDelivery(outcome: DeliveryOutcomeLabel, seconds?: number): void {
  deliveryCounters[outcome].n++;
  if (seconds !== undefined) deliveryTimers[outcome]?.observe(seconds);
}

export function recordIngestAccepted(): void {
  ingestAccepted.n++;
}

export function recordIngestRefused(reason: IngestRefusal): void {
  ingestRefused[reason].n++;
}

/** One Kafka request's duration, for each topic it carried (topics are few and fixed per deployment). */
export function recordProduce(topics: Iterable<string>, seconds: number): void {
  for (const topic of topics) {
    let timer = produceTimers.get(topic);
    if (!timer) produceTimers.set(topic, (timer = produceDuration.series(topic)));
    timer.observe(seconds);
  }
}

/** One Kafka request answered. `api` is the protocol's API name (kafkajs's `apiName`). */
export function recordKafkaRequest(client: KafkaClientKind, api: string): void {
  const key = client + api;
  let count = requestCounters.get(key);
  if (!count) {
    kafkaRequests.inc({ api, client }, 0);
    requestCounters.set(key, (count = new PendingCount(kafkaRequests.labels(api, client))));
  }
  count.n++;
}

export type KafkaClientKind = 'producer' | 'consumer' | 'admin';

/** One sink flush done: its rows per table and its duration. */
export function recordSinkFlush(rows: Iterable<[table: string, count: number]>, seconds: number): void {
  for (const [table, count] of rows) {
    if (count === 0) continue;
    let counter = sinkCounters.get(table);
    if (!counter) sinkCounters.set(table, (counter = sinkRows.labels(table)));
    counter.inc(count);
  }
  sinkFlushDuration.observe(seconds);
}

export function recordEvidenceTreeSize(size: number): void {
  evidenceTreeSize.set(size);
}

export function recordEvidenceSeal(seconds: number): void {
  evidenceSealDuration.observe(seconds);
}

/** Seconds since `startedMs` (a `performance.now()` reading). */
export function secondsSince(startedMs: number): number {
  return (performance.now() - startedMs) / 1000;
}

/** The registry in the Prometheus text exposition format, with its content type. */
export async function exposition(): Promise<{ contentType: string; text: string }> {
  return { contentType: registry.contentType, text: await registry.metrics() };
}
