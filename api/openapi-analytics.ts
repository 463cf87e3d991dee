import type { TenantOperation } from './openapi';
import { ANALYTICS_BUCKETS, ANALYTICS_GROUP_BY, MAX_GROUPS, MAX_TOP_ERRORS } from '../platform/clickhouse/analytics';
import { DEFAULT_RANGE_HOURS, MAX_ANALYTICS_BUCKETS, MAX_RANGE_DAYS } from './routes/analytics';
import { MAX_SEARCH_TEXT } from './routes/deliveries-query';

/**
 * The part of the OpenAPI document (api/openapi.ts spreads it in) for delivery analytics:
 * GET .../analytics and its schemas. Built with the document's own helpers.
 */

type Json = Record<string, unknown>;

export interface AnalyticsSchemaHelpers {
  schema(name: string): Json;
}

export function analyticsSchemas(h: AnalyticsSchemaHelpers): Json {
  const count = { type: 'integer', minimum: 0 };
  const ratio = (description: string) => ({ type: ['number', 'null'], minimum: 0, description });
  const quantiles = (description: string) => ({
    type: 'object',
    description,
    required: ['p50', 'p95', 'p99'],
    properties: { p50: { type: ['integer', 'null'] }, p95: { type: ['integer', 'null'] }, p99: { type: ['integer', 'null'] } },
    additionalProperties: false,
  });
  const figures = {
    attempts: { ...count, description: 'Attempts of every outcome.' },
    delivered: count,
    retrying: { ...count, description: 'Attempts that failed and were scheduled again.' },
    failed: { ...count, description: 'Attempts that failed for good (the delivery went to the dead-letter topic).' },
    dropped: { ...count, description: 'Attempts where the destination\'s transformation returned null: nothing was sent.' },
    success_rate: { ...ratio('delivered / (delivered + retrying + failed); `null` without such attempts.'), maximum: 1 },
    attempts_per_delivered: ratio('(delivered + retrying + failed) / delivered: attempts made per event delivered; `null` when nothing was delivered.'),
    attempt_latency_ms: quantiles('Duration of the attempts that sent something (every outcome but `dropped`), from the request to the answer or the failure, in ms; estimates from a histogram of 8 buckets per doubling, within 4.5% of the exact value (docs/analytics.md); `null` without such attempts.'),
    end_to_end_latency_ms: quantiles('For delivered attempts: from the event\'s receipt at its Hook URL to the end of the attempt that delivered it (attempted_at + duration - received_at), in ms; estimates from a histogram of 8 buckets per doubling, within 4.5% of the exact value (docs/analytics.md); `null` without such attempts (attempts recorded before the receipt time was kept have none).'),
  };
  const figuresRequired = Object.keys(figures);
  return {
    AnalyticsFigures: {
      type: 'object',
      description: 'What the analytics say of a set of attempts: counts by outcome, success rate, attempts per delivered event, latencies.',
      required: figuresRequired,
      properties: figures,
      additionalProperties: false,
    },
    AnalyticsBucket: {
      type: 'object',
      description: 'The figures of the attempts made in one bucket (`start` to `start` + `bucket_seconds`).',
      required: ['start', ...figuresRequired],
      properties: { start: { ...h.schema('Timestamp'), description: 'Start of the bucket (UTC).' }, ...figures },
      additionalProperties: false,
    },
    AnalyticsGroup: {
      type: 'object',
      description: `One group of the attempts by \`group_by\`: its totals over the range and its buckets that have attempts (others are left out). The ${MAX_GROUPS} groups with the most attempts are listed by key; the rest are folded into one group with \`other\` true.`,
      required: ['key', 'other', 'totals', 'buckets'],
      properties: {
        key: { type: ['string', 'null'], description: 'The destination id, event type, ingester id, HTTP status (`503`) or status class (`5xx`); `null` for attempts without one (no type, no answer, recorded before it was kept) and for the `other` group.' },
        other: { type: 'boolean', description: `The attempts of every group beyond the ${MAX_GROUPS} biggest.` },
        totals: h.schema('AnalyticsFigures'),
        buckets: { type: 'array', maxItems: MAX_ANALYTICS_BUCKETS, items: h.schema('AnalyticsBucket') },
      },
      additionalProperties: false,
    },
    DeliveryAnalytics: {
      type: 'object',
      description: `A tenant's delivery attempts over a range, per bucket (every bucket of the range, at most ${MAX_ANALYTICS_BUCKETS}) and per group when grouped, with totals and the most frequent error messages. A key limited to resource ids sees only attempts to its destinations. See docs/analytics.md for how each figure is computed and what duplicates do to the counts.`,
      required: ['from', 'to', 'bucket', 'bucket_seconds', 'group_by', 'destination_id', 'event_type', 'totals', 'buckets', 'groups', 'groups_total', 'top_errors'],
      properties: {
        from: { ...h.schema('Timestamp'), description: 'Start of the first bucket: the `from` asked, rounded down to a bucket edge.' },
        to: { ...h.schema('Timestamp'), description: 'End of the last bucket: the `to` asked, rounded up to a bucket edge.' },
        bucket: { type: 'string', enum: [...ANALYTICS_BUCKETS] },
        bucket_seconds: { type: 'integer', enum: [60, 3600, 86_400] },
        group_by: { type: ['string', 'null'], enum: [...ANALYTICS_GROUP_BY, null] },
        destination_id: { type: ['string', 'null'], description: 'The destination filter, as given.' },
        event_type: { type: ['string', 'null'], description: 'The event type filter, as given.' },
        totals: h.schema('AnalyticsFigures'),
        buckets: { type: 'array', maxItems: MAX_ANALYTICS_BUCKETS, items: h.schema('AnalyticsBucket') },
        groups: { anyOf: [{ type: 'array', maxItems: MAX_GROUPS + 1, items: h.schema('AnalyticsGroup') }, { type: 'null' }], description: '`null` without `group_by`; else the groups, biggest first, `other` last.' },
        groups_total: { type: ['integer', 'null'], minimum: 0, description: 'Distinct groups in the range before folding; `null` without `group_by`.' },
        top_errors: {
          type: 'array',
          maxItems: MAX_TOP_ERRORS,
          description: `The most frequent error messages of \`retrying\` and \`failed\` attempts over the range, at most ${MAX_TOP_ERRORS}, the most frequent first.`,
          items: { type: 'object', required: ['message', 'attempts'], properties: { message: { type: 'string' }, attempts: { type: 'integer', minimum: 1 } }, additionalProperties: false },
        },
      },
      additionalProperties: false,
    },
  };
}

