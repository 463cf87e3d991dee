import { traceIdOf } from '../platform/tracing/trace-context';
import type { KafkaMessage } from 'kafkajs';
import { derivedId } from '../core/ids';
import { errorMessage, type Logger } from '../core/log';
import { UndecodableRecordError, type AvroCodec } from '../platform/avro/codec';
import type { DeadLetter, RecordName } from '../platform/avro/records';
import type { Output, StageContext } from './runtime/stage';

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

/**
 * The dead letter of a record a stage cannot handle (undecodable, or its handler kept failing),
 * logged with its place. Its tenant and event come from the decoded value when there is one,
 * else from the input's key (`tenant/...`).
 */
export function poisonLetter(topic: string, stage: string, log: Logger, ctx: Pick<StageContext, 'position' | 'source' | 'trace'>, value: unknown, reason: string): Output<'DeadLetter'> {
  const subject = (value ?? {}) as { tenant_id?: unknown; event_id?: unknown };
  const keyText = ctx.source.key?.toString() ?? '';
  const tenantId = typeof subject.tenant_id === 'string' ? subject.tenant_id : keyText.split('/')[0] ?? '';
  const eventId = typeof subject.event_id === 'string' ? subject.event_id : null;
  log.error('record set aside as a dead letter', { topic: ctx.source.topic, partition: ctx.position.partition, offset: ctx.position.offset, tenant_id: tenantId, ...(eventId ? { event_id: eventId } : {}), trace_id: traceIdOf(ctx.trace), reason });
  return deadLetter(topic, stage, ctx, { tenant_id: tenantId, event_id: eventId }, reason);
}

/** Why bytes were set aside, as every consumer's dead letter says it. */
export function undecodableReason(record: RecordName, err: unknown): string {
  return `the record cannot be decoded as ${record}: ${errorMessage(err)}`;
}

/** The dead letter of `message`, read at `partition` of `topic`, whose bytes do not decode as `record`. */
export function undecodableLetter(dlq: string, stage: string, log: Logger, topic: string, partition: number, message: KafkaMessage, record: RecordName, err: unknown): Output<'DeadLetter'> {
  const ctx = { position: { partition, offset: message.offset }, source: { topic, key: message.key, value: message.value ?? Buffer.alloc(0) } };
  return poisonLetter(dlq, stage, log, ctx, null, undecodableReason(record, err));
}

/**
 * The id of a dead letter (`dlt_...`), derived from the stage and the place its input was read,
 * at the time it was set aside: the letter read twice from events.dlq is one letter.
 */
export function deadLetterId(l: Pick<DeadLetter, 'at' | 'stage' | 'source_topic' | 'source_partition' | 'source_offset'>): string {
  return derivedId('deadLetter', l.at, `${l.stage}/${l.source_topic}/${l.source_partition}/${l.source_offset}`);
}

/** Whose a dead letter is: its input's record, tenant and ingester or destination ('' for none). */
export interface LetterOwner {
  /** What the input's bytes decode as (`WebhookEvent`); '' when they do not decode. */
  record: string;
  tenant_id: string;
  /** The ingester of an event, the destination of a delivery: what a key limited to resource ids must hold. */
  resource_id: string;
}

/** The records the stages read, and the member naming the resource each belongs to. */
const RESOURCE_OF: Partial<Record<string, 'ingester_id' | 'destination_id'>> = { WebhookEvent: 'ingester_id', DeliveryTask: 'destination_id', DeliveryOutcome: 'destination_id' };

/**
 * The owner of a dead letter, read from its input record itself: the tenant and the ingester or
 * destination that record names. Bytes that do not decode as a stage's input name nobody, and
 * the letter is the operator's (tenant ''): the tenant a letter took from such bytes' key is a
 * guess, and raw bytes are not shown to a tenant on a key's word. A schema registry that does not
 * answer throws, as it does for every consumer: the same bytes are read again once it answers.
 */
export async function ownerOfLetter(codec: Pick<AvroCodec, 'decodeNamed'>, letter: Pick<DeadLetter, 'value'>): Promise<LetterOwner> {
  let decoded: { record: string; value: unknown };
  try {
    decoded = await codec.decodeNamed(letter.value);
  } catch (err) {
    if (err instanceof UndecodableRecordError) return { record: '', tenant_id: '', resource_id: '' };
    throw err;
  }
  const member = RESOURCE_OF[decoded.record];
  const value = decoded.value as Record<string, unknown>;
  const resource = member ? value[member] : undefined;
  if (typeof value.tenant_id !== 'string' || value.tenant_id === '' || typeof resource !== 'string') return { record: decoded.record, tenant_id: '', resource_id: '' };
  return { record: decoded.record, tenant_id: value.tenant_id, resource_id: resource };
}
