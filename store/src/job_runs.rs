//! The `job_runs` table: one row per attempt that did not succeed (its run number, times,
//! outcome, error and cost), written with the job's next state and read by the job's view, the
//! operator's failures and, as [`crate::attempts`], the windows over attempts. A success's
//! record is on its job's row instead (migration 0016).

use jobs_shared::job::lease::LOST_ATTEMPT;
use jobs_shared::job::lifecycle::JobStatus::{Dead, Retrying, Running, Succeeded};
use jobs_shared::retry::error_class::ErrorClass::{self, LeaseExpired};
use serde::Deserialize;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement};

use crate::attempts::{failed_runs_since, FIRST_RUN_WAIT};
use crate::d1::{num, statement};
use crate::execution_histogram::bucket_sql;
use crate::sql::outcome_rows_of_jobs;
use jobs_shared::api::job_filter::SqlValue;

/// The statement that gives each lost attempt its run record: every job `lost` selects (a
/// WHERE clause over `jobs`: `running`, its lease run out), at `now` (an SQL parameter such as
/// `?1`). The consumer's claim and the sweep's rescuer both write it, whichever finds the job
/// first; the other's insert is a no-op. `found_by` (an SQL expression of JSON text, shared
/// `found_by_consumer` or `FOUND_BY_SWEEP`) says which, and becomes the run's details with the
/// lease the attempt held.
pub(crate) fn record_lost_attempts_sql(now: &str, lost: &str, found_by: &str) -> String {
    let outcome = format!("CASE WHEN attempts >= max_attempts THEN '{Dead}' ELSE '{Retrying}' END");
    record_ended_attempts_sql(now, lost, (&outcome, LeaseExpired, LOST_ATTEMPT), found_by)
}

/// The statement that ends, at `now`, the running attempt of every job `ended` selects (a
/// WHERE clause over `jobs`, its jobs `running`) with `outcome` (an SQL expression), the
/// error's class and message, and `details` (JSON text) with the lease the attempt held.
/// The attempt's own outcome, should it come, finds its job no longer running and writes
/// nothing (`jobs::job_set_outcome_many`).
pub(crate) fn record_ended_attempts_sql(
    now: &str,
    ended: &str,
    (outcome, class, message): (&str, ErrorClass, &str),
    details: &str,
) -> String {
    format!(
        "INSERT INTO job_runs (job_id, run, attempt, started_at, finished_at, outcome, error_class, \
         error_message, duration_ms, details) \
         SELECT id, runs, attempts, COALESCE(started_at, {now}), {now}, {outcome}, '{class}', \
         '{message}', {now} - COALESCE(started_at, {now}), \
         json_set({details}, '$.lease_until', lease_until) FROM jobs WHERE {ended} \
         ON CONFLICT DO NOTHING"
    )
}

/// The run records of failed attempts (retried, held, dead or skipped) from `rows`, a JSON
/// array of [id, run, started_at, finished_at, cost_cents, outcome, error_class,
/// error_message, ...] with the run's details (shared `RunDetails`) at `details_at` (see
/// `jobs::job_set_outcome_many`), each for a job still `running` under that run. The details
/// are written with the lease the job held, read here before the job's own update clears it.
pub(crate) fn job_run_insert_failed(
    db: &D1Database,
    rows: &JsValue,
    details_at: usize,
) -> worker::Result<D1PreparedStatement> {
    db.prepare(format!(
        "INSERT INTO job_runs (job_id, run, attempt, started_at, finished_at, duration_ms, \
         details, cost_cents, outcome, error_class, error_message) \
         SELECT j.id, j.runs, j.attempts, o.value ->> 2, o.value ->> 3, \
         (o.value ->> 3) - (o.value ->> 2), \
         json_set(o.value ->> {details_at}, '$.lease_until', j.lease_until), \
         o.value ->> 4, o.value ->> 5, o.value ->> 6, o.value ->> 7 \
         FROM {rows}",
        rows = outcome_rows_of_jobs("?1", Running),
    ))
    .bind(std::slice::from_ref(rows))
}

