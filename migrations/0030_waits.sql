-- Waiting for an event (docs/app-guide.md "Workflows"): a `wait` step's event and key, as
-- `POST /v1/events` matches them, computed from its payload (NULL for every other job), and the
-- index that finds the waits of one event and key.
ALTER TABLE jobs ADD COLUMN wait_for TEXT
  GENERATED ALWAYS AS (IIF(type = 'wait', json_array(payload ->> 'event', payload ->> 'key'), NULL))
  VIRTUAL;
CREATE INDEX jobs_waits ON jobs (wait_for) WHERE wait_for IS NOT NULL;
