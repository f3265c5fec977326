-- A team's own job types, as data (docs/app-guide.md "Your own job types"): the latest version
-- of each in job_types, which every isolate reads at most every few seconds; every version ever
-- put (or the deletion, with definition NULL) in job_type_versions, for the operator's history.
-- Each change also writes its audit_log row, in the same batch.
CREATE TABLE job_types (
  name TEXT NOT NULL PRIMARY KEY,
  version INTEGER NOT NULL,
  definition TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  updated_by TEXT NOT NULL,
  -- Set when deleted: enqueue refuses the type, its enqueued jobs still run.
  deleted_at INTEGER
);

CREATE TABLE job_type_versions (
  name TEXT NOT NULL,
  version INTEGER NOT NULL,
  definition TEXT,
  changed_at INTEGER NOT NULL,
  changed_by TEXT NOT NULL,
  PRIMARY KEY (name, version)
);
