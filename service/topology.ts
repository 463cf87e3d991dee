import type { TopicSpec } from '../platform/kafka/client';
import type { RecordName } from '../platform/avro/records';
import type { Topics } from '../core/topics';

/** Every topic the service uses, with its partitioning and the record it carries. */
export function topology(topics: Topics, partitions: number): { specs: TopicSpec[]; records: Record<string, RecordName> } {
  const specs: TopicSpec[] = [
    { topic: topics.config, partitions: 1, compacted: true },
    { topic: topics.received, partitions },
    { topic: topics.validated, partitions },
    { topic: topics.filtered, partitions },
    { topic: topics.transitions, partitions },
    { topic: topics.deliveryRequested, partitions },
    { topic: topics.deliveryCompleted, partitions },
    { topic: topics.deliveryDlq, partitions },
    { topic: topics.logs, partitions },
    // the log's order is the order of one partition; its batches are the system of record
    { topic: topics.evidencePending, partitions: 1 },
    { topic: topics.evidenceLeaves, partitions: 1, retentionMs: -1 },
    ...topics.retryTiers.map((t) => ({ topic: t.topic, partitions })),
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
    [topics.logs]: 'LogEntry',
    [topics.evidencePending]: 'EvidenceLeaf',
    [topics.evidenceLeaves]: 'EvidenceBatch',
  };
  for (const t of topics.retryTiers) records[t.topic] = 'DeliveryTask';
  return { specs, records };
}
