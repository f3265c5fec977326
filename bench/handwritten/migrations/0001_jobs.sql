-- The hand-written pair's whole schema: a job and its run records, no secondary index.
CREATE TABLE jobs (
  id          TEXT    PRIMARY KEY NOT NULL,
  type        TEXT    NOT NULL,
  payload     TEXT    NOT NULL,
  status      TEXT    NOT NULL,
  attempts    INTEGER NOT NULL DEFAULT 0,
  created_at  INTEGER NOT NULL,
  started_at  INTEGER,
  finished_at INTEGER
) WITHOUT ROWID;

CREATE TABLE job_runs (
  job_id      TEXT    NOT NULL,
  attempt     INTEGER NOT NULL,
  started_at  INTEGER NOT NULL,
  finished_at INTEGER NOT NULL,
  outcome     TEXT    NOT NULL,
  PRIMARY KEY (job_id, attempt)
) WITHOUT ROWID;
