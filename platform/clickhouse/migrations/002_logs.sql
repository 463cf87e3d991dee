CREATE TABLE IF NOT EXISTS {database}.logs
(
    tenant_id      String,
    id             String,
    ts             DateTime64(3, 'UTC'),
    level          LowCardinality(String),
    message        String,
    stage          LowCardinality(Nullable(String)),
    event_id       Nullable(String),
    delivery_id    Nullable(String),
    destination_id Nullable(String),
    ingester_id    Nullable(String),
    correlation_id Nullable(String),
    fields         String CODEC(ZSTD(3))
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(ts)
ORDER BY (tenant_id, id)
TTL toDateTime(ts) + INTERVAL 30 DAY;
