//! The `pauses` table: one row per paused job type or family. Pausing is one row; resuming
//! deletes it and, in the same batch, releases a page of the jobs the consumer held for it
//! (and no other pause still covers) back into the outbox, returning them so their messages can
//! be sent. The sweep releases the rest with the same statement (`jobs::job_release_held`).
//!
//! A held job no pause covers is `held_at IS NOT NULL AND NOT (<paused>)`, `<paused>` the
//! claim's test of whether a pause covers a job, written out in each statement here.

use jobs_shared::job::pause::PauseTarget;
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement};

use crate::audit::{self, Entry};
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

/// Every pause with how many jobs it holds.
pub async fn pause_list(db: &D1Database) -> worker::Result<Vec<PauseRow>> {
    let list = sql!(db, PauseRow =>
        "SELECT kind, name, paused_at, paused_by, reason, (SELECT COUNT(*) FROM jobs \
         WHERE held_at IS NOT NULL AND ((p.kind = 'type' AND jobs.type = p.name) \
         OR (p.kind = 'family' AND jobs.family = p.name))) AS \"held!: i64\" \
         FROM pauses p ORDER BY paused_at, kind, name"
    )?;
    let results = db.batch(vec![list]).await?;
    results[0].results()
}

/// Pauses `target`; false if it was paused already (nothing changes then).
pub async fn pause_insert(
    db: &D1Database,
    target: &PauseTarget,
    reason: Option<&str>,
    entry: &Entry<'_>,
) -> worker::Result<bool> {
    let insert = sql!(
        db,
        "INSERT INTO pauses (kind, name, paused_at, paused_by, reason) \
         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (kind, name) DO NOTHING RETURNING kind",
        target.kind,
        target.name,
        entry.now_ms,
        entry.actor,
        reason
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
    let delete = sql!(
        db,
        "DELETE FROM pauses WHERE kind = ?1 AND name = ?2 RETURNING kind",
        target.kind,
        target.name
    )?;
    let [audit, remaining] = releasable_counts(db, target, page, entry)?;
    let release = job_release_held(db, Some(target), entry.now_ms, page)?;
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

/// The resume's audit row, if the delete before it removed the pause (`affected`: the held jobs
/// of `target` the release after it puts back, at most `page`), and the count of those it
/// leaves (rows: [`Remaining`]). A target's kind picks its column (`type` or `family`).
fn releasable_counts(
    db: &D1Database,
    target: &PauseTarget,
    page: u32,
    entry: &Entry<'_>,
) -> worker::Result<[D1PreparedStatement; 2]> {
    let (name, audit_target) = (target.name.as_str(), entry.target.to_string());
    let (now, actor, action) = (entry.now_ms, entry.actor, entry.action);
    Ok(if target.kind == "type" {
        [
            sql!(
                db,
                "INSERT INTO audit_log (at, actor, action, target, affected) \
                 SELECT ?1, ?2, ?3, ?4, (SELECT COUNT(*) FROM (SELECT 1 FROM jobs \
                 WHERE held_at IS NOT NULL AND NOT (EXISTS (SELECT 1 FROM pauses) AND \
                 EXISTS (SELECT 1 FROM pauses p WHERE \
                 (p.kind = 'type' AND p.name = jobs.type) OR (p.kind = 'family' AND p.name = jobs.family))) \
                 AND jobs.type = ?5 LIMIT ?6)) WHERE changes() > 0",
                now,
                actor,
                action,
                audit_target,
                name,
                page
            )?,
            sql!(db, Remaining =>
                "SELECT COUNT(*) AS remaining FROM jobs \
                 WHERE held_at IS NOT NULL AND NOT (EXISTS (SELECT 1 FROM pauses) AND \
                 EXISTS (SELECT 1 FROM pauses p WHERE \
                 (p.kind = 'type' AND p.name = jobs.type) OR (p.kind = 'family' AND p.name = jobs.family))) \
                 AND jobs.type = ?1",
                name
            )?,
        ]
    } else {
        [
            sql!(
                db,
                "INSERT INTO audit_log (at, actor, action, target, affected) \
                 SELECT ?1, ?2, ?3, ?4, (SELECT COUNT(*) FROM (SELECT 1 FROM jobs \
                 WHERE held_at IS NOT NULL AND NOT (EXISTS (SELECT 1 FROM pauses) AND \
                 EXISTS (SELECT 1 FROM pauses p WHERE \
                 (p.kind = 'type' AND p.name = jobs.type) OR (p.kind = 'family' AND p.name = jobs.family))) \
                 AND jobs.family = ?5 LIMIT ?6)) WHERE changes() > 0",
                now,
                actor,
                action,
                audit_target,
                name,
                page
            )?,
            sql!(db, Remaining =>
                "SELECT COUNT(*) AS remaining FROM jobs \
                 WHERE held_at IS NOT NULL AND NOT (EXISTS (SELECT 1 FROM pauses) AND \
                 EXISTS (SELECT 1 FROM pauses p WHERE \
                 (p.kind = 'type' AND p.name = jobs.type) OR (p.kind = 'family' AND p.name = jobs.family))) \
                 AND jobs.family = ?1",
                name
            )?,
        ]
    })
}

#[derive(Deserialize)]
pub struct PausedRow {
    pub kind: String,
    pub name: String,
}

/// What is paused (rows: [`PausedRow`]), for the operator's stats.
pub fn pause_list_names(db: &D1Database) -> worker::Result<D1PreparedStatement> {
    sql!(db, PausedRow => "SELECT kind, name FROM pauses")
}
