-- Why the service changed a destination itself (the delivery stage disables one on a 410 Gone):
-- JSON {delivery_id, event_id, attempt_number, response_code} of the attempt that did it. Changes
-- made through the API, and every row stored before, keep ''.
ALTER TABLE {database}.destination_changes ADD COLUMN IF NOT EXISTS cause String DEFAULT '';
