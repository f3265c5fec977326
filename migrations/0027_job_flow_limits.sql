-- A job's own flow control limits (docs/app-guide.md "Flow control"): `flow_limits` at enqueue,
-- compact JSON of `concurrency` and `rate`, in place of its type's, or with its `flow_key` for a
-- type without flow control. NULL for nearly every job.
ALTER TABLE jobs ADD COLUMN flow_limits TEXT;
