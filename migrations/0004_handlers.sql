-- Job chains, and the tables of the built-in handlers (RSS, link health, AI budgets).

-- Job chains. A job enqueued with `steps` is the chain's parent (its step 0); each following
-- step is a job of its own whose parent_id names the parent. `next_steps` holds the steps
-- still to come (validated enqueue specs, JSON); the consumer inserts the next one in the same
-- D1 batch that records the step's success. The parent's chain_status sums the chain up.
ALTER TABLE jobs ADD COLUMN parent_id TEXT;
ALTER TABLE jobs ADD COLUMN chain_step INTEGER;
ALTER TABLE jobs ADD COLUMN next_steps TEXT;
ALTER TABLE jobs ADD COLUMN chain_status TEXT CHECK (chain_status IN ('running','succeeded','failed'));
ALTER TABLE jobs ADD COLUMN chain_error TEXT;
-- One job per step: a replayed record cannot start a step twice.
CREATE UNIQUE INDEX jobs_chain_step ON jobs (parent_id, chain_step) WHERE parent_id IS NOT NULL;

-- RSS and Atom sources (docs/app-guide.md "rss_feed_refresh").
CREATE TABLE rss_sources (
  id                       TEXT    PRIMARY KEY NOT NULL,   -- UUID
  name                     TEXT    NOT NULL,
  url                      TEXT    NOT NULL UNIQUE,
  refresh_interval_minutes INTEGER NOT NULL DEFAULT 60
                             CHECK (refresh_interval_minutes BETWEEN 15 AND 1440),
  is_active                INTEGER NOT NULL DEFAULT 1,
  error_count              INTEGER NOT NULL DEFAULT 0,     -- consecutive; 5 disables
  last_error_message       TEXT,
  last_fetched_at          INTEGER,                        -- ms, last successful refresh
  retry_after_until        INTEGER,                        -- ms: the feed's 429 asked us to wait
  items_new                INTEGER NOT NULL DEFAULT 0,     -- totals over the source's life
  items_duplicate          INTEGER NOT NULL DEFAULT 0,
  items_skipped            INTEGER NOT NULL DEFAULT 0,
  created_at               INTEGER NOT NULL,
  updated_at               INTEGER NOT NULL
);
CREATE INDEX rss_sources_due ON rss_sources (is_active, last_fetched_at);

CREATE TABLE feed_items (
  id           INTEGER PRIMARY KEY,
  source_id    TEXT    NOT NULL REFERENCES rss_sources (id) ON DELETE CASCADE,
  item_guid    TEXT    NOT NULL UNIQUE,   -- the entry's GUID, or "hash:" + SHA-256 of URL + published
  title        TEXT    NOT NULL,
  url          TEXT    NOT NULL,
  description  TEXT,
  published_at INTEGER,
  content_hash TEXT    NOT NULL,          -- MD5 of title + description
  ai_tagged    INTEGER NOT NULL DEFAULT 0,
  ai_tags      TEXT,                      -- {topics, sentiment, categories, confidence}
  created_at   INTEGER NOT NULL
);
CREATE INDEX feed_items_untagged ON feed_items (ai_tagged, id);
-- A refresh counts what it inserted by (source, created_at).
CREATE INDEX feed_items_source ON feed_items (source_id, created_at);

-- Link health: one row per checked URL.
CREATE TABLE links (
  url                  TEXT    PRIMARY KEY NOT NULL,
  status               TEXT    NOT NULL DEFAULT 'unknown' CHECK (status IN ('unknown','ok','failing','dead')),
  last_status_code     INTEGER,
  last_error           TEXT,
  latency_ms           INTEGER,
  final_url            TEXT,
  consecutive_failures INTEGER NOT NULL DEFAULT 0,
  first_failure_at     INTEGER,           -- ms: start of the current failing streak
  last_checked_at      INTEGER,
  created_at           INTEGER NOT NULL
) WITHOUT ROWID;

-- Monthly budgets of job types that declare one (ai_tagging). A month's row is created from
-- the previous month's limit (or the configured default) the first time the month is used.
CREATE TABLE budgets (
  job_type       TEXT    NOT NULL,
  month          TEXT    NOT NULL,        -- YYYY-MM, UTC
  limit_cents    INTEGER NOT NULL CHECK (limit_cents >= 0),
  spent_cents    REAL    NOT NULL DEFAULT 0,
  requests       INTEGER NOT NULL DEFAULT 0,
  tokens_input   INTEGER NOT NULL DEFAULT 0,
  tokens_output  INTEGER NOT NULL DEFAULT 0,
  updated_at     INTEGER NOT NULL,
  PRIMARY KEY (job_type, month)
) WITHOUT ROWID;

-- Alert events at 75, 90 and 100 %, once each per type and month.
CREATE TABLE budget_alerts (
  job_type     TEXT    NOT NULL,
  month        TEXT    NOT NULL,
  threshold    INTEGER NOT NULL CHECK (threshold IN (75, 90, 100)),
  spent_cents  REAL    NOT NULL,
  limit_cents  INTEGER NOT NULL,
  created_at   INTEGER NOT NULL,
  PRIMARY KEY (job_type, month, threshold)
) WITHOUT ROWID;
