-- Query copies of what flows through Kafka. Every table is a ReplacingMergeTree whose
-- ORDER BY names one record exactly, so a record the sink consumes twice collapses to one
-- row (queries that must not see duplicates before a merge read with FINAL).

CREATE TABLE IF NOT EXISTS {database}.events
(
    tenant_id      String,
    event_id       String,
    ingester_id    String,
    correlation_id String,
    received_at    DateTime64(3, 'UTC'),
    event_type     Nullable(String),
    content_type   Nullable(String),
    headers        String CODEC(ZSTD(3)),
    body           String CODEC(ZSTD(3)),
    body_sha256    String
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(received_at)
ORDER BY (tenant_id, event_id);

CREATE TABLE IF NOT EXISTS {database}.event_transitions
(
    tenant_id      String,
    event_id       String,
    ingester_id    String,
    state          LowCardinality(String),
    at             DateTime64(3, 'UTC'),
    correlation_id String,
    reason         Nullable(String),
    delivery_id    String,
    destination_id String
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(at)
ORDER BY (tenant_id, event_id, state, delivery_id, at);

CREATE TABLE IF NOT EXISTS {database}.deliveries
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
    next_attempt_at Nullable(DateTime64(3, 'UTC'))
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(attempted_at)
ORDER BY (tenant_id, delivery_id, attempt_number);
