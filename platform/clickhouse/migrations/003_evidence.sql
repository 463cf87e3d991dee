-- The evidence log's query copy. Kafka (evidence.leaves) is the record; these tables are
-- rebuilt from it by the sink and dedupe on replay.

-- One row per leaf: the delivery attempt it records and where it sits in the tree.
CREATE TABLE IF NOT EXISTS {database}.evidence_leaves
(
    tenant_id       String,
    delivery_id     String,
    attempt_number  UInt32,
    leaf_index      UInt64,
    event_id        String,
    destination_id  String,
    correlation_id  String,
    status          LowCardinality(String),
    response_code   Nullable(Int32),
    attempted_at    DateTime64(3, 'UTC'),
    body_sha256     String,
    leaf_hash       String,
    first_tree_size UInt64,
    sealed_at       DateTime64(3, 'UTC'),
    INDEX leaf_index_range leaf_index TYPE minmax GRANULARITY 1
)
ENGINE = ReplacingMergeTree
ORDER BY (tenant_id, delivery_id, attempt_number, leaf_index);

-- Every complete subtree hash (level 0 = leaves): a proof reads O(log n) of them.
CREATE TABLE IF NOT EXISTS {database}.evidence_nodes
(
    level    UInt8,
    idx      UInt64,
    hash_hex String EPHEMERAL,
    hash     FixedString(32) DEFAULT unhex(hash_hex)
)
ENGINE = ReplacingMergeTree
ORDER BY (level, idx)
SETTINGS index_granularity = 256;

-- Every signed checkpoint, one per sealed batch.
CREATE TABLE IF NOT EXISTS {database}.evidence_checkpoints
(
    tree_size   UInt64,
    first_index UInt64,
    root_hash   String,
    checkpoint  String,
    sealed_at   DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree
ORDER BY tree_size;
