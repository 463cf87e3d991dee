import type { TopicSpec } from '../platform/kafka/client';
import type { RecordName } from '../platform/avro/records';
import type { Topics } from '../core/topics';

/** Kafka's default largest record batch (broker `message.max.bytes`). */
const KAFKA_DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;
/** Room for what a record holds beside the webhook body: its headers (at most 16 KiB as Node reads them), ids, reasons. */
const ENVELOPE_BYTES = 256 * 1024;

/** The `max.message.bytes` of a topic whose records carry webhook bodies of up to `maxBodyBytes`. */
export function bodyTopicMaxMessageBytes(maxBodyBytes: number): number {
  return Math.max(KAFKA_DEFAULT_MAX_MESSAGE_BYTES, maxBodyBytes + ENVELOPE_BYTES);
}

/**
 * Every topic the service uses, with its partitioning and the record it carries. Topics whose
 * records carry a webhook body take a record as large as the largest body a Hook URL accepts
 * (`maxBodyBytes`), with its envelope, and are kept `bodyRetentionMs` (unset: the broker's default).
 */
export function topology(topics: Topics, partitions: number, maxBodyBytes?: number, bodyRetentionMs?: number): { specs: TopicSpec[]; records: Record<string, RecordName> } {
  // KAFKA_EVENT_RETENTION: how long a body exists on Kafka (docs/retention.md)
  const body = { ...(maxBodyBytes === undefined ? {} : { maxMessageBytes: bodyTopicMaxMessageBytes(maxBodyBytes) }), ...(bodyRetentionMs === undefined ? {} : { retentionMs: bodyRetentionMs }) };
  const specs: TopicSpec[] = [
    { topic: topics.config, partitions: 1, compacted: true },
    { topic: topics.received, partitions, ...body },
    { topic: topics.validated, partitions, ...body },
    { topic: topics.filtered, partitions, ...body },
    { topic: topics.transitions, partitions },
    { topic: topics.deliveryRequested, partitions, ...body },
    // outcomes carry the start of the receiver's response body
    { topic: topics.deliveryCompleted, partitions, ...(bodyRetentionMs === undefined ? {} : { retentionMs: bodyRetentionMs }) },
    { topic: topics.deliveryDlq, partitions, ...body },
    { topic: topics.deliveryHeld, partitions, ...body },
    { topic: topics.eventsDlq, partitions, ...body },
    { topic: topics.eventsDlqReplays, partitions },
    { topic: topics.logs, partitions },
    // the log's batches are the system of record: one partition, kept forever
    { topic: topics.evidenceLeaves, partitions: 1, retentionMs: -1 },
    ...topics.retryTiers.map((t) => ({ topic: t.topic, partitions, ...body })),
  ];
  const records: Record<string, RecordName> = {
    [topics.config]: 'ConfigEntry',
    [topics.received]: 'WebhookEvent',
    [topics.validated]: 'WebhookEvent',
    [topics.filtered]: 'WebhookEvent',
    [topics.transitions]: 'EventTransition',
    [topics.deliveryRequested]: 'DeliveryTask',
    [topics.deliveryCompleted]: 'DeliveryOutcome',
    [topics.deliveryDlq]: 'DeliveryTask',
    [topics.deliveryHeld]: 'DeliveryTask',
    [topics.eventsDlq]: 'DeadLetter',
    [topics.eventsDlqReplays]: 'DeadLetterReplay',
    [topics.logs]: 'LogEntry',
    [topics.evidenceLeaves]: 'EvidenceBatch',
  };
  for (const t of topics.retryTiers) records[t.topic] = 'DeliveryTask';
  return { specs, records };
}
