-- Workflows (docs/app-guide.md "Workflows"): a job's `name` in its chain (`step_name`), and a
-- step's `inputs`: the results of the earlier steps it named, one JSON object keyed by name,
-- resolved in the batch that enqueues the step. NULL for nearly every job.
ALTER TABLE jobs ADD COLUMN step_name TEXT;
ALTER TABLE jobs ADD COLUMN inputs TEXT;

-- A `group` step's branches: each names its group (`group_id`) and its place in it (`branch`).
-- The group waits `scheduled` until its last branch ends; the index finds a group's branches,
-- and the second the groups still waiting, for the sweep's recovery of a join no batch made.
-- By branch, not by status: an index on a branch's status is written again at each of its
-- moves (2 rows more per branch), dearer than reading a group's branches to see whether any is
-- live (D1 bills a row written as a thousand read; docs/performance.md "Workflows").
ALTER TABLE jobs ADD COLUMN group_id TEXT;
ALTER TABLE jobs ADD COLUMN branch INTEGER;
CREATE INDEX jobs_group_branches ON jobs (group_id, branch) WHERE group_id IS NOT NULL;
CREATE INDEX jobs_open_groups ON jobs (id) WHERE type = 'group' AND status = 'scheduled';
