-- The delivery a replayed attempt replays, part of its leaf (v 2, see core/evidence-leaf.ts).
-- Leaves stored before, and leaves of deliveries that replay nothing, keep NULL.
ALTER TABLE {database}.evidence_leaves ADD COLUMN IF NOT EXISTS replay_of Nullable(String);
