-- What search and replay jobs read of each attempt: the first 4 KiB of the response body, the
-- delivery an attempt replays and the replay job that queued it. Rows written before keep the
-- defaults (no body, no replay).
ALTER TABLE {database}.deliveries ADD COLUMN IF NOT EXISTS response_body String DEFAULT '' CODEC(ZSTD(3));
ALTER TABLE {database}.deliveries ADD COLUMN IF NOT EXISTS replay_of Nullable(String);
ALTER TABLE {database}.deliveries ADD COLUMN IF NOT EXISTS replay_job_id Nullable(String);