/// The failed attempts that finished since `since_ms` (rows: shared `last_hour::FailedRow`),
/// grouped by family, outcome and duration bucket: stats' last hour, whose successes are
/// counted per minute in `job_minutes`. "Recent" ones finished since `recent_ms`.
pub fn job_run_failed_window(
    db: &D1Database,
    since_ms: i64,
    recent_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    db.prepare(format!(
        "SELECT j.family, r.outcome, {bucket} AS bucket, COUNT(*) AS count, \
         SUM(r.finished_at >= ?2) AS recent, COUNT({FIRST_RUN_WAIT}) AS waited, \
         IFNULL(SUM({FIRST_RUN_WAIT}), 0) AS wait_sum_ms, MAX(r.duration_ms) AS max_ms \
         FROM {failed} GROUP BY j.family, r.outcome, bucket",
        bucket = bucket_sql("r.duration_ms"),
        failed = failed_runs_since("?1"),
    ))
    .bind(&[num(since_ms), num(recent_ms)])
}

/// One attempt's record.
#[derive(Deserialize)]
pub struct RunRow {
    pub run: i64,
    pub attempt: i64,
    pub started_at: i64,
    pub finished_at: i64,
    pub outcome: String,
    pub error_class: Option<String>,
    pub error_message: Option<String>,
    pub duration_ms: i64,
    pub cost_cents: f64,
    /// JSON (shared `RunDetails`, or a lost attempt's finder); NULL on runs recorded before it.
    pub details: Option<String>,
}

/// Every run of the job `id`, in order: its run records, and its success's, which is on the
/// job's own row (migration 0016: `run_cost_cents` is set exactly when it is there), its
/// details with what its invocation shares put back (migration 0018).
pub async fn job_run_list(db: &D1Database, id: &str) -> worker::Result<Vec<RunRow>> {
    let shared = "json_set(COALESCE((SELECT details FROM invocations WHERE id = run_invocation), \
         '{}'), '$.invocation', run_invocation)";
    db.prepare(format!(
        "SELECT run, attempt, started_at, finished_at, outcome, error_class, error_message, \
         duration_ms, cost_cents, details FROM job_runs WHERE job_id = ?1 \
         UNION ALL SELECT runs, attempts, started_at, finished_at, status, NULL, NULL, \
         finished_at - started_at, run_cost_cents, \
         IIF(run_invocation IS NULL, run_details, json_patch({shared}, run_details)) FROM jobs \
         WHERE id = ?1 AND status = '{Succeeded}' AND run_cost_cents IS NOT NULL ORDER BY run"
    ))
    .bind(&[id.into()])?
    .all()
    .await?
    .results()
}

#[derive(Deserialize)]
pub struct FailureRow {
    pub job_id: String,
    #[serde(rename = "type")]
    pub job_type: String,
    pub family: String,
    pub status: String,
    pub run: i64,
    pub attempt: i64,
    pub finished_at: i64,
    pub outcome: String,
    pub error_class: Option<String>,
    pub error_message: Option<String>,
}

/// The latest failed attempts (retried or dead), newest first, through `job_runs_failed`
/// (migration 0015): its condition is repeated word for word.
pub async fn job_run_list_recent_failures(
    db: &D1Database,
    limit: u32,
) -> worker::Result<Vec<FailureRow>> {
    let stmt = statement(
        db,
        &format!(
            "SELECT r.job_id, j.type, j.family, j.status, r.run, r.attempt, r.finished_at, \
             r.outcome, r.error_class, r.error_message \
             FROM job_runs r INDEXED BY job_runs_failed JOIN jobs j ON j.id = r.job_id \
             WHERE r.outcome <> '{Succeeded}' AND r.outcome IN ('{Retrying}', '{Dead}') \
             ORDER BY r.finished_at DESC LIMIT ?"
        ),
        &[SqlValue::Int(i64::from(limit))],
    )?;
    let results = db.batch(vec![stmt]).await?;
    results[0].results()
}
