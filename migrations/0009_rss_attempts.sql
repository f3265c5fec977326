-- RSS refresh: when a refresh last tried each source, whatever came of it (last_fetched_at is
-- only set by a success). A refresh takes the sources it tried longest ago (never first), so
-- the ones its time budget did not reach lead the next run, ahead of those that just failed.
ALTER TABLE rss_sources ADD COLUMN last_attempt_at INTEGER;   -- ms
DROP INDEX rss_sources_due;
CREATE INDEX rss_sources_due ON rss_sources (is_active, last_attempt_at);
