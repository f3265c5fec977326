-- A refresh claims the sources it is about to fetch (docs/app-guide.md "rss_feed_refresh"): two
-- refreshes that find one source due at once (a single-source one and an all-due one in the same
-- batch) fetch it once. The claim ends when the refresh has written its sources, or at this time
-- (ms: the refresh's time budget, past which it fetches nothing) if it died.
ALTER TABLE rss_sources ADD COLUMN refreshing_until INTEGER;
