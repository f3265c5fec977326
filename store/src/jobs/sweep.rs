//! The sweep's statements over `jobs` (docs/operating.md "Recurring jobs and the maintenance
//! sweep"): releasing held due jobs, finding jobs whose message is missing, recording sends,
//! priority aging, and retention. Each is a compare-and-set on the state it reads, so overlapping
//! ticks write nothing twice.

use jobs_shared::job::enqueue::MAX_PRIORITY;
use jobs_shared::job::family::Family;
use jobs_shared::job::ids::job_id;
use jobs_shared::job::lifecycle::JobStatus::{
    Cancelled, Dead, Queued, Retrying, Scheduled, Skipped, Succeeded,
};
use jobs_shared::schedule::sweep_policy::{AGING_AFTER_MS, AGING_EVERY_MS, AGING_STEP};
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement};

use super::indexes::{ENDED, UNFINISHED, WAITING};
use super::unsent::{Unsent, UNSENT_COLUMNS};
use crate::d1::{json, num};
use crate::invocations::invocation_delete_unnamed;
use crate::sql::PAUSED_JOB_SQL;
use crate::sql::{status_list, waiting};
use serde::Deserialize;

/// The delayed release, two statements (rows: `Unsent`): up to `limit` `scheduled` jobs due by
/// `horizon_ms` (within the queue's delay limit) become `queued`, and up to `limit` held
/// `retrying` jobs due by then are read to be sent again (they stay `retrying`).
pub fn job_schedule(
    db: &D1Database,
    now_ms: i64,
    horizon_ms: i64,
    limit: u32,
) -> worker::Result<[D1PreparedStatement; 2]> {
    let params = [num(now_ms), num(horizon_ms), num(limit.into())];
    let waiting = WAITING.rows();
    let release = db
        .prepare(format!(
            "UPDATE jobs SET status = '{Queued}', updated_at = ?1 WHERE id IN \
             (SELECT id FROM {waiting} AND status = '{Scheduled}' \
             AND sent_at IS NULL AND run_at <= ?2 ORDER BY run_at LIMIT ?3) \
             AND status = '{Scheduled}' AND sent_at IS NULL RETURNING {UNSENT_COLUMNS}"
        ))
        .bind(&params)?;
    let held_retries = db
        .prepare(format!(
            "SELECT {UNSENT_COLUMNS} FROM {waiting} AND status = '{Retrying}' \
             AND sent_at IS NULL AND run_at <= ?1 ORDER BY run_at LIMIT ?2"
        ))
        .bind(&params[1..])?;
    Ok([release, held_retries])
}

/// Up to `limit` `queued` jobs with no send recorded, due and last written by `before_ms`
/// (rows: `Unsent`): the outbox.
pub fn job_list_unsent(
    db: &D1Database,
    before_ms: i64,
    limit: u32,
) -> worker::Result<D1PreparedStatement> {
    let live = UNFINISHED.rows();
    db.prepare(format!(
        "SELECT {UNSENT_COLUMNS} FROM {live} AND status = '{Queued}' \
         AND sent_at IS NULL AND run_at <= ?1 AND updated_at <= ?1 ORDER BY run_at LIMIT ?2"
    ))
    .bind(&[num(before_ms), num(limit.into())])
}

/// Up to `limit` waiting jobs, not held, whose message was sent by `before_ms` and that were
/// due by then yet never claimed (rows: `Unsent`): their message was lost.
pub fn job_list_stranded(
    db: &D1Database,
    before_ms: i64,
    limit: u32,
) -> worker::Result<D1PreparedStatement> {
    let (waiting, live) = (waiting(), UNFINISHED.rows());
    db.prepare(format!(
        "SELECT {UNSENT_COLUMNS} FROM {live} AND status IN ({waiting}) \
         AND run_at <= ?1 AND sent_at <= ?1 AND held_at IS NULL ORDER BY run_at LIMIT ?2"
    ))
    .bind(&[num(before_ms), num(limit.into())])
}

/// Records the sends the queues accepted, for the jobs `ids` that still wait for their message
/// (a consumer may have claimed one already: that one is left alone).
pub async fn job_mark_sent(db: &D1Database, ids: &[String], now_ms: i64) -> worker::Result<()> {
    let waiting = waiting();
    db.prepare(format!(
        "UPDATE jobs SET sent_at = ?2 WHERE id IN (SELECT value FROM json_each(?1)) \
         AND +status IN ({waiting})"
    ))
    .bind(&[json(ids), num(now_ms)])?
    .run()
    .await?;
    Ok(())
}

