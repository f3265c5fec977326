-- What each attempt ran and produced (docs/app-guide.md "Run records and artifacts"): one JSON
-- value on its run record, written by the statement that writes the run. Nullable, not indexed: no
-- row or index entry more per job. Runs recorded before this migration have none.
ALTER TABLE job_runs ADD COLUMN details TEXT;
