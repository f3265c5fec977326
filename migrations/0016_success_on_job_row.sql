-- A succeeded attempt's record lives on its job row instead of a job_runs row
-- (docs/performance.md "Cost"): a first-try success then writes 4 rows in its whole life,
-- indexes included. job_runs
-- keeps every attempt that did not succeed. The windows that counted successes from job_runs
-- (stats' last hour, the alert rules, the execution histogram's roll-up) read them from
-- success_batches: one row per consumer batch, its successes packed in one JSON array.
ALTER TABLE jobs ADD COLUMN run_cost_cents REAL;  -- the succeeded attempt's cost; NULL until then
ALTER TABLE jobs ADD COLUMN run_details TEXT;     -- its details (shared RunDetails) and lease

CREATE TABLE success_batches (
  finished_at  INTEGER NOT NULL,  -- ms: the batch's last success
  first_job_id TEXT    NOT NULL,  -- its smallest job id: no two rows share both
  family       TEXT    NOT NULL,
  successes    TEXT    NOT NULL,  -- JSON [[type, duration_ms, wait_ms or null, latency_ms], ...]
  PRIMARY KEY (finished_at, first_job_id)
) WITHOUT ROWID;

-- The successes the windows (an hour) and the roll-up (from its watermark) may still read,
-- carried over one row each, through job_runs_finished before it goes.
INSERT INTO success_batches (finished_at, first_job_id, family, successes)
  SELECT r.finished_at, r.job_id, j.family,
         json_array(json_array(j.type, r.duration_ms,
           CASE WHEN r.run = 1 THEN r.started_at - j.created_at END, r.finished_at - j.run_at))
  FROM job_runs r JOIN jobs j ON j.id = r.job_id
  WHERE r.outcome = 'succeeded' AND r.finished_at >= MIN(unixepoch() * 1000 - 3600000,
    COALESCE((SELECT value FROM metric_counters
              WHERE name = 'watermark' AND label = 'execution_histogram'), unixepoch() * 1000));

-- Only successes were read by finish time alone; failures keep job_runs_failed.
DROP INDEX job_runs_finished;
