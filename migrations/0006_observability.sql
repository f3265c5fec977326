-- Observability and escalation. Correlation ids on jobs, the escalation outbox, the
-- pre-aggregated execution histogram behind GET /metrics, the DLQ arrival counters, the
-- alerts the sweep evaluates, and the daily digests it has sent.

-- The enqueue request's correlation id (its traceparent's trace id, X-Request-Id, or minted);
-- chain steps inherit it. NULL on older rows and schedule runs: the job id stands in.
ALTER TABLE jobs ADD COLUMN correlation_id TEXT;

-- ms: when the sweep escalated the job's death (page, chat, or the daily digest). NULL on a
-- dead job is the escalation outbox; every write that makes a job dead clears it.
ALTER TABLE jobs ADD COLUMN escalated_at INTEGER;
-- Jobs already dead before this migration were seen by whoever ran the old system: not escalated.
UPDATE jobs SET escalated_at = COALESCE(finished_at, updated_at) WHERE status = 'dead';
-- The outbox only: stays as small as the number of deaths not yet escalated.
CREATE INDEX jobs_escalation_due ON jobs (family, finished_at)
  WHERE status = 'dead' AND escalated_at IS NULL;

-- job_execution_duration_seconds, pre-aggregated: the sweep rolls run records up into it
-- (one upsert per type, family, outcome and bucket a tick saw). Bounded by
-- types x families x outcomes x buckets, whatever the number of jobs.
CREATE TABLE execution_histogram (
  job_type TEXT    NOT NULL,
  family   TEXT    NOT NULL,
  status   TEXT    NOT NULL,                 -- the run's outcome: succeeded, retrying, dead
  bucket   INTEGER NOT NULL,                 -- index into shared DURATION_BUCKETS_MS (last: +Inf)
  count    INTEGER NOT NULL DEFAULT 0,
  sum_ms   INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (job_type, family, status, bucket)
) WITHOUT ROWID;

-- Monotonic counters that would otherwise need a scan (DLQ arrivals per family), and the
-- histogram roll-up's watermark (ms: run records that ended before it are counted).
CREATE TABLE metric_counters (
  name  TEXT    NOT NULL,
  label TEXT    NOT NULL,
  value INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (name, label)
) WITHOUT ROWID;
INSERT INTO metric_counters (name, label, value)
  VALUES ('watermark', 'execution_histogram', unixepoch() * 1000);

-- One row per (rule, key): open while the condition holds, resolved when it clears. The sweep
-- notifies on each change once (notified = the status it last told the channel about).
CREATE TABLE alerts (
  rule        TEXT    NOT NULL,
  key         TEXT    NOT NULL,
  status      TEXT    NOT NULL CHECK (status IN ('open','resolved')),
  severity    TEXT    NOT NULL,
  summary     TEXT    NOT NULL,
  opened_at   INTEGER NOT NULL,
  resolved_at INTEGER,
  notified    TEXT,
  updated_at  INTEGER NOT NULL,
  PRIMARY KEY (rule, key)
) WITHOUT ROWID;

-- The daily digest of low and bulk deaths: one row per UTC day, written before it is sent.
CREATE TABLE escalation_digests (
  day     TEXT    PRIMARY KEY NOT NULL,      -- YYYY-MM-DD (UTC): the deaths of that day and before
  sent_at INTEGER NOT NULL,
  jobs    INTEGER NOT NULL
) WITHOUT ROWID;
