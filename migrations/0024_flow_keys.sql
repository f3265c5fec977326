-- What flow control did per job type and key (docs/app-guide.md "Flow control"), for the
-- operator's view and GET /metrics: each consumer batch with such jobs adds its counts in its
-- record (no round trip of its own); the keys' live counts are their limiters'.
CREATE TABLE flow_keys (
  type TEXT NOT NULL,
  key TEXT NOT NULL,
  started INTEGER NOT NULL DEFAULT 0,
  waited INTEGER NOT NULL DEFAULT 0,
  handed_back INTEGER NOT NULL DEFAULT 0,
  last_at INTEGER NOT NULL,
  PRIMARY KEY (type, key)
) WITHOUT ROWID;

CREATE INDEX flow_keys_recent ON flow_keys (type, last_at);
