-- Search over delivery attempts. The list reads a tenant's attempts newest first in key order
-- (tenant_id, attempted_at, ...) and stops after a page; every filter is a condition on that read.
-- Data-skipping indexes for the filters (ngram bloom filters over lowerUTF8 of
-- deliveries.response_body and events.body, a minmax on response_code, a bloom filter on
-- destination_id) were measured by the bench scenario `search` at 10 million attempts and did
-- not help: a tenant's granules mix its destinations and codes, and bodies carrying ids saturate
-- the ngram filters, so none skipped enough to pay for its insert cost. None is kept.

-- The type validation found for each event (the events row is written as received, before it):
-- the event_type filter reads the tenant's events of one type in key order, and the list looks
-- up the types of a page's events by id through the bloom filter.
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
