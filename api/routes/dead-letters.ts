import express, { type Router } from 'express';
import { AppError, notFound } from '../../core/errors';
import type { ApiKey } from '../../core/model';
import { decodeStoredBody } from '../../core/stored-body';
import { CONSUMER_NAMES, replayableTopics } from '../../core/topics';
import { DeadLetterStore, placeKey, type DeadLetterRow, type ReplayMark, type StoredDeadLetter } from '../../platform/clickhouse/dead-letters';
import { CH_TIME, isoFromClickHouse } from '../../platform/clickhouse/time';
import { replayClaimKey, replayDeadLetter, type DeadLetterReplayDeps } from '../../platform/replay/dead-letters';
import { authOf, requireResourceOf, requireScope } from '../auth';
import { decodeCursor, encodeCursor } from '../cursor';
import { parseLimit } from '../paging';
import { clickHouseTimeOf } from './deliveries-query';

/** The stages that set records aside: every consumer but the sink, which skips what it cannot read. */
export const DEAD_LETTER_STAGES = CONSUMER_NAMES.filter((c) => c !== 'sink');

type Problem = { field: string; message: string };

/** `stage`, `from` and `to` of the list: a bad time is a 400 naming it, an unknown stage a 422. */
function filtersOf(query: Record<string, unknown>): { stage: string | null; from: string | null; to: string | null } {
  const errors: Problem[] = [];
  const time = (name: 'from' | 'to'): string | null => {
    const v = query[name];
    if (v === undefined) return null;
    const t = typeof v === 'string' ? clickHouseTimeOf(v) : null;
    if (t === null) errors.push({ field: name, message: typeof v === 'string' ? 'must be an RFC 3339 date-time (2026-01-02T03:04:05Z)' : 'must be given once' });
    return t;
  };
  const from = time('from');
  const to = time('to');
  if (from !== null && to !== null && from >= to) errors.push({ field: 'to', message: 'must be later than from' });
  const stage = query.stage === undefined ? null : query.stage;
  if (stage !== null && typeof stage !== 'string') errors.push({ field: 'stage', message: 'must be given once' });
  if (errors.length > 0) throw new AppError('validation-error', errors.map((e) => `${e.field} ${e.message}`).join('; '), { errors });
  if (typeof stage === 'string' && !(DEAD_LETTER_STAGES as readonly string[]).includes(stage)) throw new AppError('unprocessable-entity', `stage must be one of ${DEAD_LETTER_STAGES.join(', ')}`);
  return { stage: stage as string | null, from, to };
}

/** A letter as the API shows it, with the replay of its input when there was one. */
export function letterView(r: DeadLetterRow, mark: ReplayMark | undefined) {
  return {
    id: r.id,
    stage: r.stage,
    reason: r.reason,
    at: isoFromClickHouse(r.at_text),
    event_id: r.event_id,
    record: r.record,
    resource_id: r.resource_id,
    source: { topic: r.source_topic, partition: r.source_partition, offset: r.source_offset },
    replayed_at: mark ? isoFromClickHouse(mark.replayed_at_text) : null,
    replayed_by: mark?.replayed_by ?? null,
  };
}

/**
 * The dead letters of every stage (events.dlq, as the sink copied them): records a stage set
 * aside, each with its stage and reason, listed per tenant, and put back where they were read
 * once their cause is fixed. A letter belongs to the tenant its record names; letters whose
 * bytes do not decode belong to no tenant and are the operator's (the command line).
 */
