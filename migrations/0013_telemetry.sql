-- The built-in handlers' metrics (docs/operating.md "GET /metrics"), kept in columns of the rows
-- their handlers already write: no new rows per job, no index.
-- rss_sources: failed fetches by error type as JSON {"http_404": 3, "timeout": 1}, and the
-- fetch-and-parse time of successful and failed fetches (count and sum of ms).
ALTER TABLE rss_sources ADD COLUMN errors_by_type TEXT;
ALTER TABLE rss_sources ADD COLUMN fetch_ok_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rss_sources ADD COLUMN fetch_ok_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rss_sources ADD COLUMN fetch_failed_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rss_sources ADD COLUMN fetch_failed_ms INTEGER NOT NULL DEFAULT 0;
-- budgets (per type and month): items tagged and not, and runs the budget held back.
ALTER TABLE budgets ADD COLUMN items_tagged INTEGER NOT NULL DEFAULT 0;
ALTER TABLE budgets ADD COLUMN items_failed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE budgets ADD COLUMN throttles INTEGER NOT NULL DEFAULT 0;
