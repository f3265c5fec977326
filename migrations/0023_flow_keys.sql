-- A job's own key for its type's flow control (docs/app-guide.md "Flow control"), when enqueue
-- named one; NULL for every other job, whose key, if its type has flow control, is its
-- payload's key field.
ALTER TABLE jobs ADD COLUMN flow_key TEXT;