/// `FROM ... WHERE` a waiting job due more than `AGING_AFTER_MS` before `?1`: one priority
/// aging raises.
fn starving() -> String {
    let (waiting, live) = (waiting(), UNFINISHED.rows());
    format!("{live} AND status IN ({waiting}) AND run_at <= ?1 - {AGING_AFTER_MS}")
}

/// Priority aging: up to `limit` starving jobs, the longest waiting first, gain `AGING_STEP`
/// (up to `MAX_PRIORITY`), at most once per `AGING_EVERY_MS` (rows: [`Aged`]).
pub fn job_age_priority(
    db: &D1Database,
    now_ms: i64,
    limit: u32,
) -> worker::Result<D1PreparedStatement> {
    let starving = starving();
    db.prepare(format!(
        "UPDATE jobs SET priority = MIN({MAX_PRIORITY}, priority + {AGING_STEP}), aged_at = ?1, \
         updated_at = ?1 WHERE id IN (SELECT id FROM {starving} \
         AND priority < {MAX_PRIORITY} AND (aged_at IS NULL OR aged_at <= ?1 - {AGING_EVERY_MS}) \
         ORDER BY run_at LIMIT ?2) RETURNING {UNSENT_COLUMNS}, held_at"
    ))
    .bind(&[num(now_ms), num(limit.into())])
}

/// A job priority aging raised, at its new priority.
#[derive(Deserialize)]
pub struct Aged {
    #[serde(flatten)]
    pub job: Unsent,
    /// Set while a pause holds it (no message in flight).
    pub held_at: Option<i64>,
}

/// Moves up to `limit` starving jobs of `from` whose priority reached `threshold` to family
/// `to`, back in the outbox (rows: `Unsent`). A job a pause covers or holds stays.
pub fn job_promote(
    db: &D1Database,
    (from, to, threshold): (Family, Family, u8),
    now_ms: i64,
    limit: u32,
) -> worker::Result<D1PreparedStatement> {
    let starving = starving();
    db.prepare(format!(
        "UPDATE jobs SET family = '{to}', sent_at = NULL, updated_at = ?1 WHERE id IN \
         (SELECT id FROM {starving} AND family = '{from}' AND priority >= {threshold} \
         AND held_at IS NULL AND NOT {PAUSED_JOB_SQL} \
         ORDER BY priority DESC, run_at LIMIT ?2) RETURNING {UNSENT_COLUMNS}",
        to = to.as_str(),
        from = from.as_str(),
    ))
    .bind(&[num(now_ms), num(limit.into())])
}

/// Retention: up to `limit` finished jobs, succeeded (or cancelled, skipped) before
/// `done_before_ms` or dead before `dead_before_ms`, deleted with their run records and DLQ
/// arrivals, and then the invocations no job kept can name: four statements, job_runs,
/// dead_letters, jobs, then invocations (which reads the jobs delete's count, so comes right
/// after it: `invocations::invocation_delete_unnamed`). Succeeded jobs have no index
/// of their own: they are read in id order (ULIDs sort by creation) among jobs created before
/// `done_before_ms`, so the rows a delete reads are the oldest the table holds.
pub fn job_delete_finished(
    db: &D1Database,
    done_before_ms: i64,
    dead_before_ms: i64,
    limit: u32,
) -> worker::Result<[D1PreparedStatement; 4]> {
    let unrun = status_list(&[Cancelled, Skipped]);
    let ended = ENDED.rows();
    // The same rows for every statement: nothing else in the transaction changes `jobs`
    // before the last one.
    let old = format!(
        "SELECT id FROM jobs WHERE id < ?4 AND status = '{Succeeded}' AND finished_at < ?1 \
         UNION ALL SELECT id FROM {ended} AND status IN ({unrun}) \
         AND finished_at < ?1 \
         UNION ALL SELECT id FROM {ended} AND status = '{Dead}' \
         AND finished_at < ?2 LIMIT ?3"
    );
    // The least id minted at `done_before_ms`: every job created before it sorts below.
    let first_id_at_cutoff = job_id(done_before_ms, 0);
    let params = [
        num(done_before_ms),
        num(dead_before_ms),
        num(limit.into()),
        JsValue::from_str(&first_id_at_cutoff),
    ];
    Ok([
        db.prepare(format!("DELETE FROM job_runs WHERE job_id IN ({old})"))
            .bind(&params)?,
        db.prepare(format!("DELETE FROM dead_letters WHERE job_id IN ({old})"))
            .bind(&params)?,
        db.prepare(format!("DELETE FROM jobs WHERE id IN ({old})"))
            .bind(&params)?,
        invocation_delete_unnamed(db, done_before_ms, limit)?,
    ])
}
