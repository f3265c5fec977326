-- The operator's tables: pauses (a paused job type or family is not claimed), the audit log of
-- every admin action, and the indexes the admin lists and stats read through.

CREATE TABLE pauses (
  kind      TEXT    NOT NULL CHECK (kind IN ('type','family')),
  name      TEXT    NOT NULL,
  paused_at INTEGER NOT NULL,
  paused_by TEXT    NOT NULL,                     -- the actor (token fingerprint)
  reason    TEXT,
  PRIMARY KEY (kind, name)
) WITHOUT ROWID;

-- ms: when the consumer held this job because a pause covered it (it acked the message and
-- spent no attempt). Resume clears it and re-sends the job's message.
ALTER TABLE jobs ADD COLUMN held_at INTEGER;

CREATE TABLE audit_log (
  id       INTEGER PRIMARY KEY,
  at       INTEGER NOT NULL,                      -- ms
  actor    TEXT    NOT NULL,                      -- token:<sha-256 prefix>, never the token
  action   TEXT    NOT NULL,                      -- e.g. job.retry, jobs.bulk_cancel, pause
  target   TEXT    NOT NULL,                      -- JSON: {"id"} / {"ids"} / {"filter"} / {"kind","name"}
  affected INTEGER NOT NULL                       -- how many jobs (or pauses) it changed
);

-- The job list's stable order (a family filter reads it too: one index, not one per filter,
-- since every index is a row written per job), and the held jobs a resume releases.
CREATE INDEX jobs_order ON jobs (priority DESC, id);
CREATE INDEX jobs_held ON jobs (held_at) WHERE held_at IS NOT NULL;
-- Stats and recent failures read the last hour of run records.
CREATE INDEX job_runs_finished ON job_runs (finished_at);
