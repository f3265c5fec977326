-- What every run one consumer invocation records shares (the deployed version, the lease its
-- batch held) is kept once per invocation, not on each succeeded job's row (docs/app-guide.md "Run
-- records and artifacts"): the row keeps its handler and what it produced (`run_details`) and the
-- invocation's id (`run_invocation`): 97 of its 391 bytes fewer per noop job. A success's
-- details as the job view shows them are the two put together. Retention deletes a row begun a
-- day before the succeeded jobs' cutoff, once those jobs are deleted: no job kept can name it.
CREATE TABLE invocations (
  id      TEXT PRIMARY KEY,  -- the consumer invocation's id (a ULID: when it started)
  details TEXT NOT NULL      -- JSON: {version, lease_until}
) WITHOUT ROWID;

ALTER TABLE jobs ADD COLUMN run_invocation TEXT;  -- a success's invocation; NULL for a row from before
