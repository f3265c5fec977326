//! The `audit_log` table: one row per admin action, written in the same D1 batch as the action
//! itself, so the log and the change commit (or fail) together.

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;
use worker::{D1Database, D1PreparedStatement};

/// Who did what to which jobs. `affected` is taken from SQLite's `changes()`, the row count of
/// the statement just before this one in the batch.
pub struct Entry<'a> {
    pub actor: &'a str,
    pub action: &'a str,
    pub target: Value,
    pub now_ms: i64,
}

/// The audit row for the preceding write; with `only_if_changed`, nothing is logged when that
/// write changed no row (a refused single-job action).
pub fn audit_insert_after_write(
    db: &D1Database,
    entry: &Entry,
    only_if_changed: bool,
) -> worker::Result<D1PreparedStatement> {
    let target = entry.target.to_string();
    sql!(
        db,
        "INSERT INTO audit_log (at, actor, action, target, affected) \
         SELECT ?1, ?2, ?3, ?4, changes() WHERE changes() > 0 OR ?5 = 0",
        entry.now_ms,
        entry.actor,
        entry.action,
        target,
        only_if_changed
    )
}

/// Runs `write` (one row `RETURNING`) and, if it wrote, its audit row, in one batch: the row
/// written, if any.
pub async fn write_audited<T: DeserializeOwned>(
    db: &D1Database,
    write: D1PreparedStatement,
    entry: &Entry<'_>,
) -> worker::Result<Option<T>> {
    let results = db
        .batch(vec![write, audit_insert_after_write(db, entry, true)?])
        .await?;
    Ok(results[0].results::<T>()?.into_iter().next())
}

#[derive(Deserialize)]
pub struct AuditRow {
    pub id: i64,
    pub at: i64,
    pub actor: String,
    pub action: String,
    pub target: String,
    pub affected: i64,
}

/// Newest first; `before` is the id of the last row of the previous page.
pub async fn audit_list(
    db: &D1Database,
    before: Option<i64>,
    limit: u32,
) -> worker::Result<Vec<AuditRow>> {
    let (before, limit) = (before.unwrap_or(i64::MAX), i64::from(limit) + 1);
    let stmt = sql!(db, AuditRow =>
        "SELECT id, at, actor, action, target, affected FROM audit_log \
         WHERE id < ?1 ORDER BY id DESC LIMIT ?2",
        before,
        limit
    )?;
    let results = db.batch(vec![stmt]).await?;
    results[0].results()
}
