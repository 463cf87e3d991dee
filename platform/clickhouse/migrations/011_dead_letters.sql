-- The dead letters of every stage (events.dlq) and their replays (events.dlq.replays), copied by
-- the sink. A letter belongs to the tenant its input record names; '' when its bytes do not
-- decode (the operator's: no tenant lists them). The bytes are kept as read, as a stored body
-- (core/stored-body.ts) with their SHA-256, so a replay writes back exactly the record that was
-- read. Letters are listed per tenant newest first, in key order; a letter the sink reads twice
-- has the same id and time and collapses into one row.
CREATE TABLE IF NOT EXISTS {database}.dead_letters
(
    tenant_id        String,
    id               String,
    at               DateTime64(3, 'UTC'),
    stage            LowCardinality(String),
    reason           String,
    source_topic     String,
    source_partition UInt32,
    source_offset    UInt64,
    record           LowCardinality(String),
    resource_id      String,
    named_tenant_id  String,
    event_id         Nullable(String),
    key              Nullable(String),
    value            String CODEC(ZSTD(3)),
    value_sha256     String,
    INDEX id_bloom id TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(at)
ORDER BY (tenant_id, at, id);

-- One row per input record put back: keyed by where the record was read, so that a record set
-- aside twice (two letters of one input, after a stage ran it again) is replayed once.
CREATE TABLE IF NOT EXISTS {database}.dead_letter_replays
(
    tenant_id        String,
    source_topic     String,
    source_partition UInt32,
    source_offset    UInt64,
    letter_id        String,
    stage            LowCardinality(String),
    event_id         Nullable(String),
    replayed_at      DateTime64(3, 'UTC'),
    replayed_by      String
)
ENGINE = ReplacingMergeTree
ORDER BY (tenant_id, source_topic, source_partition, source_offset);
