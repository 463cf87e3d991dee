import { stageIo, type Topics } from '../../core/topics';
import type { DeliveryOutcome } from '../../platform/avro/records';
import type { AnyOutput, RecordStage } from '../runner/stage';

/**
 * Hands every delivery attempt outcome to the evidence sequencer. Any number of processes
 * may run it; the one partition of `evidence.pending` gives the log a single order, and the
 * source position carried along lets the sequencer drop what a restart hands over twice.
 */
export function evidenceIntakeStage(topics: Topics): RecordStage<'DeliveryOutcome'> {
  return {
    kind: 'record',
    ...stageIo(topics, 'evidence-intake', 'DeliveryOutcome'),
    async handle(o: DeliveryOutcome, { position }): Promise<AnyOutput[]> {
      return [
        {
          topic: topics.evidencePending,
          key: o.delivery_id,
          record: 'EvidenceLeaf',
          value: {
            tenant_id: o.tenant_id,
            delivery_id: o.delivery_id,
            event_id: o.event_id,
            destination_id: o.destination_id,
            correlation_id: o.correlation_id,
            attempt_number: o.attempt_number,
            status: o.status,
            response_code: o.response_code,
            attempted_at: o.attempted_at,
            body_sha256: o.body_sha256,
            source_partition: position.partition,
            source_offset: Number(position.offset),
          },
        },
      ];
    },
  };
}
