-- The history of each destination's configuration: one row per change made through the API,
-- with the members that moved (credentials masked, signing secrets never present). Ids are
-- ULIDs, so ordering by id is ordering by time; a row written twice (a retried insert) is
-- deduplicated by its key.
CREATE TABLE IF NOT EXISTS {database}.destination_changes
(
    tenant_id      String,
    destination_id String,
    id             String,
    at             DateTime64(3, 'UTC'),
    actor          String,
    action         LowCardinality(String),
    changes        String CODEC(ZSTD(3))
)
ENGINE = ReplacingMergeTree
ORDER BY (tenant_id, destination_id, id);
