-- Why a schedule's run enqueued no job (docs/operating.md "Schedules API"): 'dedup_key_live' (a
-- live job held the schedule's dedup key) or 'no_untagged_items' (its type's gate found no work).
-- NULL on a run that enqueued its job, and on runs recorded before this column.
ALTER TABLE schedule_runs ADD COLUMN skipped TEXT;
