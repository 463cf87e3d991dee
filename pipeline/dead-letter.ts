import type { Output, StageContext } from './runner/stage';

/**
 * The dead letter of the input record in hand: its exact bytes and place, the stage and the
 * reason, on the dead-letter topic (`events.dlq`) under the input's own key, so the partition it
 * came from goes on.
 */
export function deadLetter(
  topic: string,
  stage: string,
  ctx: Pick<StageContext, 'position' | 'source'>,
  subject: { tenant_id: string; event_id: string | null },
  reason: string,
): Output<'DeadLetter'> {
  const { source, position } = ctx;
  return {
    topic,
    key: source.key?.toString() ?? subject.tenant_id,
    record: 'DeadLetter',
    value: {
      stage,
      reason,
      source_topic: source.topic,
      source_partition: position.partition,
      source_offset: Number(position.offset),
      key: source.key,
      value: source.value,
      tenant_id: subject.tenant_id,
      event_id: subject.event_id,
      at: Date.now(),
    },
  };
}
