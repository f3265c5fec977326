-- Per-job options chosen at enqueue (docs/http-api.md "HTTP API (producer)"). All nullable,
-- none indexed: NULL is the common case and costs nothing, and an index would cost a row
-- written per job.
-- retry_policy: the job's own retry policy as JSON (docs/app-guide.md "Retries"); NULL = its
-- type's.
ALTER TABLE jobs ADD COLUMN retry_policy TEXT;
-- expires_at: ms; a job not started by then is skipped without running (docs/app-guide.md
-- "Lifecycle").
ALTER TABLE jobs ADD COLUMN expires_at INTEGER;
-- enqueued_by: who enqueued the job, by name, never by token value: a token's name,
-- token:<fingerprint> for an unnamed token, or schedule:<name> (docs/configuration.md
-- "Configuration").
ALTER TABLE jobs ADD COLUMN enqueued_by TEXT;
-- A schedule's runs take its retry policy the same way (NULL = the type's).
ALTER TABLE schedules ADD COLUMN retry_policy TEXT;
