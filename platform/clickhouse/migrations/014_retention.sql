-- Retention (docs/retention.md). The sink writes two expiry times on each row, from the
-- tenant's periods or the deployment's (RETENTION_BODIES, RETENTION_ATTEMPTS, RETENTION_LOGS):
-- `body_expires_at`, past which a column TTL clears the body columns (they fall back to their
-- defaults; the row and its SHA-256 stay), and `expires_at`, past which a row TTL deletes the
-- row. A period of `forever` writes the largest DateTime (2106). Rows stored before keep the
-- defaults: for ever, except log lines, which keep the 30 days they had. The evidence tables
-- have no TTL: leaves are hashes, and proofs must verify after the bodies are gone.
--
-- A minmax index on each expiry column lets the sink's sweeper (platform/clickhouse/retention.ts)
-- find the partitions holding newly expired rows without reading the table; a part holding expired
-- rows gets a TTL merge at most an hour after the last one (merge_with_ttl_timeout, down from 4 h).

ALTER TABLE {database}.events ADD COLUMN IF NOT EXISTS body_expires_at DateTime('UTC') DEFAULT toDateTime(4294967295, 'UTC');
ALTER TABLE {database}.events ADD COLUMN IF NOT EXISTS expires_at DateTime('UTC') DEFAULT toDateTime(4294967295, 'UTC');
ALTER TABLE {database}.events ADD INDEX IF NOT EXISTS expires_at_minmax expires_at TYPE minmax GRANULARITY 1;
ALTER TABLE {database}.events ADD INDEX IF NOT EXISTS body_expires_at_minmax body_expires_at TYPE minmax GRANULARITY 1;
ALTER TABLE {database}.events MODIFY COLUMN body String CODEC(ZSTD(3)) TTL body_expires_at;
ALTER TABLE {database}.events MODIFY COLUMN headers String DEFAULT '[]' CODEC(ZSTD(3)) TTL body_expires_at;
ALTER TABLE {database}.events MODIFY TTL expires_at;
ALTER TABLE {database}.events MODIFY SETTING merge_with_ttl_timeout = 3600;

ALTER TABLE {database}.deliveries ADD COLUMN IF NOT EXISTS body_expires_at DateTime('UTC') DEFAULT toDateTime(4294967295, 'UTC');
ALTER TABLE {database}.deliveries ADD COLUMN IF NOT EXISTS expires_at DateTime('UTC') DEFAULT toDateTime(4294967295, 'UTC');
ALTER TABLE {database}.deliveries ADD INDEX IF NOT EXISTS expires_at_minmax expires_at TYPE minmax GRANULARITY 1;
ALTER TABLE {database}.deliveries ADD INDEX IF NOT EXISTS body_expires_at_minmax body_expires_at TYPE minmax GRANULARITY 1;
ALTER TABLE {database}.deliveries MODIFY COLUMN response_body String DEFAULT '' CODEC(ZSTD(3)) TTL body_expires_at;
ALTER TABLE {database}.deliveries MODIFY TTL expires_at;
ALTER TABLE {database}.deliveries MODIFY SETTING merge_with_ttl_timeout = 3600;

ALTER TABLE {database}.event_transitions ADD COLUMN IF NOT EXISTS expires_at DateTime('UTC') DEFAULT toDateTime(4294967295, 'UTC');
ALTER TABLE {database}.event_transitions ADD INDEX IF NOT EXISTS expires_at_minmax expires_at TYPE minmax GRANULARITY 1;
ALTER TABLE {database}.event_transitions MODIFY TTL expires_at;
ALTER TABLE {database}.event_transitions MODIFY SETTING merge_with_ttl_timeout = 3600;

ALTER TABLE {database}.event_types ADD COLUMN IF NOT EXISTS expires_at DateTime('UTC') DEFAULT toDateTime(4294967295, 'UTC');
ALTER TABLE {database}.event_types ADD INDEX IF NOT EXISTS expires_at_minmax expires_at TYPE minmax GRANULARITY 1;
ALTER TABLE {database}.event_types MODIFY TTL expires_at;
ALTER TABLE {database}.event_types MODIFY SETTING merge_with_ttl_timeout = 3600;

ALTER TABLE {database}.logs ADD COLUMN IF NOT EXISTS expires_at DateTime('UTC') DEFAULT toDateTime(ts) + INTERVAL 30 DAY;
ALTER TABLE {database}.logs ADD INDEX IF NOT EXISTS expires_at_minmax expires_at TYPE minmax GRANULARITY 1;
ALTER TABLE {database}.logs MODIFY TTL expires_at;
ALTER TABLE {database}.logs MODIFY SETTING merge_with_ttl_timeout = 3600;

ALTER TABLE {database}.dead_letters ADD COLUMN IF NOT EXISTS body_expires_at DateTime('UTC') DEFAULT toDateTime(4294967295, 'UTC');
ALTER TABLE {database}.dead_letters ADD COLUMN IF NOT EXISTS expires_at DateTime('UTC') DEFAULT toDateTime(4294967295, 'UTC');
ALTER TABLE {database}.dead_letters ADD INDEX IF NOT EXISTS expires_at_minmax expires_at TYPE minmax GRANULARITY 1;
ALTER TABLE {database}.dead_letters ADD INDEX IF NOT EXISTS body_expires_at_minmax body_expires_at TYPE minmax GRANULARITY 1;
ALTER TABLE {database}.dead_letters MODIFY COLUMN value String CODEC(ZSTD(3)) TTL body_expires_at;
ALTER TABLE {database}.dead_letters MODIFY TTL expires_at;
ALTER TABLE {database}.dead_letters MODIFY SETTING merge_with_ttl_timeout = 3600;

ALTER TABLE {database}.dead_letter_replays ADD COLUMN IF NOT EXISTS expires_at DateTime('UTC') DEFAULT toDateTime(4294967295, 'UTC');
ALTER TABLE {database}.dead_letter_replays ADD INDEX IF NOT EXISTS expires_at_minmax expires_at TYPE minmax GRANULARITY 1;
ALTER TABLE {database}.dead_letter_replays MODIFY TTL expires_at;
ALTER TABLE {database}.dead_letter_replays MODIFY SETTING merge_with_ttl_timeout = 3600;
