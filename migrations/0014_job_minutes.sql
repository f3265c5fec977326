-- Per family and minute (ms, the minute's start): the attempts the consumer's batches ended in it
-- (each batch adds its tally in its own record: one upsert per family-minute, not per job) and the
-- family's due backlog the sweep read in it. Behind GET /v1/admin/history and the dashboard's
-- charts; the sweep deletes rows older than RETAIN_HISTORY_DAYS.
CREATE TABLE job_minutes (
  family    TEXT    NOT NULL,
  minute    INTEGER NOT NULL,
  succeeded INTEGER NOT NULL DEFAULT 0,
  failed    INTEGER NOT NULL DEFAULT 0,   -- retried or dead
  dead      INTEGER NOT NULL DEFAULT 0,
  sum_ms    INTEGER NOT NULL DEFAULT 0,   -- the attempts' durations
  max_ms    INTEGER NOT NULL DEFAULT 0,
  backlog   INTEGER,
  PRIMARY KEY (family, minute)
) WITHOUT ROWID;
