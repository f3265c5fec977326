//! The sweep's statements over `jobs` (docs/operating.md "Recurring jobs and the maintenance
//! sweep"): releasing held due jobs, finding jobs whose message is missing, recording sends,
//! priority aging, and retention. Each is a compare-and-set on the state it reads, so overlapping
//! ticks write nothing twice. A statement that reads a partial index names it and repeats its
//! condition (see `indexes`).

use jobs_shared::job::enqueue::MAX_PRIORITY;
use jobs_shared::job::family::Family;
use jobs_shared::job::ids::job_id;
use jobs_shared::schedule::sweep_policy::{AGING_AFTER_MS, AGING_EVERY_MS, AGING_STEP};
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement};

use super::unsent::Unsent;
use crate::d1::json_text;
use crate::invocations::invocation_delete_unnamed;

/// The send when due, two statements (rows: [`Unsent`]): up to `limit` `scheduled` jobs due
/// by `horizon_ms` (within the queue's delay limit) become `queued`, and up to `limit`
/// `retrying` jobs sent later due by then are read to be sent again (they stay `retrying`). Both read
/// `jobs_waiting`.
pub fn job_schedule(
    db: &D1Database,
    now_ms: i64,
    horizon_ms: i64,
    limit: u32,
) -> worker::Result<[D1PreparedStatement; 2]> {
    let release = sql!(db, Unsent =>
        "UPDATE jobs SET status = 'queued', updated_at = ?1 WHERE id IN \
         (SELECT id FROM jobs INDEXED BY jobs_waiting WHERE status IN ('scheduled', 'retrying') \
         AND status = 'scheduled' AND sent_at IS NULL AND run_at <= ?2 ORDER BY run_at LIMIT ?3) \
         AND status = 'scheduled' AND sent_at IS NULL \
         RETURNING id, type AS job_type, family, priority, run_at, correlation_id",
        now_ms,
        horizon_ms,
        limit
    )?;
    let held_retries = sql!(db, Unsent =>
        "SELECT id, type AS job_type, family, priority, run_at, correlation_id \
         FROM jobs INDEXED BY jobs_waiting WHERE status IN ('scheduled', 'retrying') \
         AND status = 'retrying' AND sent_at IS NULL AND run_at <= ?1 ORDER BY run_at LIMIT ?2",
        horizon_ms,
        limit
    )?;
    Ok([release, held_retries])
}

/// Up to `limit` `queued` jobs with no send recorded, due and last written by `before_ms`
/// (rows: [`Unsent`]): the outbox, read through `jobs_unfinished`.
pub fn job_list_unsent(
    db: &D1Database,
    before_ms: i64,
    limit: u32,
) -> worker::Result<D1PreparedStatement> {
    sql!(db, Unsent =>
        "SELECT id, type AS job_type, family, priority, run_at, correlation_id \
         FROM jobs INDEXED BY jobs_unfinished WHERE finished_at IS NULL AND status = 'queued' \
         AND sent_at IS NULL AND run_at <= ?1 AND updated_at <= ?1 ORDER BY run_at LIMIT ?2",
        before_ms,
        limit
    )
}

/// Up to `limit` waiting jobs, not held, whose message was sent by `before_ms` and that were
/// due by then yet never claimed (rows: [`Unsent`]): their message was lost.
pub fn job_list_stranded(
    db: &D1Database,
    before_ms: i64,
    limit: u32,
) -> worker::Result<D1PreparedStatement> {
    sql!(db, Unsent =>
        "SELECT id, type AS job_type, family, priority, run_at, correlation_id \
         FROM jobs INDEXED BY jobs_unfinished WHERE finished_at IS NULL \
         AND status IN ('queued', 'retrying') AND run_at <= ?1 AND sent_at <= ?1 \
         AND held_at IS NULL ORDER BY run_at LIMIT ?2",
        before_ms,
        limit
    )
}

/// Records the sends the queues accepted, for the jobs `ids` that still wait for their message
/// (a consumer may have claimed one already: that one is left alone).
pub async fn job_mark_sent(db: &D1Database, ids: &[String], now_ms: i64) -> worker::Result<()> {
    let ids = json_text(ids);
    sql!(
        db,
        "UPDATE jobs SET sent_at = ?2 WHERE id IN (SELECT value FROM json_each(?1)) \
         AND +status IN ('queued', 'retrying')",
        &ids,
        now_ms
    )?
    .run()
    .await?;
    Ok(())
}

/// Priority aging: up to `limit` starving jobs (waiting, due more than `AGING_AFTER_MS` ago),
/// the longest waiting first, gain `AGING_STEP` (up to `MAX_PRIORITY`), at most once per
/// `AGING_EVERY_MS` (rows: [`Aged`]).
pub fn job_age_priority(
    db: &D1Database,
    now_ms: i64,
    limit: u32,
) -> worker::Result<D1PreparedStatement> {
    let (starving_before, aged_before) = (now_ms - AGING_AFTER_MS, now_ms - AGING_EVERY_MS);
    sql!(db, Aged =>
        "UPDATE jobs SET priority = MIN(?5, priority + ?6), aged_at = ?1, updated_at = ?1 \
         WHERE id IN (SELECT id FROM jobs INDEXED BY jobs_unfinished WHERE finished_at IS NULL \
         AND status IN ('queued', 'retrying') AND run_at <= ?3 \
         AND priority < ?5 AND (aged_at IS NULL OR aged_at <= ?4) \
         ORDER BY run_at LIMIT ?2) \
         RETURNING id, type AS job_type, family, priority, run_at, correlation_id, held_at",
        now_ms,
        limit,
        starving_before,
        aged_before,
        MAX_PRIORITY,
        AGING_STEP
    )
}

