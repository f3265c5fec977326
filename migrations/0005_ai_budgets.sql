-- Issue 6: ai_tagging under a monthly budget (seed 000 section 13). The budgets and
-- budget_alerts tables come from 0004; this adds what the handler and the alert routing need.

-- ms: an ai_tagging job took this untagged item and is tagging it until then (the bulk
-- family's lease), so two overlapping jobs never pay twice for one item. An item the job could
-- not tag is released at once; a job that died leaves it to expire.
ALTER TABLE feed_items ADD COLUMN ai_lease_until INTEGER;

-- ms: when an alert was passed on (issue 7 routes alerts to webhooks and sets it). NULL: not
-- yet. The partial index is that router's queue.
ALTER TABLE budget_alerts ADD COLUMN notified_at INTEGER;
CREATE INDEX budget_alerts_unnotified ON budget_alerts (created_at) WHERE notified_at IS NULL;

-- The alerts raised are the rows of budget_alerts (once per type, month and threshold), so
-- this summary would only drift from them.
ALTER TABLE budgets DROP COLUMN alerted_pct;
