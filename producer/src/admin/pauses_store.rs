//! SQL for pauses. Pausing is one row; resuming deletes it and, in the same batch, releases a
//! page of the jobs the consumer held for it (and no other pause still covers) back into the
//! outbox, returning them so their messages can be sent. The sweep releases the rest
//! (`maintenance/held_job_releaser.rs`) with the same statement.

use jobs_shared::{ApiError, PauseTarget, SqlValue, PAUSED_JOB_SQL};
use serde::Deserialize;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement};

use super::audit_store::{self, Entry};
use super::d1::{self, text};
use crate::dispatch::{Unsent, UNSENT_COLUMNS};
use crate::respond;

#[derive(Deserialize)]
pub struct PauseRow {
    pub kind: String,
    pub name: String,
    pub paused_at: i64,
    pub paused_by: String,
    pub reason: Option<String>,
    pub held: i64,
}

/// Held jobs no pause covers (any more), of `target`'s jobs when given (then with one `?` for
/// its name): the column is picked from a validated kind, never input.
fn releasable(target: Option<&PauseTarget>) -> String {
    let scope = match target {
        Some(t) if t.kind == "type" => " AND jobs.type = ?",
        Some(_) => " AND jobs.family = ?",
        None => "",
    };
    format!("held_at IS NOT NULL AND NOT {PAUSED_JOB_SQL}{scope}")
}

/// Puts up to `limit` releasable held jobs (of `target`'s, when given) back in the outbox,
/// oldest hold first, returning them (`Unsent`) to be sent.
pub(crate) fn release(
    db: &D1Database,
    target: Option<&PauseTarget>,
    now_ms: i64,
    limit: u32,
) -> worker::Result<D1PreparedStatement> {
    let mut values = vec![JsValue::from_f64(now_ms as f64)];
    values.extend(target.map(|t| JsValue::from_str(&t.name)));
    values.push(JsValue::from_f64(limit.into()));
    db.prepare(format!(
        "UPDATE jobs SET held_at = NULL, sent_at = NULL, updated_at = ? WHERE id IN \
         (SELECT id FROM jobs WHERE {} ORDER BY held_at LIMIT ?) RETURNING {UNSENT_COLUMNS}",
        releasable(target)
    ))
    .bind(&values)
}

const HELD_COUNT: &str = "SELECT COUNT(*) FROM jobs WHERE held_at IS NOT NULL AND \
     ((p.kind = 'type' AND jobs.type = p.name) OR (p.kind = 'family' AND jobs.family = p.name))";

pub async fn list(db: &D1Database) -> Result<Vec<PauseRow>, ApiError> {
    let sql = format!(
        "SELECT kind, name, paused_at, paused_by, reason, ({HELD_COUNT}) AS held \
         FROM pauses p ORDER BY paused_at, kind, name"
    );
    let results = d1::batch(db, vec![d1::statement(db, &sql, &[])?]).await?;
    d1::rows(&results[0])
}

/// Pauses `target`; false if it was paused already (nothing changes then).
pub async fn pause(
    db: &D1Database,
    target: &PauseTarget,
    reason: Option<&str>,
    entry: &Entry<'_>,
) -> Result<bool, ApiError> {
    let insert = d1::statement(
        db,
        "INSERT INTO pauses (kind, name, paused_at, paused_by, reason) VALUES (?, ?, ?, ?, ?) \
         ON CONFLICT (kind, name) DO NOTHING RETURNING kind",
        &[
            text(target.kind),
            text(target.name.as_str()),
            SqlValue::Int(entry.now_ms),
            text(entry.actor),
            reason.map_or(SqlValue::Null, text),
        ],
    )?;
    let results = d1::batch(db, vec![insert, audit_store::after_write(db, entry, true)?]).await?;
    Ok(!d1::rows::<serde_json::Value>(&results[0])?.is_empty())
}

/// A resume: whether the pause existed, the jobs released now, and how many it still holds.
pub struct Resumed {
    pub existed: bool,
    pub released: Vec<Unsent>,
    pub remaining: i64,
}

#[derive(Deserialize)]
struct Remaining {
    remaining: i64,
}

/// Resumes `target` and releases up to `page` of its held jobs (those no other pause covers),
/// even if this pause was gone already; the rest stay held for the sweep to release.
pub async fn resume(
    db: &D1Database,
    target: &PauseTarget,
    page: u32,
    entry: &Entry<'_>,
) -> Result<Resumed, ApiError> {
    let name = text(target.name.as_str());
    let releasable = releasable(Some(target));
    let delete = d1::statement(
        db,
        "DELETE FROM pauses WHERE kind = ? AND name = ? RETURNING kind",
        &[text(target.kind), name.clone()],
    )?;
    let audit = audit_store::counted(
        db,
        entry,
        &format!("SELECT COUNT(*) FROM (SELECT 1 FROM jobs WHERE {releasable} LIMIT ?)"),
        &[name.clone(), SqlValue::Int(page.into())],
    )?;
    let release =
        release(db, Some(target), entry.now_ms, page).map_err(|e| respond::internal(&e))?;
    let remaining = d1::statement(
        db,
        &format!("SELECT COUNT(*) AS remaining FROM jobs WHERE {releasable}"),
        &[name],
    )?;
    let results = d1::batch(db, vec![delete, audit, release, remaining]).await?;
    Ok(Resumed {
        existed: !d1::rows::<serde_json::Value>(&results[0])?.is_empty(),
        released: d1::rows(&results[2])?,
        remaining: d1::rows::<Remaining>(&results[3])?
            .first()
            .map_or(0, |r| r.remaining),
    })
}
