-- Indexes a succeeded job pays for once (docs/performance.md "Cost"). D1 bills an index entry as a
-- row written each time a write puts one in; taking one out (a row leaving a partial index,
-- a delete) is free. So every index over `jobs` is partial, keyed on columns the consumer's
-- claim never changes, and a first-try success writes one index entry in its whole life: the
-- enqueue's, in `jobs_unfinished`, which its finish leaves for free. What the full indexes
-- served is read through these or through the primary key (a ULID: creation order).
-- Each WHERE is repeated word for word by the statements that use the index (store
-- `jobs::indexes`, which a native test holds to this file).
DROP INDEX jobs_status_run_at;
DROP INDEX jobs_order;
DROP INDEX jobs_finished;

-- Every live job by due time: the sweep's outbox, stranded and rescue checks, priority aging,
-- the backlog counts and the operator's lists of live jobs. Live is exactly finished_at NULL.
CREATE INDEX jobs_unfinished ON jobs (run_at) WHERE finished_at IS NULL;

-- Jobs the sweep sends when due: delayed (`scheduled`) and held retries (`retrying`).
CREATE INDEX jobs_waiting ON jobs (status, run_at) WHERE status IN ('scheduled', 'retrying');

-- Ended without succeeding (dead, cancelled, skipped): their retention, counts and lists.
-- Succeeded jobs are found by their id (retention) and counted from `job_minutes`.
CREATE INDEX jobs_ended ON jobs (status, finished_at)
  WHERE finished_at IS NOT NULL AND status <> 'succeeded';

-- Failed attempts (retried, dead, skipped), newest first: the operator's recent failures, read
-- without walking past the run records of successes.
CREATE INDEX job_runs_failed ON job_runs (finished_at) WHERE outcome <> 'succeeded';
