-- A dedup key that outlives its job (docs/app-guide.md "Dedup windows and debounce"): until
-- dedup_until, an enqueue with the job's (type, dedup_key) is answered with it, finished or not.
-- NULL for every job enqueued without a window, which then adds no row to the index.
ALTER TABLE jobs ADD COLUMN dedup_until INTEGER;

CREATE INDEX jobs_dedup_window ON jobs (type, dedup_key, dedup_until)
  WHERE dedup_until IS NOT NULL;
