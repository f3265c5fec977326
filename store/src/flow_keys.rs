//! The `flow_keys` table: per job type and key, how many jobs flow control let start, how many
//! waited for a slot and how many of those were handed back to the queue
//! (jobs_shared::job::flow_control). A consumer batch adds its counts in its record's round trip;
//! the operator's view and `GET /metrics` read them.

use jobs_shared::job::flow_control::FlowTally;
use jobs_shared::observe::prometheus::FlowTypeTotals;
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement};

#[derive(Deserialize)]
pub struct FlowKeyRow {
    pub key: String,
    pub started: i64,
    pub waited: i64,
    pub handed_back: i64,
    pub last_at: i64,
}

/// Adds a batch's `tallies` (one row per type and key), at `now_ms`.
pub fn flow_key_add_many(
    db: &D1Database,
    tallies: &[FlowTally],
    now_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    let rows = serde_json::to_string(tallies)?;
    sql!(
        db,
        "INSERT INTO flow_keys (type, key, started, waited, handed_back, last_at) \
         SELECT t.value ->> 'type', t.value ->> 'key', t.value ->> 'started', \
         t.value ->> 'waited', t.value ->> 'handed_back', ?2 FROM json_each(?1) t WHERE true \
         ON CONFLICT (type, key) DO UPDATE SET started = started + excluded.started, \
         waited = waited + excluded.waited, handed_back = handed_back + excluded.handed_back, \
         last_at = excluded.last_at",
        &rows,
        now_ms
    )
}

/// The keys of `job_type` seen most recently first, at most `limit`; `key` alone when given.
pub async fn flow_key_list(
    db: &D1Database,
    job_type: &str,
    key: Option<&str>,
    limit: u32,
) -> worker::Result<Vec<FlowKeyRow>> {
    let list = sql!(db, FlowKeyRow =>
        "SELECT key, started, waited, handed_back, last_at FROM flow_keys \
         WHERE type = ?1 AND (?2 IS NULL OR key = ?2) ORDER BY last_at DESC LIMIT ?3",
        job_type,
        key,
        limit
    )?;
    db.batch(vec![list]).await?[0].results()
}

/// Deletes the counts of keys no job of has started, waited or been handed back since
/// `before_ms`, at most `limit` of them (the retention sweep's; a `GET /metrics` sum falls by
/// theirs, which Prometheus reads as a counter reset).
pub fn flow_key_delete_before(
    db: &D1Database,
    before_ms: i64,
    limit: u32,
) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "DELETE FROM flow_keys WHERE (type, key) IN \
         (SELECT type, key FROM flow_keys WHERE last_at < ?1 LIMIT ?2)",
        before_ms,
        limit
    )
}

/// Every type's counts, summed over its keys (rows: `FlowTypeTotals`; a statement for the
/// caller's batch).
pub fn flow_type_totals(db: &D1Database) -> worker::Result<D1PreparedStatement> {
    sql!(db, FlowTypeTotals =>
        "SELECT type AS job_type, SUM(started) AS \"started!: i64\", \
         SUM(waited) AS \"waited!: i64\", SUM(handed_back) AS \"handed_back!: i64\" \
         FROM flow_keys GROUP BY type ORDER BY type"
    )
}
