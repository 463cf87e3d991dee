-- Delivery attempts sorted by time within a tenant: the API's list (newest first, optionally by
-- status) reads the newest granules in key order and stops after a page, instead of merging every
-- row of the tenant. A delivery's own attempts are found through a bloom filter on its id, and a
-- rare status through a set index. Re-inserted outcomes still dedupe: the key holds the attempt's
-- time, which is part of the outcome record.
CREATE TABLE IF NOT EXISTS {database}.deliveries_by_time
(
    tenant_id       String,
    delivery_id     String,
    attempt_number  UInt32,
    event_id        String,
    destination_id  String,
    correlation_id  String,
    status          LowCardinality(String),
    response_code   Nullable(Int32),
    attempted_at    DateTime64(3, 'UTC'),
    duration_ms     UInt32,
    error_message   Nullable(String),
    body_sha256     String,
    next_attempt_at Nullable(DateTime64(3, 'UTC')),
    INDEX delivery_id_bloom delivery_id TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX status_set status TYPE set(8) GRANULARITY 1
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(attempted_at)
ORDER BY (tenant_id, attempted_at, delivery_id, attempt_number);

INSERT INTO {database}.deliveries_by_time SELECT * FROM {database}.deliveries FINAL;

EXCHANGE TABLES {database}.deliveries AND {database}.deliveries_by_time;

DROP TABLE {database}.deliveries_by_time;
