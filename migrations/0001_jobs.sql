-- Every job and every attempt of it. D1 is the source of truth; the queues only carry ids.

CREATE TABLE jobs (
  id           TEXT    PRIMARY KEY NOT NULL,       -- ULID: sorts by creation time
  type         TEXT    NOT NULL,
  family       TEXT    NOT NULL,
  status       TEXT    NOT NULL CHECK (status IN
                 ('scheduled','queued','running','retrying','succeeded','dead','cancelled','skipped')),
  priority     INTEGER NOT NULL DEFAULT 0 CHECK (priority BETWEEN 0 AND 100),
  payload      TEXT    NOT NULL,                   -- compact JSON, validated at enqueue
  dedup_key    TEXT,
  attempts     INTEGER NOT NULL DEFAULT 0,         -- attempts started this cycle; survives redelivery
  runs         INTEGER NOT NULL DEFAULT 0,         -- attempts ever started: an operator's retry
                                                   -- resets `attempts`, never this
  max_attempts INTEGER NOT NULL,
  run_at       INTEGER NOT NULL,                   -- ms: the next attempt may not start before this
  -- ms: when a message for the next attempt was last known to be in its queue.
  -- NULL is the outbox: written but not (yet known to be) sent. The consumer's claim and the
  -- sweep's re-send set it, so the happy path costs no extra write.
  sent_at      INTEGER,
  lease_until  INTEGER,                            -- ms: a running attempt's lease
  error_class  TEXT,
  last_error   TEXT,
  result       TEXT,                               -- JSON the handler returned
  created_at   INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL,
  started_at   INTEGER,
  finished_at  INTEGER
) WITHOUT ROWID; -- the ULID is the key: no hidden rowid, no second index to write on insert

-- One live job per (type, dedup_key); finished jobs free the key.
CREATE UNIQUE INDEX jobs_dedup_live ON jobs (type, dedup_key)
  WHERE dedup_key IS NOT NULL AND status IN ('scheduled','queued','running','retrying');

-- The sweep's and the operator's way in: jobs by status and due time.
CREATE INDEX jobs_status_run_at ON jobs (status, run_at);

CREATE TABLE job_runs (
  job_id        TEXT    NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  run           INTEGER NOT NULL,                 -- 1, 2, ... over the job's whole life
  attempt       INTEGER NOT NULL,                 -- the attempt within its retry cycle
  started_at    INTEGER NOT NULL,
  finished_at   INTEGER NOT NULL,
  outcome       TEXT    NOT NULL CHECK (outcome IN ('succeeded','retrying','dead')),
  error_class   TEXT,
  error_message TEXT,
  duration_ms   INTEGER NOT NULL,
  cost_cents    REAL    NOT NULL DEFAULT 0,
  PRIMARY KEY (job_id, run)
) WITHOUT ROWID;

-- Every arrival in a family's DLQ: the operator's dead-letter list, and proof that D1 and the
-- DLQ agree whichever path (our own dead-lettering or the queue's max_retries) put it there.
CREATE TABLE dead_letters (
  id                INTEGER PRIMARY KEY,
  job_id            TEXT    NOT NULL,
  family            TEXT    NOT NULL,
  arrived_at        INTEGER NOT NULL,
  delivery_attempts INTEGER NOT NULL
);
CREATE INDEX dead_letters_job ON dead_letters (job_id);
