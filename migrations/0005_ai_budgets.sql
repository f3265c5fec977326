-- ai_tagging under a monthly budget (docs/app-guide.md "AI tagging and budgets"). The budgets and
-- budget_alerts tables come from 0004; this adds what the handler and the alert routing need.

-- ms: an ai_tagging job took this untagged item and is tagging it until then (the bulk
-- family's lease), so two overlapping jobs never pay twice for one item. An item the job could
-- not tag is released at once; a job that died leaves it to expire.
ALTER TABLE feed_items ADD COLUMN ai_lease_until INTEGER;

-- ms: when the sweep's alert evaluator took the alert into `alerts`, whose changes it
-- sends to the channels. NULL: not yet. Unindexed: at most three rows per budgeted type and month.
ALTER TABLE budget_alerts ADD COLUMN notified_at INTEGER;
