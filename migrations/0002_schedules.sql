-- Recurring jobs (schedules) and what the maintenance sweep reads through.

CREATE TABLE schedules (
  id              INTEGER PRIMARY KEY,
  name            TEXT    NOT NULL UNIQUE,
  description     TEXT,
  type            TEXT    NOT NULL,
  payload         TEXT    NOT NULL DEFAULT '{}',   -- compact JSON, validated like an enqueue
  cron_expression TEXT    NOT NULL,                -- validated when written (shared cron_schedule)
  enabled         INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
  priority        INTEGER NOT NULL DEFAULT 0 CHECK (priority BETWEEN 0 AND 100),
  max_attempts    INTEGER,                         -- NULL: the type's default
  dedup_key       TEXT,                            -- a live job with this key skips a run
  -- ms: the next due run. NULL: not planned yet (the defaults below); the sweep plans it
  -- without running it.
  next_run_at     INTEGER,
  last_run_at     INTEGER,                         -- ms: when the sweep last ran it
  missed_runs     INTEGER NOT NULL DEFAULT 0,      -- runs swallowed by downtime, over its life
  created_by      TEXT,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL
);
CREATE INDEX schedules_due ON schedules (enabled, next_run_at);

-- One row per (schedule, due time): the run's record, and the key that makes it exactly-once.
CREATE TABLE schedule_runs (
  schedule_id INTEGER NOT NULL,
  due_at      INTEGER NOT NULL,                    -- ms
  fired_at    INTEGER NOT NULL,                    -- ms: the tick that ran it
  job_id      TEXT,                                -- NULL: a live job held the dedup key
  missed      INTEGER NOT NULL DEFAULT 0,          -- due runs skipped before this one (catch-up)
  PRIMARY KEY (schedule_id, due_at)
) WITHOUT ROWID;
CREATE INDEX schedule_runs_fired ON schedule_runs (fired_at);

-- ms: when priority aging last raised the job (+10 every 5 minutes after an hour).
ALTER TABLE jobs ADD COLUMN aged_at INTEGER;

-- No index of its own for the outbox (sent_at IS NULL): the scheduler and the re-sender read
-- jobs_status_run_at by status and due time, and an outbox index would cost every job two more
-- row writes (on insert, and when its claim sets sent_at) to serve a once-a-minute scan.
-- The retention cleaner: finished jobs by age.
CREATE INDEX jobs_finished ON jobs (status, finished_at) WHERE finished_at IS NOT NULL;

-- The job types' usual cadences (docs/operating.md "Schedules API"). Editable through
-- /v1/admin/schedules; planned by the first sweep.
INSERT INTO schedules (name, description, type, payload, cron_expression, created_by, created_at, updated_at) VALUES
  ('rss_feed_refresh', 'Refresh the RSS sources that are due', 'rss_feed_refresh', '{}', '*/5 * * * *', 'migration', unixepoch() * 1000, unixepoch() * 1000),
  ('weather_forecast', 'Hourly forecast refresh', 'weather_refresh', '{"kind":"forecast"}', '0 * * * *', 'migration', unixepoch() * 1000, unixepoch() * 1000),
  ('weather_alerts', 'Severe weather alerts (NWS) every 15 minutes', 'weather_refresh', '{"kind":"alerts"}', '*/15 * * * *', 'migration', unixepoch() * 1000, unixepoch() * 1000),
  ('listing_expiration', 'Expire marketplace listings, daily at 02:00 UTC', 'listing_expiration', '{}', '0 2 * * *', 'migration', unixepoch() * 1000, unixepoch() * 1000),
  ('rank_recalculation', 'Hourly rank recalculation', 'rank_recalculation', '{}', '0 * * * *', 'migration', unixepoch() * 1000, unixepoch() * 1000),
  ('inbound_email', 'Poll the marketplace relay mailbox every minute', 'inbound_email', '{}', '* * * * *', 'migration', unixepoch() * 1000, unixepoch() * 1000),
  ('stock_refresh_market_hours', 'Every 5 minutes, 09:30-16:00 New York, Monday-Friday', 'stock_refresh', '{}',
   'CRON_TZ=America/New_York 30-55/5 9 * * 1-5; */5 10-15 * * 1-5; 0 16 * * 1-5', 'migration', unixepoch() * 1000, unixepoch() * 1000),
  ('stock_refresh_after_hours', 'Hourly outside market hours, Monday-Friday', 'stock_refresh', '{}',
   'CRON_TZ=America/New_York 0 0-9,17-23 * * 1-5', 'migration', unixepoch() * 1000, unixepoch() * 1000),
  ('stock_refresh_weekends', 'Every 6 hours at weekends', 'stock_refresh', '{}',
   'CRON_TZ=America/New_York 0 */6 * * 0,6', 'migration', unixepoch() * 1000, unixepoch() * 1000),
  ('social_refresh', 'Refresh social accounts every 30 minutes', 'social_refresh', '{}', '*/30 * * * *', 'migration', unixepoch() * 1000, unixepoch() * 1000),
  ('link_health_check', 'Weekly dead-link check of the directory', 'link_health_check', '{}', '@weekly', 'migration', unixepoch() * 1000, unixepoch() * 1000),
  ('sitemap_generation', 'Sitemap XML, daily at 03:00 UTC', 'sitemap_generation', '{}', '0 3 * * *', 'migration', unixepoch() * 1000, unixepoch() * 1000),
  ('click_rollup', 'Hourly click rollup', 'click_rollup', '{}', '0 * * * *', 'migration', unixepoch() * 1000, unixepoch() * 1000),
  ('ai_tagging', 'Tag untagged feed items, hourly', 'ai_tagging', '{"trigger":"scheduled"}', '0 * * * *', 'migration', unixepoch() * 1000, unixepoch() * 1000);

-- Schedules whose type needs configuration start disabled: until an app's ENDPOINT_<TYPE> (or,
-- for ai_tagging, LLM_API_KEY) is set they could only go dead as not_configured, every tick.
-- Enable one with PATCH /v1/admin/schedules/{name} {"enabled": true} once it is configured.
UPDATE schedules SET enabled = 0
  WHERE type NOT IN ('rss_feed_refresh', 'link_health_check');
