import { Redis } from 'ioredis';
import { replayableTopics } from '../core/topics';
import { readRunFile } from '../infra/local';
import { letterView, DEAD_LETTER_STAGES } from '../api/routes/dead-letters';
import { deadLetterId, ownerOfLetter, type LetterOwner } from '../pipeline/dead-letter';
import { chTime, deadLetterRow } from '../pipeline/sink/rows';
import type { DeadLetter, DeadLetterReplay } from '../platform/avro/records';
import { placeKey } from '../platform/clickhouse/dead-letters';
import { createProducer } from '../platform/kafka/client';
import { readTopic } from '../platform/kafka/topic-table';
import { replayDeadLetter } from '../platform/replay/dead-letters';
import type { Query } from '../clients/typescript/src';
import { dataOf, queryOf, tenantApi } from './api-client';
import { CliError, connect, type CliContext } from './connect';

type Values = Record<string, string | string[] | boolean | undefined>;

export const DEAD_LETTERS_USAGE = `  npm run cli -- dead-letters list [--stage <stage>] [--from <time>] [--to <time>] [--limit n] [--cursor c] [--tenant <id>] [--api-url <url>]
  npm run cli -- dead-letters get <dead letter id> | replay <dead letter id> [--tenant <id>] [--api-url <url>]
                 (records a stage set aside, newest first, each with its stage and reason; replay puts one back where it was read, once;
                  through the API: key in HOOKLINE_API_KEY, tenant from --tenant or HOOKLINE_TENANT)
  npm run cli -- dead-letters list --operator [--stage <stage>] [--limit n]
  npm run cli -- dead-letters replay <dead letter id> --operator
                 (the operator's view beside the deployment, like \`dlq replay\`: every tenant's letters and those of no tenant
                  (bytes that do not decode), read from events.dlq itself; needs Kafka, the registry and Redis)`;

/** The options of `dead-letters list` and the query parameter each one sets. */
const LIST_OPTIONS = { stage: 'stage', from: 'from', to: 'to', limit: 'limit', cursor: 'cursor' } as const satisfies Record<string, keyof Query<'listDeadLetters'>>;

/**
 * `dead-letters list|get|replay`: the tenant's dead letters through the API, or with
 * `--operator` every letter of the deployment, read from Kafka beside it. Answers one JSON line.
 */
export async function deadLettersCommand(args: string[], values: Values): Promise<unknown> {
  const [verb, id, ...extra] = args;
  const operator = values.operator === true;
  if (extra.length > 0 || (verb === 'list' ? id !== undefined : !id) || !['list', 'get', 'replay'].includes(verb ?? '')) throw new CliError(`usage:\n${DEAD_LETTERS_USAGE}`);
  if (operator) {
    if (verb === 'get') throw new CliError('dead-letters get takes no --operator: `dead-letters list --operator` shows every letter');
    return verb === 'list' ? operatorList(values) : operatorReplay(id!);
  }
  const { client, tenant_id } = tenantApi(values, `dead-letters ${verb}`);
  const letter = { path: { tenant_id, dead_letter_id: id! } };
  if (verb === 'get') return dataOf(client.GET('/v1/tenants/{tenant_id}/dead-letters/{dead_letter_id}', { params: letter }));
  if (verb === 'replay') return dataOf(client.POST('/v1/tenants/{tenant_id}/dead-letters/{dead_letter_id}/replay', { params: letter }));
  return dataOf(client.GET('/v1/tenants/{tenant_id}/dead-letters', { params: { path: { tenant_id }, query: queryOf<Query<'listDeadLetters'>>(values, LIST_OPTIONS) } }));
}

/** A letter as read from events.dlq, with its id and owner. */
interface ReadLetter {
  id: string;
  letter: DeadLetter;
  owner: LetterOwner;
}

/** Every letter on events.dlq and the replays on events.dlq.replays (by placeKey), read whole. */
async function readLetters(ctx: CliContext): Promise<{ letters: ReadLetter[]; replays: Map<string, DeadLetterReplay> }> {
  const [dlq, marks] = await Promise.all([readTopic(ctx.kafka, ctx.topics.eventsDlq), readTopic(ctx.kafka, ctx.topics.eventsDlqReplays)]);
  const letters: ReadLetter[] = [];
  for (const r of dlq) {
    if (!r.value) continue;
    // bytes on events.dlq that are no letter are nobody's to put back
    const letter = await ctx.codec.decode('DeadLetter', r.value).catch(() => undefined);
    if (letter) letters.push({ id: deadLetterId(letter), letter, owner: await ownerOfLetter(ctx.codec, letter) });
  }
  const replays = new Map<string, DeadLetterReplay>();
  for (const r of marks) {
    const mark = r.value && (await ctx.codec.decode('DeadLetterReplay', r.value).catch(() => undefined));
    if (mark) replays.set(placeKey(mark), mark);
  }
  return { letters, replays };
}

