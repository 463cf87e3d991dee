import express, { type Router } from 'express';
import type { ClickHouseClient } from '@clickhouse/client';
import { AppError } from '../../core/errors';
import { errorMessage, type Logger } from '../../core/log';
import type { ConfigStore } from '../../platform/config-store/config-store';
import { attemptCounts } from '../../platform/clickhouse/attempt-counts';
import type { StageLagReading } from '../../platform/kafka/stage-lag';
import type { BreakerEntry } from '../../platform/redis/breaker-board';
import { authOf, requireScope } from '../auth';

/** Narrowest and widest window of the stats, and the default. */
export const MIN_WINDOW_SECONDS = 5 * 60;
export const MAX_WINDOW_SECONDS = 24 * 3600;
export const DEFAULT_WINDOW_SECONDS = 3600;
/** Most buckets one answer holds: the bucket widens (1 min, 5 min, 15 min, 1 h) to stay within it. */
export const MAX_BUCKETS = 120;
const BUCKET_WIDTHS_SECONDS = [60, 300, 900, 3600];
/** Most destinations listed with their breaker state; the ones not closed come first. */
export const MAX_BREAKERS_LISTED = 200;
const WINDOW = /^([1-9][0-9]{0,4})([mh])$/;

/** What the stats read besides ClickHouse and the configuration. */
export interface StatsDeps {
  clickhouse: ClickHouseClient;
  database: string;
  store: ConfigStore;
  /** The pipeline's consumer lag per stage (cached: platform/kafka/stage-lag.ts). */
  lag: { read(): Promise<StageLagReading> };
  /** Breakers that are not closed, in every live deliver process (platform/redis/breaker-board.ts). */
  breakers: { entries(): Promise<BreakerEntry[]> };
  log: Logger;
}

/** `window` (`15m`, `6h`) in seconds, and the bucket width that keeps it within MAX_BUCKETS. */
export function statsWindowOf(raw: unknown): { windowSeconds: number; bucketSeconds: number } {
  let windowSeconds = DEFAULT_WINDOW_SECONDS;
  if (raw !== undefined) {
    const m = typeof raw === 'string' ? WINDOW.exec(raw) : null;
    const seconds = m ? Number(m[1]) * (m[2] === 'h' ? 3600 : 60) : NaN;
    if (!(seconds >= MIN_WINDOW_SECONDS && seconds <= MAX_WINDOW_SECONDS)) {
      const message = 'must be minutes or hours like 15m or 6h, from 5m to 24h';
      throw new AppError('validation-error', `window ${message}`, { errors: [{ field: 'window', message }] });
    }
    windowSeconds = seconds;
  }
  const bucketSeconds = BUCKET_WIDTHS_SECONDS.find((w) => windowSeconds / w <= MAX_BUCKETS) ?? BUCKET_WIDTHS_SECONDS[BUCKET_WIDTHS_SECONDS.length - 1]!;
  return { windowSeconds, bucketSeconds };
}

/**
 * GET .../stats: what a dashboard of one tenant shows. Its delivery attempts per bucket of the
 * window, by outcome (only attempts to its destinations a key limited to resource ids may see);
 * the pipeline's consumer lag per stage, one figure for all tenants; and the circuit breaker of
 * each of its destinations. Lag and breakers are null when Kafka or Redis does not answer: the
 * counts still come.
 */
export function statsRouter(deps: StatsDeps): Router {
  const router = express.Router({ mergeParams: true });
  router.get('/', requireScope('read:stats'), async (req, res) => {
    const key = authOf(res);
    const { windowSeconds, bucketSeconds } = statsWindowOf(req.query.window);
    const width = bucketSeconds * 1000;
    const now = Date.now();
    // the last bucket is the one running now
    const toMs = Math.floor(now / width) * width + width;
    const fromMs = toMs - Math.ceil((windowSeconds * 1000) / width) * width;
    const [buckets, lag, breakers] = await Promise.all([
      attemptCounts(deps.clickhouse, deps.database, { tenant: key.tenant_id, fromMs, toMs, bucketSeconds, destinationIds: key.resource_ids }),
      deps.lag.read().catch((err: unknown) => {
        deps.log.warn('stats: consumer lag unavailable', { error: errorMessage(err) });
        return null;
      }),
      deps.breakers.entries().catch((err: unknown) => {
        deps.log.warn('stats: breaker board unavailable', { error: errorMessage(err) });
        return null;
      }),
    ]);
    const totals = buckets.reduce((t, b) => ({ delivered: t.delivered + b.delivered, retrying: t.retrying + b.retrying, failed: t.failed + b.failed }), { delivered: 0, retrying: 0, failed: 0 });
    const attempts = totals.delivered + totals.retrying + totals.failed;
    const destinations = deps.store.list('destination', key.tenant_id).filter((d) => !key.resource_ids || key.resource_ids.includes(d.id));
    let breakerList = null;
    if (breakers) {
      const own = new Map(breakers.filter((b) => b.tenant_id === key.tenant_id).map((b) => [b.destination_id, b]));
      breakerList = destinations
        .map((d) => {
          const b = own.get(d.id);
          return { destination_id: d.id, name: d.name, status: d.status, state: b?.state ?? ('closed' as const), since: b ? new Date(b.since).toISOString() : null };
        })
        .sort((a, b) => Number(a.state === 'closed') - Number(b.state === 'closed') || (a.destination_id < b.destination_id ? -1 : 1))
        .slice(0, MAX_BREAKERS_LISTED);
    }
    res.json({
      window_seconds: windowSeconds,
      bucket_seconds: bucketSeconds,
      from: new Date(fromMs).toISOString(),
      to: new Date(toMs).toISOString(),
      buckets: buckets.map((b) => ({ start: new Date(b.startMs).toISOString(), delivered: b.delivered, retrying: b.retrying, failed: b.failed })),
      totals: { attempts, ...totals, error_rate: attempts === 0 ? null : (totals.retrying + totals.failed) / attempts },
      lag,
      destinations: destinations.length,
      breakers: breakerList,
      measured_at: new Date(now).toISOString(),
    });
  });
  return router;
}
