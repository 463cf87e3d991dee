-- The term of the sequencer that sealed each checkpoint (evidence-batch.avsc fencing_token).
-- Checkpoints stored before it was recorded keep 0, the term their batches decode with.
ALTER TABLE {database}.evidence_checkpoints ADD COLUMN IF NOT EXISTS fencing_token UInt64 DEFAULT 0;