export function deadLettersRouter(store: DeadLetterStore, replay: DeadLetterReplayDeps): Router {
  const router = express.Router({ mergeParams: true });

  /** One letter of the caller's tenant that the key may see (404, 403 otherwise). */
  const letterOf = async (key: ApiKey, id: string): Promise<StoredDeadLetter> => {
    const letter = await store.get(key.tenant_id, id);
    if (!letter) throw notFound(`dead letter ${id}`);
    requireResourceOf(key, letter.resource_id);
    return letter;
  };

  router.get('/', requireScope('read:events'), async (req, res) => {
    const key = authOf(res);
    const limit = parseLimit(req.query.limit);
    const filters = filtersOf(req.query);
    let before: { at: string; id: string } | null = null;
    if (typeof req.query.cursor === 'string' && req.query.cursor !== '') {
      const [at, id] = decodeCursor(req.query.cursor, filters);
      if (typeof at !== 'string' || !CH_TIME.test(at) || typeof id !== 'string') throw new AppError('validation-error', 'the cursor is not one this API issued', { errors: [{ field: 'cursor', message: 'is not a valid cursor' }] });
      before = { at, id };
    }
    const rows = await store.page({ tenant: key.tenant_id, ...filters, before, resourceIds: key.resource_ids ?? null }, limit + 1);
    const page = rows.slice(0, limit);
    const marks = await store.replaysOf(key.tenant_id, page);
    const last = page[page.length - 1];
    res.json({
      dead_letters: page.map((r) => letterView(r, marks.get(placeKey(r)))),
      next_cursor: rows.length > limit && last ? encodeCursor([last.at_text, last.id], filters) : null,
    });
  });

  /** One letter with the bytes it carries: its input's key and value, base64. */
  router.get('/:letterId', requireScope('read:events'), async (req, res) => {
    const key = authOf(res);
    const letter = await letterOf(key, String(req.params.letterId));
    const marks = await store.replaysOf(key.tenant_id, [letter]);
    const bytes = letter.value_expired ? undefined : decodeStoredBody(letter.value, letter.value_sha256);
    res.json({
      ...letterView(letter, marks.get(placeKey(letter))),
      key_base64: letter.key,
      value_base64: bytes ? bytes.toString('base64') : null,
      value_bytes: bytes ? bytes.length : null,
      value_sha256: letter.value_sha256,
      value_expired: letter.value_expired === 1,
    });
  });

  /**
   * Puts the letter's record back on the topic it was read from, once: the stage that set it
   * aside handles it again with the configuration of now. 409 when its record was replayed
   * already (through this letter or another letter of the same record), when its stored bytes
   * do not match their SHA-256, or when it names a topic no stage of this deployment reads.
   */
  router.post('/:letterId/replay', requireScope('write:events'), async (req, res) => {
    const key = authOf(res);
    const letter = await letterOf(key, String(req.params.letterId));
    const refuse = (why: string) => new AppError('conflict', `dead letter ${letter.id} cannot be replayed: ${why}`);
    const done = (await store.replaysOf(key.tenant_id, [letter])).get(placeKey(letter));
    if (done) throw refuse(`its record was replayed at ${isoFromClickHouse(done.replayed_at_text)} by ${done.replayed_by}${done.letter_id === letter.id ? '' : ` (through dead letter ${done.letter_id})`}`);
    if (!replayableTopics(replay.topics).includes(letter.source_topic)) throw refuse(`it was read from ${letter.source_topic}, which no stage of this deployment reads`);
    if (letter.value_expired) throw refuse('its bytes were removed by the retention of bodies (the tenant\'s limits.retention.bodies_seconds, else RETENTION_BODIES)');
    const value = decodeStoredBody(letter.value, letter.value_sha256);
    if (!value) throw refuse('its stored bytes do not match the SHA-256 recorded with them');
    const replayed = await replayDeadLetter(replay, { ...letter, key: letter.key === null ? null : Buffer.from(letter.key, 'base64'), value }, key.id);
    if (!replayed) {
      const by = await replay.redis.get(replayClaimKey(replay.prefix, letter));
      throw refuse(`its record was replayed moments ago${by && by !== letter.id ? ` (through dead letter ${by})` : ''}`);
    }
    const { topic, partition, offset } = replayed.written;
    res.status(202).json({
      status: 'replayed',
      dead_letter_id: letter.id,
      stage: letter.stage,
      event_id: letter.event_id,
      source: { topic: letter.source_topic, partition: letter.source_partition, offset: letter.source_offset },
      written: replayed.written,
      replayed_at: new Date(replayed.replayed_at).toISOString(),
      message: `the record stage ${letter.stage} set aside (${letter.source_topic} ${letter.source_partition}/${letter.source_offset}) is back on ${topic} at ${partition}/${offset}, where the pipeline handles it again`,
    });
  });

  return router;
}
