-- The trace of each attempt: the W3C trace id (32 lowercase hex) its outcome record's
-- `traceparent` header names, the same as in the attempt's log lines and the spans of its event.
-- Attempts recorded before, or whose records carried no trace context, keep ''.
ALTER TABLE {database}.deliveries ADD COLUMN IF NOT EXISTS trace_id String DEFAULT '';