/// A job priority aging raised, at its new priority.
#[derive(Deserialize)]
pub struct Aged {
    pub id: String,
    pub job_type: String,
    pub family: String,
    pub priority: i64,
    pub run_at: i64,
    pub correlation_id: Option<String>,
    /// Set while a pause holds it (no message in flight).
    pub held_at: Option<i64>,
}

impl Aged {
    /// The job, to be sent.
    pub fn unsent(&self) -> Unsent {
        Unsent {
            id: self.id.clone(),
            job_type: self.job_type.clone(),
            family: self.family.clone(),
            priority: self.priority,
            run_at: self.run_at,
            correlation_id: self.correlation_id.clone(),
        }
    }
}

/// A promotion of starving jobs: those of family `from` whose priority reached `threshold`
/// move to family `to` (shared `Family::promotion`).
#[derive(Clone, Copy)]
pub struct Promotion {
    pub from: Family,
    pub to: Family,
    pub threshold: u8,
}

/// Moves up to `limit` starving jobs of the promotion back in the outbox, on their new family
/// (rows: [`Unsent`]). A job a pause covers or holds stays.
pub fn job_promote(
    db: &D1Database,
    promotion: Promotion,
    now_ms: i64,
    limit: u32,
) -> worker::Result<D1PreparedStatement> {
    let starving_before = now_ms - AGING_AFTER_MS;
    sql!(db, Unsent =>
        "UPDATE jobs SET family = ?4, sent_at = NULL, updated_at = ?1 WHERE id IN \
         (SELECT id FROM jobs INDEXED BY jobs_unfinished WHERE finished_at IS NULL \
         AND status IN ('queued', 'retrying') AND run_at <= ?3 \
         AND family = ?5 AND priority >= ?6 AND held_at IS NULL \
         AND NOT (EXISTS (SELECT 1 FROM pauses) AND EXISTS (SELECT 1 FROM pauses p WHERE \
         (p.kind = 'type' AND p.name = jobs.type) OR (p.kind = 'family' AND p.name = jobs.family))) \
         ORDER BY priority DESC, run_at LIMIT ?2) \
         RETURNING id, type AS job_type, family, priority, run_at, correlation_id",
        now_ms,
        limit,
        starving_before,
        promotion.to.as_str(),
        promotion.from.as_str(),
        i64::from(promotion.threshold)
    )
}

/// Retention: up to `limit` finished jobs, succeeded (or cancelled, skipped) before
/// `done_before_ms` or dead before `dead_before_ms`, deleted with their run records and DLQ
/// arrivals, and then the invocations no job kept can name: four statements, job_runs,
/// dead_letters, jobs, then invocations (which reads the jobs delete's count, so comes right
/// after it: `invocations::invocation_delete_unnamed`). Succeeded jobs have no index
/// of their own: they are read in id order (ULIDs sort by creation) among jobs created before
/// `done_before_ms` (`?4`, the least id minted then), so the rows a delete reads are the oldest
/// the table holds; the others through `jobs_ended`. Each statement selects the same rows:
/// nothing else in the transaction changes `jobs` before the last one.
pub fn job_delete_finished(
    db: &D1Database,
    done_before_ms: i64,
    dead_before_ms: i64,
    limit: u32,
) -> worker::Result<[D1PreparedStatement; 4]> {
    let first_id_at_cutoff = job_id(done_before_ms, 0);
    let cutoff = first_id_at_cutoff.as_str();
    Ok([
        sql!(
            db,
            "DELETE FROM job_runs WHERE job_id IN (SELECT id FROM jobs WHERE id < ?4 \
             AND status = 'succeeded' AND finished_at < ?1 \
             UNION ALL SELECT id FROM jobs INDEXED BY jobs_ended WHERE finished_at IS NOT NULL \
             AND status <> 'succeeded' AND status IN ('cancelled', 'skipped') AND finished_at < ?1 \
             UNION ALL SELECT id FROM jobs INDEXED BY jobs_ended WHERE finished_at IS NOT NULL \
             AND status <> 'succeeded' AND status = 'dead' AND finished_at < ?2 LIMIT ?3)",
            done_before_ms,
            dead_before_ms,
            limit,
            cutoff
        )?,
        sql!(
            db,
            "DELETE FROM dead_letters WHERE job_id IN (SELECT id FROM jobs WHERE id < ?4 \
             AND status = 'succeeded' AND finished_at < ?1 \
             UNION ALL SELECT id FROM jobs INDEXED BY jobs_ended WHERE finished_at IS NOT NULL \
             AND status <> 'succeeded' AND status IN ('cancelled', 'skipped') AND finished_at < ?1 \
             UNION ALL SELECT id FROM jobs INDEXED BY jobs_ended WHERE finished_at IS NOT NULL \
             AND status <> 'succeeded' AND status = 'dead' AND finished_at < ?2 LIMIT ?3)",
            done_before_ms,
            dead_before_ms,
            limit,
            cutoff
        )?,
        sql!(
            db,
            "DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE id < ?4 \
             AND status = 'succeeded' AND finished_at < ?1 \
             UNION ALL SELECT id FROM jobs INDEXED BY jobs_ended WHERE finished_at IS NOT NULL \
             AND status <> 'succeeded' AND status IN ('cancelled', 'skipped') AND finished_at < ?1 \
             UNION ALL SELECT id FROM jobs INDEXED BY jobs_ended WHERE finished_at IS NOT NULL \
             AND status <> 'succeeded' AND status = 'dead' AND finished_at < ?2 LIMIT ?3)",
            done_before_ms,
            dead_before_ms,
            limit,
            cutoff
        )?,
        invocation_delete_unnamed(db, done_before_ms, limit)?,
    ])
}
