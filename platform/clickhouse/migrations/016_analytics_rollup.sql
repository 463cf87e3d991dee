-- The analytics views (migration 013) are filled by a rollup every ANALYTICS_ROLLUP_SECONDS
-- (platform/clickhouse/analytics-rollup.ts) instead of materialized views. A materialized view runs
-- on every insert of the sink (twice a second under load) and writes a part into each of its three
-- tables each time; that took the sink's insert of 1,000 attempts from about 28 to 77 us per row
-- of CPU on the embedded engine, while the same aggregation over many seconds of attempts at once
-- costs about 1 us per row.
DROP VIEW IF EXISTS {database}.delivery_hours_mv;
DROP VIEW IF EXISTS {database}.delivery_days_mv;
DROP VIEW IF EXISTS {database}.delivery_error_hours_mv;

-- When ClickHouse stored each attempt (the insert's start): the rollup takes the attempts stored in
-- a window of this time. Attempts stored before this migration were counted by the views already:
-- they are given the epoch (written into their parts before the default becomes the insert's time,
-- since a part without the column would otherwise read the default of the time it is read).
ALTER TABLE {database}.deliveries ADD COLUMN IF NOT EXISTS stored_at DateTime64(3, 'UTC') DEFAULT toDateTime64(0, 3, 'UTC');
ALTER TABLE {database}.deliveries MATERIALIZE COLUMN stored_at SETTINGS mutations_sync = 2;
ALTER TABLE {database}.deliveries MODIFY COLUMN stored_at DateTime64(3, 'UTC') DEFAULT now64(3);
ALTER TABLE {database}.deliveries ADD INDEX IF NOT EXISTS stored_at_minmax stored_at TYPE minmax GRANULARITY 1;

-- A rollup step names its inserts (insert_deduplication_token), so that a step done again after a
-- crash adds nothing twice: the views keep the names of their latest inserts.
ALTER TABLE {database}.delivery_hours MODIFY SETTING non_replicated_deduplication_window = 1000;
ALTER TABLE {database}.delivery_days MODIFY SETTING non_replicated_deduplication_window = 1000;
ALTER TABLE {database}.delivery_error_hours MODIFY SETTING non_replicated_deduplication_window = 1000;

-- How far the rollup got: the attempts stored up to `rolled_to` are in the views once `done`; a step
-- recorded and not done is done again, with the same window. The newest row (by `version`) counts.
CREATE TABLE IF NOT EXISTS {database}.analytics_rollups
(
    name        LowCardinality(String),
    rolled_from DateTime64(3, 'UTC'),
    rolled_to   DateTime64(3, 'UTC'),
    done        UInt8,
    version     UInt64,
    at          DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(version)
ORDER BY name;

INSERT INTO {database}.analytics_rollups (name, rolled_from, rolled_to, done, version)
SELECT 'deliveries', now64(3), now64(3), 1, toUInt64(toUnixTimestamp64Milli(now64(3))) * 2 + 1