/** The API's view of a letter, with whose it is: `tenant_id` null for a letter of no tenant. */
function operatorView({ letter, owner }: ReadLetter, mark: DeadLetterReplay | undefined) {
  const row = deadLetterRow(letter, owner);
  return {
    tenant_id: owner.tenant_id || null,
    named_tenant_id: letter.tenant_id,
    ...letterView({ ...row, at_text: row.at }, mark && { letter_id: mark.letter_id, replayed_at_text: chTime(mark.replayed_at), replayed_by: mark.replayed_by }),
  };
}

async function withContext<T>(run: (ctx: CliContext) => Promise<T>): Promise<T> {
  const ctx = await connect();
  try {
    return await run(ctx);
  } finally {
    await ctx.close();
  }
}

/** `dead-letters list --operator`: every letter of the deployment, newest first. */
function operatorList(values: Values): Promise<unknown> {
  const stage = typeof values.stage === 'string' ? values.stage : undefined;
  if (stage !== undefined && !(DEAD_LETTER_STAGES as readonly string[]).includes(stage)) throw new CliError(`--stage must be one of ${DEAD_LETTER_STAGES.join(', ')}`);
  const limit = values.limit === undefined ? 50 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1) throw new CliError('--limit must be a positive integer');
  return withContext(async (ctx) => {
    const { letters, replays } = await readLetters(ctx);
    const chosen = letters.filter((l) => stage === undefined || l.letter.stage === stage).sort((a, b) => b.letter.at - a.letter.at || (a.id < b.id ? 1 : -1));
    return { dead_letters: chosen.slice(0, limit).map((l) => operatorView(l, replays.get(placeKey(l.letter)))) };
  });
}

/** `dead-letters replay <id> --operator`: puts any letter back, a letter of no tenant included, once. */
function operatorReplay(id: string): Promise<unknown> {
  return withContext(async (ctx) => {
    const redisUrl = ctx.config.redisUrl ?? readRunFile(ctx.config.dataDir)?.redis_url;
    if (!redisUrl) throw new CliError(`no Redis found for DATA_DIR=${ctx.config.dataDir}: start the service with \`npm start\`, or set REDIS_URL`);
    const { letters, replays } = await readLetters(ctx);
    const found = letters.find((l) => l.id === id);
    if (!found) throw new CliError(`no dead letter ${id} on ${ctx.topics.eventsDlq}`);
    const { letter, owner } = found;
    const done = replays.get(placeKey(letter));
    if (done) throw new CliError(`dead letter ${id} cannot be replayed: its record was replayed at ${new Date(done.replayed_at).toISOString()} by ${done.replayed_by}`);
    if (!replayableTopics(ctx.topics).includes(letter.source_topic)) throw new CliError(`dead letter ${id} cannot be replayed: it was read from ${letter.source_topic}, which no stage of this deployment reads`);
    const redis = new Redis(redisUrl, { maxRetriesPerRequest: 2, lazyConnect: true });
    const producer = createProducer(ctx.kafka);
    try {
      await Promise.all([redis.connect(), producer.connect(), ctx.codec.register({ [ctx.topics.eventsDlqReplays]: 'DeadLetterReplay', [ctx.topics.transitions]: 'EventTransition' })]);
      const replayed = await replayDeadLetter({ producer, codec: ctx.codec, topics: ctx.topics, redis, prefix: ctx.config.topicPrefix, config: ctx.store }, { ...letter, id, tenant_id: owner.tenant_id }, 'operator');
      if (!replayed) throw new CliError(`dead letter ${id} cannot be replayed: its record was replayed moments ago`);
      return {
        status: 'replayed',
        dead_letter_id: id,
        tenant_id: owner.tenant_id || null,
        stage: letter.stage,
        event_id: letter.event_id,
        source: { topic: letter.source_topic, partition: letter.source_partition, offset: letter.source_offset },
        written: replayed.written,
        replayed_at: new Date(replayed.replayed_at).toISOString(),
      };
    } finally {
      await producer.disconnect().catch(() => undefined);
      redis.disconnect();
    }
  });
}
