import type { Redis } from 'ioredis';
import { EntityLocks } from './entity-locks';

/** The lock an analytics rollup step holds (platform/clickhouse/analytics-rollup.ts), and an erasure's ClickHouse step. */
export const ANALYTICS_ROLLUP_LOCK = 'analytics-rollup';

/**
 * The lock across processes: held at most 3 minutes (a step of an hour of attempts, or an
 * erasure's deletes and the wait for their parts), waited for at most 2 minutes.
 */
export function analyticsRollupLock(redis: Redis, prefix: string): EntityLocks {
  return new EntityLocks(redis, prefix, { ttlMs: 180_000, waitMs: 120_000 });
}
