-- Stats' last hour reads its successes per family-minute (GET /v1/admin/stats, docs/operating.md
-- "Operating it: admin API and dashboard"): their durations by
-- bucket (d0..d15: the buckets of GET /metrics' job_execution_duration_seconds, d15 is +Inf)
-- and the waits of those that were their job's first run. Each consumer batch adds them to
-- the family-minute row it already writes, so a success costs no row more. Minutes before this
-- migration carry none: for the first hour after it, the last hour's percentiles and average
-- wait count only the successes since (its counts are complete).
ALTER TABLE job_minutes ADD COLUMN waited      INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_minutes ADD COLUMN wait_sum_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_minutes ADD COLUMN d0  INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_minutes ADD COLUMN d1  INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_minutes ADD COLUMN d2  INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_minutes ADD COLUMN d3  INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_minutes ADD COLUMN d4  INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_minutes ADD COLUMN d5  INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_minutes ADD COLUMN d6  INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_minutes ADD COLUMN d7  INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_minutes ADD COLUMN d8  INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_minutes ADD COLUMN d9  INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_minutes ADD COLUMN d10 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_minutes ADD COLUMN d11 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_minutes ADD COLUMN d12 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_minutes ADD COLUMN d13 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_minutes ADD COLUMN d14 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_minutes ADD COLUMN d15 INTEGER NOT NULL DEFAULT 0;
