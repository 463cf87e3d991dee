-- Data-skipping indexes for the search filters of the deliveries list (bench scenario `search`
-- measures each). The list reads a tenant's attempts newest first and stops after a page, so a
-- filter that matches often needs no index; these skip granules for the rare matches, which
-- otherwise read every attempt of the tenant. Text is searched as lowerUTF8(column) LIKE '%text%',
-- the expression these ngram indexes are built on.

-- The type validation found for each event (the events row is written as received, before it):
-- the search's event_type filter reads the tenant's events of one type in key order, and the
-- list looks up the types of a page's events by id.
CREATE TABLE IF NOT EXISTS {database}.event_types
(
    tenant_id   String,
    event_id    String,
    event_type  String,
    received_at DateTime64(3, 'UTC'),
    INDEX event_id_bloom event_id TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(received_at)
ORDER BY (tenant_id, event_type, received_at, event_id);

ALTER TABLE {database}.deliveries ADD INDEX IF NOT EXISTS response_body_ngrams lowerUTF8(response_body) TYPE ngrambf_v1(3, 16384, 2, 0) GRANULARITY 1;
ALTER TABLE {database}.deliveries ADD INDEX IF NOT EXISTS response_code_minmax response_code TYPE minmax GRANULARITY 1;
ALTER TABLE {database}.deliveries ADD INDEX IF NOT EXISTS destination_id_bloom destination_id TYPE bloom_filter(0.01) GRANULARITY 1;
ALTER TABLE {database}.events ADD INDEX IF NOT EXISTS body_ngrams lowerUTF8(body) TYPE ngrambf_v1(3, 16384, 2, 0) GRANULARITY 1;
ALTER TABLE {database}.deliveries MATERIALIZE INDEX response_body_ngrams;
ALTER TABLE {database}.deliveries MATERIALIZE INDEX response_code_minmax;
ALTER TABLE {database}.deliveries MATERIALIZE INDEX destination_id_bloom;
ALTER TABLE {database}.events MATERIALIZE INDEX body_ngrams;
