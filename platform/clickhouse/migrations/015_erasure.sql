-- Erasing a tenant deletes its rows with a mutation, which rewrites each part without them and
-- keeps the replaced part on disk, inactive, for `old_parts_lifetime` (480 s by default) in case
-- the server restarts before the new part is synced. The erasure waits until those parts are
-- gone, so the tables holding a tenant's rows keep replaced parts 10 s instead: an erasure is done
-- within seconds, and the window in which a crash could lose a merge's work stays short.
-- Tables added later are given the same setting by the erasure itself (platform/erasure) before
-- their first mutation. The evidence tables keep the default: an erasure never touches them.
ALTER TABLE {database}.events MODIFY SETTING old_parts_lifetime = 10;
ALTER TABLE {database}.event_transitions MODIFY SETTING old_parts_lifetime = 10;
ALTER TABLE {database}.event_types MODIFY SETTING old_parts_lifetime = 10;
ALTER TABLE {database}.deliveries MODIFY SETTING old_parts_lifetime = 10;
ALTER TABLE {database}.destination_changes MODIFY SETTING old_parts_lifetime = 10;
ALTER TABLE {database}.logs MODIFY SETTING old_parts_lifetime = 10;
ALTER TABLE {database}.dead_letters MODIFY SETTING old_parts_lifetime = 10;
ALTER TABLE {database}.dead_letter_replays MODIFY SETTING old_parts_lifetime = 10
