//! The `audit_log` table: one row per admin action, written in the same D1 batch as the action
//! itself, so the log and the change commit (or fail) together.

use jobs_shared::api::job_filter::SqlValue;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;
use worker::{D1Database, D1PreparedStatement};

use crate::d1::{statement, text};

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
    statement(
        db,
        "INSERT INTO audit_log (at, actor, action, target, affected) \
         SELECT ?, ?, ?, ?, changes() WHERE changes() > 0 OR ? = 0",
        &[
            SqlValue::Int(entry.now_ms),
            text(entry.actor),
            text(entry.action),
            text(entry.target.to_string()),
            SqlValue::Int(i64::from(only_if_changed)),
        ],
    )
}

/// An audit row whose count is computed by `count_sql` (with `count_values`) at that point of
/// the batch, and written only if the previous statement changed a row.
pub fn audit_insert_counted(
    db: &D1Database,
    entry: &Entry,
    count_sql: &str,
    count_values: &[SqlValue],
) -> worker::Result<D1PreparedStatement> {
    let mut values = vec![
        SqlValue::Int(entry.now_ms),
        text(entry.actor),
        text(entry.action),
        text(entry.target.to_string()),
    ];
    values.extend_from_slice(count_values);
    statement(
        db,
        &format!(
            "INSERT INTO audit_log (at, actor, action, target, affected) \
             SELECT ?, ?, ?, ?, ({count_sql}) WHERE changes() > 0"
        ),
        &values,
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
    let stmt = statement(
        db,
        "SELECT id, at, actor, action, target, affected FROM audit_log \
         WHERE id < ? ORDER BY id DESC LIMIT ?",
        &[
            SqlValue::Int(before.unwrap_or(i64::MAX)),
            SqlValue::Int(i64::from(limit) + 1),
        ],
    )?;
    let results = db.batch(vec![stmt]).await?;
    results[0].results()
}