export interface AnalyticsPathHelpers {
  /** `/v1/tenants/{tenant_id}` and the rate-limit form `/v1/tenants/:tenantId`. */
  P: string;
  T: string;
  tenant: Json;
  tenantOperation(o: TenantOperation): Json;
  ok(description: string, schemaName: string): Json;
}

export function analyticsPaths(h: AnalyticsPathHelpers): Json {
  const { P, T } = h;
  const time = (name: string, description: string): Json => ({ name, in: 'query', required: false, description, schema: { type: 'string', format: 'date-time' } });
  const text = (name: string, description: string): Json => ({ name, in: 'query', required: false, description, schema: { type: 'string', minLength: 1, maxLength: MAX_SEARCH_TEXT } });
  return {
    [`${P}/analytics`]: {
      parameters: [h.tenant],
      get: h.tenantOperation({
        operationId: 'getDeliveryAnalytics', summary: 'Delivery analytics over a range', tag: 'Stats', scope: 'read:stats', rateLimitRoute: `GET ${T}/analytics`,
        description: `The tenant's delivery attempts from \`from\` to \`to\` (rounded out to whole buckets, UTC), per bucket and, with \`group_by\`, per group (the ${MAX_GROUPS} biggest, the rest folded into \`other\`): attempts by outcome, success rate, attempts per delivered event, attempt latency and end-to-end latency (p50, p95, p99), and the ${MAX_TOP_ERRORS} most frequent error messages over the range. Served from per-minute, per-hour and per-day aggregates kept as attempts are recorded. Any parameter it does not take, or a value out of its bounds, answers 400 naming it.`,
        parameters: [
          time('from', `Start of the range, RFC 3339 (default: ${DEFAULT_RANGE_HOURS} h before \`to\`). At most ${MAX_RANGE_DAYS} days before \`to\`.`),
          time('to', 'End of the range, RFC 3339 (default: now).'),
          { name: 'bucket', in: 'query', required: false, description: `Width of a bucket. At most ${MAX_ANALYTICS_BUCKETS} buckets (a day of minutes, about 62 days of hours); more answer 400 naming \`bucket\`. Default \`hour\`, or \`day\` when the range holds more than ${MAX_ANALYTICS_BUCKETS} hours.`, schema: { type: 'string', enum: [...ANALYTICS_BUCKETS] } },
          { name: 'group_by', in: 'query', required: false, description: `Figures per destination, event type, HTTP status, status class (\`2xx\`...) or ingester besides the totals: the ${MAX_GROUPS} groups with the most attempts, the rest folded into one \`other\` group.`, schema: { type: 'string', enum: [...ANALYTICS_GROUP_BY] } },
          text('destination_id', 'Only attempts to this destination.'),
          text('event_type', 'Only attempts of events of this type.'),
        ],
        success: { '200': h.ok('The analytics.', 'DeliveryAnalytics') }, forbidden: 'ForbiddenRead',
      }),
    },
  };
}
