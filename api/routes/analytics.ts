import express, { type Router } from 'express';
import type { ClickHouseClient } from '@clickhouse/client';
import { AppError } from '../../core/errors';
import {
  ANALYTICS_BUCKETS,
  ANALYTICS_GROUP_BY,
  BUCKET_SECONDS,
  deliveryAnalytics,
  type AnalyticsAnswer,
  type AnalyticsBucket,
  type AnalyticsQuery,
  type Figures,
} from '../../platform/clickhouse/analytics';
import { authOf, requireScope } from '../auth';
import { clickHouseTimeOf, singleParamOf, textParamOf } from './deliveries-query';

/** Widest range asked (before it is rounded out to whole buckets), and the default. */
export const MAX_RANGE_DAYS = 90;
export const DEFAULT_RANGE_HOURS = 24;
/** Most buckets one answer holds; a range and bucket that need more answer 400 naming `bucket`. */
export const MAX_ANALYTICS_BUCKETS = 1500;

const DAY_MS = 86_400_000;
const PARAMS = new Set(['from', 'to', 'bucket', 'group_by', 'destination_id', 'event_type']);

/** What the query string asks: the query of platform/clickhouse/analytics.ts but whose attempts (the key's). */
export type AnalyticsParams = Omit<AnalyticsQuery, 'tenant' | 'destinationIds'>;

type Problem = { field: string; message: string };

/**
 * The parameters of GET .../analytics from its query string, every problem at once (400
 * validation-error naming each parameter). `to` defaults to `now`, `from` to 24 h before `to`;
 * `bucket` defaults to `hour`, or `day` when the range needs more than MAX_ANALYTICS_BUCKETS hours.
 */
export function analyticsParamsOf(query: Record<string, unknown>, now: number): AnalyticsParams {
  const errors: Problem[] = [];
  for (const name of Object.keys(query)) if (!PARAMS.has(name)) errors.push({ field: name, message: `is not a parameter of this operation (known: ${[...PARAMS].join(', ')})` });
  const single = singleParamOf(query, errors);
  const time = (name: string): number | null | undefined => {
    const v = single(name);
    if (v === undefined) return undefined;
    const t = clickHouseTimeOf(v);
    if (t === null) {
      errors.push({ field: name, message: 'must be an RFC 3339 date-time (2026-01-02T03:04:05Z)' });
      return null;
    }
    return Date.parse(`${t.replace(' ', 'T')}Z`);
  };
  const oneOf = <T extends string>(name: string, values: readonly T[]): T | null => {
    const v = single(name);
    if (v === undefined) return null;
    if (!(values as readonly string[]).includes(v)) {
      errors.push({ field: name, message: `must be one of ${values.join(', ')}` });
      return null;
    }
    return v as T;
  };
  const text = textParamOf(single, errors);

  const toGiven = time('to');
  const fromGiven = time('from');
  const to = toGiven ?? now;
  const from = fromGiven ?? to - DEFAULT_RANGE_HOURS * 3_600_000;
  const bucketGiven = oneOf('bucket', ANALYTICS_BUCKETS);
  const groupBy = oneOf('group_by', ANALYTICS_GROUP_BY);
  const destinationId = text('destination_id');
  const eventType = text('event_type');
  let bucket: AnalyticsBucket = bucketGiven ?? 'hour';
  let fromMs = 0;
  let toMs = 0;
  if (fromGiven !== null && toGiven !== null) {
    // `from` alone after now, or after `to`: either way `from` is the one to change
    if (from >= to) errors.push({ field: 'from', message: 'must be earlier than to (default: now)' });
    else if (to - from > MAX_RANGE_DAYS * DAY_MS) errors.push({ field: 'from', message: `must be at most ${MAX_RANGE_DAYS} days before to` });
    else {
      const roundOut = (b: AnalyticsBucket) => {
        const width = BUCKET_SECONDS[b] * 1000;
        return { fromMs: Math.floor(from / width) * width, toMs: Math.ceil(to / width) * width, width };
      };
      if (!bucketGiven && (roundOut('hour').toMs - roundOut('hour').fromMs) / 3_600_000 > MAX_ANALYTICS_BUCKETS) bucket = 'day';
      const r = roundOut(bucket);
      const n = (r.toMs - r.fromMs) / r.width;
      if (n > MAX_ANALYTICS_BUCKETS) errors.push({ field: 'bucket', message: `${bucket} buckets over this range would be ${n}, more than ${MAX_ANALYTICS_BUCKETS}: take a wider bucket or a shorter range` });
      ({ fromMs, toMs } = r);
    }
  }
  if (errors.length > 0) throw new AppError('validation-error', errors.map((e) => `${e.field} ${e.message}`).join('; '), { errors });
  return { fromMs, toMs, bucket, groupBy, destinationId, eventType };
}

const at = (ms: number) => new Date(ms).toISOString();
/** The body of GET .../analytics: the parameters as applied (the range rounded out to whole buckets), then the answer. */
export function analyticsBody(p: Pick<AnalyticsQuery, 'fromMs' | 'toMs' | 'bucket' | 'groupBy' | 'destinationId' | 'eventType'>, a: AnalyticsAnswer) {
  // each bucket's start, written once: the groups' buckets repeat the answer's starts
  const starts = new Map<number, string>();
  const startOf = (ms: number) => {
    let s = starts.get(ms);
    if (s === undefined) starts.set(ms, (s = at(ms)));
    return s;
  };
  /** A bucket as the API shows it: its start first, then its figures (one literal: an answer has up to tens of thousands). */
  const bucketOut = (b: Figures & { startMs: number }) => ({
    start: startOf(b.startMs),
    attempts: b.attempts,
    delivered: b.delivered,
    retrying: b.retrying,
    failed: b.failed,
    dropped: b.dropped,
    success_rate: b.success_rate,
    attempts_per_delivered: b.attempts_per_delivered,
    attempt_latency_ms: b.attempt_latency_ms,
    end_to_end_latency_ms: b.end_to_end_latency_ms,
  });
  return {
    from: at(p.fromMs),
    to: at(p.toMs),
    bucket: p.bucket,
    bucket_seconds: BUCKET_SECONDS[p.bucket],
    group_by: p.groupBy,
    destination_id: p.destinationId,
    event_type: p.eventType,
    totals: a.totals,
    buckets: a.buckets.map(bucketOut),
    groups: a.groups?.map((g) => ({ key: g.key, other: g.other, totals: g.totals, buckets: g.buckets.map(bucketOut) })) ?? null,
    groups_total: a.groupsTotal,
    top_errors: a.topErrors,
  };
}

/**
 * GET .../analytics: a tenant's delivery attempts over a range, per bucket (and per group), by
 * outcome, with success rate, attempts per delivered event, attempt and end-to-end latency and
 * the most frequent errors (docs/analytics.md). Read from the per-minute, per-hour and per-day
 * views of migration 013; a key limited to resource ids sees only attempts to its destinations.
 */
export function analyticsRouter(clickhouse: ClickHouseClient, database: string): Router {
  const router = express.Router({ mergeParams: true });
  router.get('/', requireScope('read:stats'), async (req, res) => {
    const key = authOf(res);
    const now = Date.now();
    const p = analyticsParamsOf(req.query as Record<string, unknown>, now);
    const a = await deliveryAnalytics(clickhouse, database, { tenant: key.tenant_id, ...p, destinationIds: key.resource_ids ?? null });
    res.json(analyticsBody(p, a));
  });
  return router;
}
