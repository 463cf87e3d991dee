-- What the analytics read (platform/clickhouse/analytics.ts). Each attempt row names the type of
-- its event, the ingester that received it and when (from the delivery task, via its outcome
-- record); rows written before keep '', '' and NULL (no type, no ingester, no end-to-end time).
ALTER TABLE {database}.deliveries ADD COLUMN IF NOT EXISTS event_type String DEFAULT '';
ALTER TABLE {database}.deliveries ADD COLUMN IF NOT EXISTS ingester_id String DEFAULT '';
ALTER TABLE {database}.deliveries ADD COLUMN IF NOT EXISTS received_at Nullable(DateTime64(3, 'UTC'));

-- Attempts per hour and day of each tenant: counts by outcome, and histograms of the attempt's
-- duration (attempts that sent something: not `dropped`) and of its end-to-end time (delivered
-- attempts whose event's receipt is known), with the smallest and largest value. A histogram maps
-- a bucket to its count: bucket 0 holds values under 1 ms, bucket b in 1..240 holds
-- [2^((b-1)/8), 2^(b/8)) ms (9% wide; 240 ends at 12.4 days), 241 everything above. Sums of such
-- maps merge cheaply where t-digest states did not; a read turns one into p50, p95 and p99 within
-- half a bucket (docs/analytics.md).
--
-- Each attempt is counted once per `keyed_by`: the dimensions a row is keyed by (the others are
-- '' and 0): 'none' (tenant and time only), 'destination', 'event_type', 'ingester',
-- 'response_code' (0: no answer), and 'all' (every one). A read takes the narrowest set holding
-- its group_by and filters: an hour of an ungrouped answer is one row, not one per destination,
-- type, ingester and code. Outcomes are columns, not part of the key, for the same reason.
-- A month of day buckets reads a few rows per day where hours would read twenty-four. Minute
-- buckets (a range of at most about a day) read the attempts themselves: at the volumes such
-- ranges hold, a view per minute keeps about a row per attempt for each `keyed_by`, and costs
-- every insert more than it saves a read.
-- The views count every row inserted into deliveries: an outcome the sink inserts twice (it read
-- its records again before committing, or retried an insert) is counted twice here, where the
-- raw table (ReplacingMergeTree) collapses it; docs/analytics.md gives the bound.
CREATE TABLE IF NOT EXISTS {database}.delivery_hours
(
    tenant_id      String,
    keyed_by       LowCardinality(String),
    hour           DateTime('UTC'),
    destination_id String,
    event_type     String,
    ingester_id    String,
    response_code  Int32,
    delivered      SimpleAggregateFunction(sum, UInt64),
    retrying       SimpleAggregateFunction(sum, UInt64),
    failed         SimpleAggregateFunction(sum, UInt64),
    dropped        SimpleAggregateFunction(sum, UInt64),
    latency        SimpleAggregateFunction(sumMap, Map(UInt8, UInt64)),
    latency_min    SimpleAggregateFunction(min, Nullable(UInt32)),
    latency_max    SimpleAggregateFunction(max, Nullable(UInt32)),
    end_to_end     SimpleAggregateFunction(sumMap, Map(UInt8, UInt64)),
    end_to_end_min SimpleAggregateFunction(min, Nullable(Int64)),
    end_to_end_max SimpleAggregateFunction(max, Nullable(Int64))
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(hour)
ORDER BY (tenant_id, keyed_by, hour, destination_id, event_type, ingester_id, response_code);

CREATE TABLE IF NOT EXISTS {database}.delivery_days
(
    tenant_id      String,
    keyed_by       LowCardinality(String),
    day            DateTime('UTC'),
    destination_id String,
    event_type     String,
    ingester_id    String,
    response_code  Int32,
    delivered      SimpleAggregateFunction(sum, UInt64),
    retrying       SimpleAggregateFunction(sum, UInt64),
    failed         SimpleAggregateFunction(sum, UInt64),
    dropped        SimpleAggregateFunction(sum, UInt64),
    latency        SimpleAggregateFunction(sumMap, Map(UInt8, UInt64)),
    latency_min    SimpleAggregateFunction(min, Nullable(UInt32)),
    latency_max    SimpleAggregateFunction(max, Nullable(UInt32)),
    end_to_end     SimpleAggregateFunction(sumMap, Map(UInt8, UInt64)),
    end_to_end_min SimpleAggregateFunction(min, Nullable(Int64)),
    end_to_end_max SimpleAggregateFunction(max, Nullable(Int64))
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (tenant_id, keyed_by, day, destination_id, event_type, ingester_id, response_code);

-- The error messages of failed and retrying attempts per hour, for the top errors of hour and day
-- buckets (minute buckets count them in the raw table): keyed by 'none'
-- (destination and type '') for answers without filters, and by 'all' for the others.
CREATE TABLE IF NOT EXISTS {database}.delivery_error_hours
(
    tenant_id      String,
    keyed_by       LowCardinality(String),
    hour           DateTime('UTC'),
    destination_id String,
    event_type     String,
    error_message  String,
    attempts       SimpleAggregateFunction(sum, UInt64)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(hour)
ORDER BY (tenant_id, keyed_by, hour, destination_id, event_type, error_message);

CREATE MATERIALIZED VIEW IF NOT EXISTS {database}.delivery_hours_mv TO {database}.delivery_hours AS
SELECT tenant_id, k.1 AS keyed_by, hour, k.2 AS destination_id, k.3 AS event_type, k.4 AS ingester_id, k.5 AS response_code,
       countIf(status = 'delivered') AS delivered, countIf(status = 'retrying') AS retrying, countIf(status = 'failed') AS failed, countIf(status = 'dropped') AS dropped,
       sumMapIf(map(if(duration_ms < 1, 0, toUInt8(least(1 + floor(8 * log2(duration_ms)), 241))), toUInt64(1)), sent) AS latency,
       minIf(toNullable(duration_ms), sent) AS latency_min, maxIf(toNullable(duration_ms), sent) AS latency_max,
       sumMapIf(map(if(e2e < 1, 0, toUInt8(least(1 + floor(8 * log2(e2e)), 241))), toUInt64(1)), e2e_known) AS end_to_end,
       minIf(toNullable(e2e), e2e_known) AS end_to_end_min, maxIf(toNullable(e2e), e2e_known) AS end_to_end_max
FROM (SELECT tenant_id, toStartOfHour(toDateTime(attempted_at, 'UTC')) AS hour, status, duration_ms, status != 'dropped' AS sent,
             toUnixTimestamp64Milli(attempted_at) + duration_ms - ifNull(toUnixTimestamp64Milli(received_at), 0) AS e2e, status = 'delivered' AND received_at IS NOT NULL AS e2e_known,
             ifNull(response_code, 0) AS code, arrayJoin([('none', '', '', '', 0), ('destination', destination_id, '', '', 0), ('event_type', '', event_type, '', 0), ('ingester', '', '', ingester_id, 0), ('response_code', '', '', '', code), ('all', destination_id, event_type, ingester_id, code)]) AS k
      FROM {database}.deliveries)
GROUP BY tenant_id, k, hour;

CREATE MATERIALIZED VIEW IF NOT EXISTS {database}.delivery_days_mv TO {database}.delivery_days AS
SELECT tenant_id, k.1 AS keyed_by, day, k.2 AS destination_id, k.3 AS event_type, k.4 AS ingester_id, k.5 AS response_code,
       countIf(status = 'delivered') AS delivered, countIf(status = 'retrying') AS retrying, countIf(status = 'failed') AS failed, countIf(status = 'dropped') AS dropped,
       sumMapIf(map(if(duration_ms < 1, 0, toUInt8(least(1 + floor(8 * log2(duration_ms)), 241))), toUInt64(1)), sent) AS latency,
       minIf(toNullable(duration_ms), sent) AS latency_min, maxIf(toNullable(duration_ms), sent) AS latency_max,
       sumMapIf(map(if(e2e < 1, 0, toUInt8(least(1 + floor(8 * log2(e2e)), 241))), toUInt64(1)), e2e_known) AS end_to_end,
       minIf(toNullable(e2e), e2e_known) AS end_to_end_min, maxIf(toNullable(e2e), e2e_known) AS end_to_end_max
FROM (SELECT tenant_id, toStartOfDay(toDateTime(attempted_at, 'UTC')) AS day, status, duration_ms, status != 'dropped' AS sent,
             toUnixTimestamp64Milli(attempted_at) + duration_ms - ifNull(toUnixTimestamp64Milli(received_at), 0) AS e2e, status = 'delivered' AND received_at IS NOT NULL AS e2e_known,
             ifNull(response_code, 0) AS code, arrayJoin([('none', '', '', '', 0), ('destination', destination_id, '', '', 0), ('event_type', '', event_type, '', 0), ('ingester', '', '', ingester_id, 0), ('response_code', '', '', '', code), ('all', destination_id, event_type, ingester_id, code)]) AS k
      FROM {database}.deliveries)
GROUP BY tenant_id, k, day;

CREATE MATERIALIZED VIEW IF NOT EXISTS {database}.delivery_error_hours_mv TO {database}.delivery_error_hours AS
SELECT tenant_id, k.1 AS keyed_by, hour, k.2 AS destination_id, k.3 AS event_type, error_message, count() AS attempts
FROM (SELECT tenant_id, toStartOfHour(toDateTime(attempted_at, 'UTC')) AS hour, assumeNotNull(error_message) AS error_message,
             arrayJoin([('none', '', ''), ('all', destination_id, event_type)]) AS k
      FROM {database}.deliveries
      WHERE error_message IS NOT NULL AND status IN ('retrying', 'failed'))
GROUP BY tenant_id, k, hour, error_message;

INSERT INTO {database}.delivery_hours
SELECT tenant_id, k.1 AS keyed_by, hour, k.2 AS destination_id, k.3 AS event_type, k.4 AS ingester_id, k.5 AS response_code,
       countIf(status = 'delivered') AS delivered, countIf(status = 'retrying') AS retrying, countIf(status = 'failed') AS failed, countIf(status = 'dropped') AS dropped,
       sumMapIf(map(if(duration_ms < 1, 0, toUInt8(least(1 + floor(8 * log2(duration_ms)), 241))), toUInt64(1)), sent) AS latency,
       minIf(toNullable(duration_ms), sent) AS latency_min, maxIf(toNullable(duration_ms), sent) AS latency_max,
       sumMapIf(map(if(e2e < 1, 0, toUInt8(least(1 + floor(8 * log2(e2e)), 241))), toUInt64(1)), e2e_known) AS end_to_end,
       minIf(toNullable(e2e), e2e_known) AS end_to_end_min, maxIf(toNullable(e2e), e2e_known) AS end_to_end_max
FROM (SELECT tenant_id, toStartOfHour(toDateTime(attempted_at, 'UTC')) AS hour, status, duration_ms, status != 'dropped' AS sent,
             toUnixTimestamp64Milli(attempted_at) + duration_ms - ifNull(toUnixTimestamp64Milli(received_at), 0) AS e2e, status = 'delivered' AND received_at IS NOT NULL AS e2e_known,
             ifNull(response_code, 0) AS code, arrayJoin([('none', '', '', '', 0), ('destination', destination_id, '', '', 0), ('event_type', '', event_type, '', 0), ('ingester', '', '', ingester_id, 0), ('response_code', '', '', '', code), ('all', destination_id, event_type, ingester_id, code)]) AS k
      FROM {database}.deliveries FINAL)
GROUP BY tenant_id, k, hour;

INSERT INTO {database}.delivery_days
SELECT tenant_id, k.1 AS keyed_by, day, k.2 AS destination_id, k.3 AS event_type, k.4 AS ingester_id, k.5 AS response_code,
       countIf(status = 'delivered') AS delivered, countIf(status = 'retrying') AS retrying, countIf(status = 'failed') AS failed, countIf(status = 'dropped') AS dropped,
       sumMapIf(map(if(duration_ms < 1, 0, toUInt8(least(1 + floor(8 * log2(duration_ms)), 241))), toUInt64(1)), sent) AS latency,
       minIf(toNullable(duration_ms), sent) AS latency_min, maxIf(toNullable(duration_ms), sent) AS latency_max,
       sumMapIf(map(if(e2e < 1, 0, toUInt8(least(1 + floor(8 * log2(e2e)), 241))), toUInt64(1)), e2e_known) AS end_to_end,
       minIf(toNullable(e2e), e2e_known) AS end_to_end_min, maxIf(toNullable(e2e), e2e_known) AS end_to_end_max
FROM (SELECT tenant_id, toStartOfDay(toDateTime(attempted_at, 'UTC')) AS day, status, duration_ms, status != 'dropped' AS sent,
             toUnixTimestamp64Milli(attempted_at) + duration_ms - ifNull(toUnixTimestamp64Milli(received_at), 0) AS e2e, status = 'delivered' AND received_at IS NOT NULL AS e2e_known,
             ifNull(response_code, 0) AS code, arrayJoin([('none', '', '', '', 0), ('destination', destination_id, '', '', 0), ('event_type', '', event_type, '', 0), ('ingester', '', '', ingester_id, 0), ('response_code', '', '', '', code), ('all', destination_id, event_type, ingester_id, code)]) AS k
      FROM {database}.deliveries FINAL)
GROUP BY tenant_id, k, day;

INSERT INTO {database}.delivery_error_hours
SELECT tenant_id, k.1 AS keyed_by, hour, k.2 AS destination_id, k.3 AS event_type, error_message, count() AS attempts
FROM (SELECT tenant_id, toStartOfHour(toDateTime(attempted_at, 'UTC')) AS hour, assumeNotNull(error_message) AS error_message,
             arrayJoin([('none', '', ''), ('all', destination_id, event_type)]) AS k
      FROM {database}.deliveries FINAL
      WHERE error_message IS NOT NULL AND status IN ('retrying', 'failed'))
GROUP BY tenant_id, k, hour, error_message;
