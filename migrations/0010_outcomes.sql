-- A run record may end `skipped` (an attempt that decided not to do its work, e.g. a spent
-- budget). SQLite cannot alter a CHECK, so job_runs is rebuilt once: same columns, same
-- primary key and index, every row kept.
PRAGMA defer_foreign_keys = on;

CREATE TABLE job_runs_new (
  job_id        TEXT    NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  run           INTEGER NOT NULL,                 -- 1, 2, ... over the job's whole life
  attempt       INTEGER NOT NULL,                 -- the attempt within its retry cycle
  started_at    INTEGER NOT NULL,
  finished_at   INTEGER NOT NULL,
  outcome       TEXT    NOT NULL CHECK (outcome IN ('succeeded','retrying','dead','skipped')),
  error_class   TEXT,
  error_message TEXT,
  duration_ms   INTEGER NOT NULL,
  cost_cents    REAL    NOT NULL DEFAULT 0,
  PRIMARY KEY (job_id, run)
) WITHOUT ROWID;

INSERT INTO job_runs_new (job_id, run, attempt, started_at, finished_at, outcome, error_class,
                          error_message, duration_ms, cost_cents)
  SELECT job_id, run, attempt, started_at, finished_at, outcome, error_class, error_message,
         duration_ms, cost_cents
  FROM job_runs;

DROP TABLE job_runs;
ALTER TABLE job_runs_new RENAME TO job_runs;
-- Stats and recent failures read the last hour of run records.
CREATE INDEX job_runs_finished ON job_runs (finished_at);

-- Why and when an RSS source was disabled: by its 5th consecutive failure (which one) or by an
-- operator. Cleared when it is enabled again.
ALTER TABLE rss_sources ADD COLUMN disabled_reason TEXT;
ALTER TABLE rss_sources ADD COLUMN disabled_at INTEGER;   -- ms
