import type { Redis } from 'ioredis';

/**
 * A tenant's keys in Redis, found under the deployment's prefix by their layouts (every writer of
 * Redis names its keys one of these ways):
 *
 * - by tenant id: `idem:<t>:…` (idempotency), `api-keys.last-used.<t>`, `claim:<t>:…` (name
 *   claims), `portal:tenant:<t>`, `ops:<t>` and `ops:<t>:…` (operational events), `replayed:<t>:…`,
 *   `ingest-limit:tenant:<t>`, `lock:destination:<t>:…`;
 * - by the id of one of its objects: `ratelimit:<key or session id>:…`, `ingest-limit:hook:<ingester>`,
 *   `send-slot:<destination>`, `portal:session:<session>`, `replay:{lease,progress,cancelled,tries}:<job>`;
 * - by value: `portal:link:<hash>` and `portal:token:<hash>` hold a session id;
 *   `dead-letter-replayed:<place>` holds a dead letter's id; `attempt:<delivery>:<n>` (attempt
 *   marks) names a delivery of the tenant;
 * - as hash fields: `breakers:<process>` holds one field per destination with an open breaker.
 *
 * Global keys (`deliverers`, `breakers-version`, `replay:rate`) hold nothing of a tenant.
 */
export interface TenantIds {
  tenantId: string;
  /** API keys and portal sessions: what rate-limit keys are named by. */
  keyIds: Set<string>;
  ingesterIds: Set<string>;
  destinationIds: Set<string>;
  replayJobIds: Set<string>;
  portalSessionIds: Set<string>;
}

/** Which of the given ids are the tenant's: deliveries (attempt marks) and dead letters (replay claims). */
export interface OwnedIds {
  deliveries(ids: string[]): Promise<Set<string>>;
  deadLetters(ids: string[]): Promise<Set<string>>;
}

/** Keys read per SCAN step, and deleted per UNLINK: bounded batches, never one call over the whole keyspace. */
const BATCH = 1_000;

/** What a key is, by its name alone: the tenant's, not, or to be decided by its value or fields. */
type Verdict = 'tenant' | 'other' | 'session-value' | 'letter-value' | 'delivery' | 'breakers';

function verdictOf(rest: string, ids: TenantIds): Verdict {
  const t = ids.tenantId;
  const [head, second, third] = rest.split(':');
  if (rest === `api-keys.last-used.${t}`) return 'tenant';
  switch (head) {
    case 'idem':
    case 'claim':
    case 'replayed':
    case 'ops':
      return second === t ? 'tenant' : 'other';
    case 'ratelimit':
      return second !== undefined && ids.keyIds.has(second) ? 'tenant' : 'other';
    case 'ingest-limit':
      return (second === 'tenant' && third === t) || (second === 'hook' && third !== undefined && ids.ingesterIds.has(third)) ? 'tenant' : 'other';
    case 'send-slot':
      return second !== undefined && ids.destinationIds.has(second) ? 'tenant' : 'other';
    case 'lock':
      return second === 'destination' && third === t ? 'tenant' : 'other';
    case 'replay':
      return third !== undefined && ids.replayJobIds.has(third) ? 'tenant' : 'other';
    case 'portal':
      if (second === 'tenant') return third === t ? 'tenant' : 'other';
      if (second === 'session') return third !== undefined && ids.portalSessionIds.has(third) ? 'tenant' : 'other';
      return second === 'link' || second === 'token' ? 'session-value' : 'other';
    case 'dead-letter-replayed':
      return 'letter-value';
    case 'attempt':
      return 'delivery';
    case 'breakers':
      return 'breakers';
    default:
      return 'other';
  }
}

async function* scan(redis: Redis, match: string): AsyncGenerator<string[]> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', match, 'COUNT', BATCH);
    cursor = next;
    if (keys.length > 0) yield keys;
  } while (cursor !== '0');
}

/** The tenant's portal session ids: its index, and every session record that names it. */
export async function portalSessionIdsOf(redis: Redis, prefix: string, tenantId: string): Promise<Set<string>> {
  const ids = new Set(await redis.zrange(`${prefix}portal:tenant:${tenantId}`, 0, -1));
  for await (const keys of scan(redis, `${prefix}portal:session:*`)) {
    const values = await redis.mget(keys);
    values.forEach((v, i) => {
      if (v !== null && (JSON.parse(v) as { tenant_id?: string }).tenant_id === tenantId) ids.add(keys[i]!.slice(`${prefix}portal:session:`.length));
    });
  }
  return ids;
}

/**
 * Deletes the tenant's keys (and its fields of the breaker boards) under `prefix`, in one SCAN
 * pass of bounded steps. Returns how many keys were deleted and fields removed.
 */
export async function eraseRedisKeys(redis: Redis, prefix: string, ids: TenantIds, owned: OwnedIds): Promise<{ keys: number; fields: number }> {
  let deleted = 0;
  let fields = 0;
  const destinations = [...ids.destinationIds];
  for await (const keys of scan(redis, `${prefix}*`)) {
    const doomed: string[] = [];
    const byValue: { key: string; kind: 'session-value' | 'letter-value' }[] = [];
    const marks = new Map<string, string[]>();
    for (const key of keys) {
      const verdict = verdictOf(key.slice(prefix.length), ids);
      if (verdict === 'tenant') doomed.push(key);
      else if (verdict === 'session-value' || verdict === 'letter-value') byValue.push({ key, kind: verdict });
      else if (verdict === 'delivery') {
        const delivery = key.slice(prefix.length).split(':')[1] ?? '';
        marks.set(delivery, [...(marks.get(delivery) ?? []), key]);
      } else if (verdict === 'breakers' && destinations.length > 0) fields += await redis.hdel(key, ...destinations);
    }
    if (byValue.length > 0) {
      const values = await redis.mget(byValue.map((v) => v.key));
      const letters = await owned.deadLetters(byValue.filter((v, i) => v.kind === 'letter-value' && values[i] !== null).map((v) => values[byValue.indexOf(v)]!));
      byValue.forEach((v, i) => {
        const value = values[i];
        if (value === null || value === undefined) return;
        if (v.kind === 'session-value' ? ids.portalSessionIds.has(value) : letters.has(value)) doomed.push(v.key);
      });
    }
    if (marks.size > 0) for (const d of await owned.deliveries([...marks.keys()])) doomed.push(...(marks.get(d) ?? []));
    if (doomed.length > 0) deleted += await redis.unlink(...doomed);
  }
  return { keys: deleted, fields };
}
