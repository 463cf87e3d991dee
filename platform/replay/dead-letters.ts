import { CONFIG_VERSION_HEADER } from '../../core/config-version';
import { eventKey } from '../../core/record-keys';
import type { AvroCodec } from '../avro/codec';
import type { DeadLetter, DeadLetterReplay, EventTransition } from '../avro/records';
import type { ReplayDeps } from './replay';

/** What a replay writes with: the producer, codec, topics, claims and configuration version of a delivery replay. */
export type DeadLetterReplayDeps = Pick<ReplayDeps, 'producer' | 'codec' | 'topics' | 'redis' | 'prefix' | 'config'>;

/**
 * A dead letter as a replay needs it: the input record it carries and where it was read, its id,
 * and its owner's tenant ('' for the operator's).
 */
export type ReplayableLetter = Pick<DeadLetter, 'stage' | 'source_topic' | 'source_partition' | 'source_offset' | 'event_id' | 'key' | 'value'> & { id: string; tenant_id: string };

/** Where the record went back. */
export interface LetterReplayed {
  replayed_at: number;
  written: { topic: string; partition: number; offset: number };
}

/** How long the claim on a replayed input is kept: far beyond the sink's copy of its replay record, the lasting mark. */
const CLAIM_TTL_SECONDS = 30 * 86_400;

/** The Redis key claiming the replay of the input read at this place: one per input, whichever of its letters is replayed. */
export function replayClaimKey(prefix: string, l: Pick<ReplayableLetter, 'source_topic' | 'source_partition' | 'source_offset'>): string {
  return `${prefix}dead-letter-replayed:${l.source_topic}:${l.source_partition}:${l.source_offset}`;
}

/**
 * Puts a dead letter's input back: its exact key and bytes are written to the topic they were
 * read from, naming this process's configuration version, so the stage that set the record aside
 * handles it again. With it go the replay record (events.dlq.replays, the lasting mark the sink
 * copies) and, for a letter of an event, the event's `replayed` transition; all acknowledged by
 * every in-sync replica before this returns. An input is replayed once: the claim in Redis is
 * taken first, and undefined comes back when another replay holds it. A write that fails gives
 * the claim back, so the letter can be replayed again.
 */
export async function replayDeadLetter(deps: DeadLetterReplayDeps, letter: ReplayableLetter, by: string): Promise<LetterReplayed | undefined> {
  const claim = replayClaimKey(deps.prefix, letter);
  if ((await deps.redis.set(claim, letter.id, 'EX', CLAIM_TTL_SECONDS, 'NX')) !== 'OK') return undefined;
  try {
    const now = Date.now();
    const mark: DeadLetterReplay = {
      letter_id: letter.id,
      tenant_id: letter.tenant_id,
      stage: letter.stage,
      source_topic: letter.source_topic,
      source_partition: letter.source_partition,
      source_offset: letter.source_offset,
      event_id: letter.event_id,
      replayed_at: now,
      replayed_by: by,
    };
    const transition = await replayedTransition(deps.codec, letter, now, by);
    const [markValue, transitionValue] = await Promise.all([
      deps.codec.encode(deps.topics.eventsDlqReplays, 'DeadLetterReplay', mark),
      transition && deps.codec.encode(deps.topics.transitions, 'EventTransition', transition),
    ]);
    const headers = deps.config ? { [CONFIG_VERSION_HEADER]: deps.config.version.toString() } : undefined;
    const written = await deps.producer.sendBatch({
      acks: -1,
      topicMessages: [
        { topic: letter.source_topic, messages: [{ key: letter.key, value: letter.value, headers }] },
        { topic: deps.topics.eventsDlqReplays, messages: [{ key: `${letter.tenant_id}/${letter.id}`, value: markValue }] },
        ...(transition && transitionValue ? [{ topic: deps.topics.transitions, messages: [{ key: eventKey(transition), value: transitionValue }] }] : []),
      ],
    });
    const at = written.find((m) => m.topicName === letter.source_topic);
    return { replayed_at: now, written: { topic: letter.source_topic, partition: at?.partition ?? -1, offset: Number(at?.baseOffset ?? -1) } };
  } catch (err) {
    await deps.redis.del(claim);
    throw err;
  }
}

/**
 * The `replayed` transition of the event a letter's record carries (an event, or one of its
 * deliveries), when its bytes decode as one; undefined for bytes that name no event.
 */
async function replayedTransition(codec: AvroCodec, letter: ReplayableLetter, at: number, by: string): Promise<EventTransition | undefined> {
  if (letter.event_id === null || letter.tenant_id === '') return undefined;
  let record: Record<string, unknown>;
  try {
    record = (await codec.decodeNamed(letter.value)).value as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const text = (name: string) => (typeof record[name] === 'string' ? (record[name] as string) : null);
  if (text('event_id') !== letter.event_id || text('tenant_id') !== letter.tenant_id) return undefined;
  return {
    event_id: letter.event_id,
    tenant_id: letter.tenant_id,
    ingester_id: text('ingester_id') ?? '',
    state: 'replayed',
    at,
    correlation_id: text('correlation_id') ?? '',
    reason: `dead letter ${letter.id} of stage ${letter.stage} put back on ${letter.source_topic} by ${by}`,
    delivery_id: text('delivery_id'),
    destination_id: text('destination_id'),
  };
}
