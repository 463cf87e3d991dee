import type { Redis } from 'ioredis';
import type { ErasedTenant } from '../../core/model';
import type { Logger } from '../../core/log';
import type { ConfigStore } from '../config-store/config-store';
import { eraseClickHouseRows, ownedIds, queryLogTables, tenantRowCounts, tenantTables, type ClickHouseTarget } from './clickhouse-rows';
import { eraseConfigEntities } from './config-entities';
import { eraseRedisKeys, portalSessionIdsOf, type TenantIds } from './redis-keys';
import { ANALYTICS_ROLLUP_LOCK, analyticsRollupLock } from '../redis/analytics-rollup-lock';

export interface ErasureDeps {
  store: ConfigStore;
  redis: Redis;
  /** The deployment's namespace in Redis. */
  redisPrefix: string;
  clickhouse: ClickHouseTarget;
  log: Logger;
}

/** What an erasure removed, counted per store; never any of the data. */
export interface ErasureReport {
  tenant_id: string;
  erased_at: string;
  /** Whether the tenant was found `erasing` already: an erasure that had stopped, finished now. */
  resumed: boolean;
  /** Config entities tombstoned, by kind (data keys first). */
  config: Record<string, number>;
  /** Redis keys deleted, and fields of the breaker boards removed (two passes: before and after ClickHouse). */
  redis: { keys: number; fields: number };
  /** ClickHouse rows deleted per table, and the parts replaced and removed from disk. */
  clickhouse: { rows: Record<string, number>; parts: number };
  /** The system tables keeping query texts that exist on this ClickHouse (none on the embedded engine). */
  query_logs: string[];
}

/** Erasures running in this process, by tenant: a second DELETE while one runs waits for it. */
const running = new Map<string, Promise<ErasureReport>>();

/**
 * Erases a tenant. It is marked `erasing` first (on the config topic: its Hook URLs, keys and
 * portal sessions stop at once in every process, and a stage drops its records), then, each step
 * done before the next begins so that a failure never leaves readable what an earlier step removed:
 *
 * 1. its config entities: the data keys first (its bodies sealed on Kafka can no longer be opened),
 *    then keys, destinations, ingesters with their secrets, and every other kind;
 * 2. its Redis keys (platform/erasure/redis-keys.ts);
 * 3. its ClickHouse rows in every table but the evidence log's, and the parts that held them,
 *    while no analytics rollup step runs (they skip tenants being erased once they see them so);
 *    then Redis again, and the rows counted again, for records that were in flight meanwhile;
 * 4. the marker `erased_tenant` (its id, when; no data), and last the tenant entity itself.
 *
 * A failure leaves the tenant `erasing`; DELETE again resumes from the start, each step finding
 * less to do. Resolves with the counts; the caller checks that the tenant exists.
 */
export function eraseTenant(deps: ErasureDeps, tenantId: string): Promise<ErasureReport> {
  const current = running.get(tenantId);
  if (current) return current;
  const run = erase(deps, tenantId).finally(() => running.delete(tenantId));
  running.set(tenantId, run);
  return run;
}

async function erase(deps: ErasureDeps, tenantId: string): Promise<ErasureReport> {
  const { store, redis, redisPrefix, clickhouse, log } = deps;
  const started = Date.now();
  await store.sync();
  const tenant = store.tenant(tenantId);
  if (!tenant) throw new Error(`tenant ${tenantId} does not exist`);
  const resumed = tenant.state === 'erasing';
  if (!resumed) {
    await store.update({ ...tenant, state: 'erasing', updated_at: new Date().toISOString() });
    log.warn('tenant erasure started', { tenant_id: tenantId });
  } else log.warn('tenant erasure resumed', { tenant_id: tenantId });

  // the ids Redis keys are named by, read before the entities go (ClickHouse adds those of a run that stopped)
  const tables = await tenantTables(clickhouse);
  const ids: TenantIds = {
    tenantId,
    keyIds: new Set(store.list('api_key', tenantId).map((k) => k.id)),
    ingesterIds: new Set(store.list('ingester', tenantId).map((i) => i.id)),
    destinationIds: new Set(store.list('destination', tenantId).map((d) => d.id)),
    replayJobIds: new Set(store.list('replay_job', tenantId).map((j) => j.id)),
    portalSessionIds: await portalSessionIdsOf(redis, redisPrefix, tenantId),
  };
  for (const s of ids.portalSessionIds) ids.keyIds.add(s);
  await idsFromClickHouse(clickhouse, tenantId, tables, ids);

  const config = await eraseConfigEntities(store, tenantId);
  const owned = {
    deliveries: (list: string[]) => ownedIds(clickhouse, tenantId, 'deliveries', list),
    deadLetters: (list: string[]) => ownedIds(clickhouse, tenantId, 'dead_letters', list),
  };
  const first = await eraseRedisKeys(redis, redisPrefix, ids, owned);
  // no analytics rollup step meanwhile: one begun before the tenant was marked would write its rows back into the views
  const ch = await analyticsRollupLock(redis, redisPrefix).withLock(ANALYTICS_ROLLUP_LOCK, async () => {
    const rows = await eraseClickHouseRows(clickhouse, tenantId, tables);
    // a record in flight when the tenant was marked may have been written since: once more
    const late = await tenantRowCounts(clickhouse, tenantId, tables);
    if (Object.values(late).some((n) => n > 0)) {
      const again = await eraseClickHouseRows(clickhouse, tenantId, tables);
      for (const [t, n] of Object.entries(again.rows)) rows.rows[t] = (rows.rows[t] ?? 0) + n;
      rows.parts += again.parts;
    }
    return rows;
  });
  const second = await eraseRedisKeys(redis, redisPrefix, ids, owned);

  const erasedAt = new Date().toISOString();
  const marker: ErasedTenant = { kind: 'erased_tenant', id: tenantId, tenant_id: tenantId, erased_at: erasedAt };
  await store.put(marker);
  await store.remove('tenant', tenantId, tenantId);

  const report: ErasureReport = {
    tenant_id: tenantId,
    erased_at: erasedAt,
    resumed,
    config,
    redis: { keys: first.keys + second.keys, fields: first.fields + second.fields },
    clickhouse: ch,
    query_logs: await queryLogTables(clickhouse),
  };
  log.warn('tenant erased', { ...report, config: JSON.stringify(config), redis: JSON.stringify(report.redis), clickhouse: JSON.stringify(ch), query_logs: report.query_logs.join(','), ms: Date.now() - started });
  return report;
}

/** Destinations and ingesters named in ClickHouse: after a run stopped midway, the config no longer lists them. */
async function idsFromClickHouse(ch: ClickHouseTarget, tenantId: string, tables: string[], ids: TenantIds): Promise<void> {
  const read = async (table: string, column: string, into: Set<string>) => {
    if (!tables.includes(table)) return;
    const rs = await ch.client.query({ query: `SELECT DISTINCT ${column} AS id FROM ${ch.database}.${table} WHERE tenant_id = {t:String} AND ${column} != ''`, query_params: { t: tenantId }, format: 'JSONEachRow' });
    for (const r of await rs.json<{ id: string }>()) into.add(r.id);
  };
  await read('deliveries', 'destination_id', ids.destinationIds);
  await read('event_transitions', 'ingester_id', ids.ingesterIds);
}
