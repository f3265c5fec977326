//! The `pauses` table: one row per paused job type or family. Pausing is one row; resuming
//! deletes it and, in the same batch, releases a page of the jobs the consumer held for it
//! (and no other pause still covers) back into the outbox, returning them so their messages can
//! be sent. The sweep releases the rest with the same statement (`jobs::job_release_held`).

use jobs_shared::api::job_filter::SqlValue;
use jobs_shared::job::pause::PauseTarget;
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement};

use crate::audit::{self, Entry};
use crate::d1::{statement, text};
use crate::jobs::{job_release_held, Unsent};

#[derive(Deserialize)]
pub struct PauseRow {
    pub kind: String,
    pub name: String,
    pub paused_at: i64,
    pub paused_by: String,
    pub reason: Option<String>,
    pub held: i64,
}

const HELD_COUNT: &str = "SELECT COUNT(*) FROM jobs WHERE held_at IS NOT NULL AND \
     ((p.kind = 'type' AND jobs.type = p.name) OR (p.kind = 'family' AND jobs.family = p.name))";

/// Every pause with how many jobs it holds.
pub async fn pause_list(db: &D1Database) -> worker::Result<Vec<PauseRow>> {
    let sql = format!(
        "SELECT kind, name, paused_at, paused_by, reason, ({HELD_COUNT}) AS held \
         FROM pauses p ORDER BY paused_at, kind, name"
    );
    let results = db.batch(vec![statement(db, &sql, &[])?]).await?;
    results[0].results()
}

/// Pauses `target`; false if it was paused already (nothing changes then).
pub async fn pause_insert(
    db: &D1Database,
    target: &PauseTarget,
    reason: Option<&str>,
    entry: &Entry<'_>,
) -> worker::Result<bool> {
    let insert = statement(
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
    let audit = audit::audit_insert_after_write(db, entry, true)?;
    let results = db.batch(vec![insert, audit]).await?;
    Ok(!results[0].results::<serde_json::Value>()?.is_empty())
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
pub async fn pause_delete(
    db: &D1Database,
    target: &PauseTarget,
    page: u32,
    entry: &Entry<'_>,
) -> worker::Result<Resumed> {
    let name = text(target.name.as_str());
    let releasable = crate::jobs::releasable(Some(target));
    let delete = statement(
        db,
        "DELETE FROM pauses WHERE kind = ? AND name = ? RETURNING kind",
        &[text(target.kind), name.clone()],
    )?;
    let audit = audit::audit_insert_counted(
        db,
        entry,
        &format!("SELECT COUNT(*) FROM (SELECT 1 FROM jobs WHERE {releasable} LIMIT ?)"),
        &[name.clone(), SqlValue::Int(page.into())],
    )?;
    let release = job_release_held(db, Some(target), entry.now_ms, page)?;
    let remaining = statement(
        db,
        &format!("SELECT COUNT(*) AS remaining FROM jobs WHERE {releasable}"),
        &[name],
    )?;
    let results = db.batch(vec![delete, audit, release, remaining]).await?;
    Ok(Resumed {
        existed: !results[0].results::<serde_json::Value>()?.is_empty(),
        released: results[2].results()?,
        remaining: results[3]
            .results::<Remaining>()?
            .first()
            .map_or(0, |r| r.remaining),
    })
}

#[derive(Deserialize)]
pub struct PausedRow {
    pub kind: String,
    pub name: String,
}

/// What is paused (rows: [`PausedRow`]), for the operator's stats.
pub fn pause_list_names(db: &D1Database) -> worker::Result<D1PreparedStatement> {
    statement(db, "SELECT kind, name FROM pauses", &[])
}
