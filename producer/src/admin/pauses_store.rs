//! SQL for pauses. Pausing is one row; resuming deletes it and, in the same batch, releases
//! every job the consumer held for it (and no other pause still covers) back into the outbox,
//! returning them so their messages can be sent.

use jobs_shared::{ApiError, PauseTarget, SqlValue, PAUSED_JOB_SQL};
use serde::Deserialize;
use worker::D1Database;

use super::audit_store::{self, Entry};
use super::d1::{self, text};
use crate::dispatch::Unsent;

#[derive(Deserialize)]
pub struct PauseRow {
    pub kind: String,
    pub name: String,
    pub paused_at: i64,
    pub paused_by: String,
    pub reason: Option<String>,
    pub held: i64,
}

/// `jobs` rows a pause target covers: the column is picked from a validated kind, never input.
fn covers(target: &PauseTarget) -> &'static str {
    if target.kind == "type" {
        "jobs.type = ?"
    } else {
        "jobs.family = ?"
    }
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

/// Resumes `target`: whether it was paused, and the jobs released (now in the outbox). Held
/// jobs no pause covers any more are released even if this pause was gone already.
pub async fn resume(
    db: &D1Database,
    target: &PauseTarget,
    entry: &Entry<'_>,
) -> Result<(bool, Vec<Unsent>), ApiError> {
    let name = text(target.name.as_str());
    let releasable = format!(
        "held_at IS NOT NULL AND {} AND NOT {PAUSED_JOB_SQL}",
        covers(target)
    );
    let delete = d1::statement(
        db,
        "DELETE FROM pauses WHERE kind = ? AND name = ? RETURNING kind",
        &[text(target.kind), name.clone()],
    )?;
    let audit = audit_store::counted(
        db,
        entry,
        &format!("SELECT COUNT(*) FROM jobs WHERE {releasable}"),
        std::slice::from_ref(&name),
    )?;
    let release = d1::statement(
        db,
        &format!(
            "UPDATE jobs SET held_at = NULL, sent_at = NULL, updated_at = ? WHERE {releasable} \
             RETURNING id, type, family, run_at"
        ),
        &[SqlValue::Int(entry.now_ms), name],
    )?;
    let results = d1::batch(db, vec![delete, audit, release]).await?;
    let existed = !d1::rows::<serde_json::Value>(&results[0])?.is_empty();
    Ok((existed, d1::rows(&results[2])?))
}
