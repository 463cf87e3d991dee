import type { ClickHouseClient } from '@clickhouse/client';
import type { Admin } from 'kafkajs';
import type { Redis } from 'ioredis';
import type { DependencyName, DependencyStatus, HealthProbe } from '../api/routes/health';
import { errorMessage } from '../core/log';
import { withTimeout } from '../core/timeout';

export interface Connections {
  kafkaAdmin?: Admin;
  schemaRegistryUrl?: string;
  redis?: Redis;
  clickhouse?: ClickHouseClient;
  /** This process runs no stage that uses ClickHouse. */
  clickhouseUnused?: boolean;
  /** Set once every stage of this process runs and the API serves. */
  ready?: boolean;
}

async function timed(check: () => Promise<unknown>, timeoutMs = 2_000): Promise<DependencyStatus> {
  const started = performance.now();
  try {
    await withTimeout(check(), timeoutMs);
    return { status: 'up', latency_ms: Math.round(performance.now() - started) };
  } catch (err) {
    return { status: 'down', detail: errorMessage(err) };
  }
}

/** Checks each dependency live; one that is not connected yet reports `starting`. */
export function healthProbe(connections: Connections): HealthProbe {
  const starting: DependencyStatus = { status: 'starting', detail: 'not connected yet' };
  return {
    async check() {
      const { kafkaAdmin, schemaRegistryUrl, redis, clickhouse } = connections;
      const [kafka, schema_registry, redisStatus, clickhouseStatus] = await Promise.all([
        kafkaAdmin ? timed(() => kafkaAdmin.describeCluster()) : starting,
        schemaRegistryUrl
          ? timed(async () => {
              const res = await fetch(`${schemaRegistryUrl}/subjects`, { signal: AbortSignal.timeout(2_000) });
              if (!res.ok) throw new Error(`registry answered ${res.status}`);
            })
          : starting,
        redis ? timed(() => redis.ping()) : starting,
        connections.clickhouseUnused
          ? ({ status: 'unused', detail: 'no stage of this process uses ClickHouse' } as DependencyStatus)
          : clickhouse
          ? timed(async () => {
              const r = await clickhouse.ping();
              if (!r.success) throw r.error;
            })
          : starting,
      ]);
      const pipeline: DependencyStatus = connections.ready ? { status: 'up' } : { status: 'starting', detail: 'stages and API are starting' };
      const out: Record<DependencyName, DependencyStatus> = { kafka, schema_registry, redis: redisStatus, clickhouse: clickhouseStatus, pipeline };
      return out;
    },
  };
}
