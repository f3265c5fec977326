//! The `job_runs` table: one row per attempt (its run number, times, outcome, error and cost),
//! written with the job's next state and read by the job's view, the operator's stats and
//! failures, and the sweep's alerts.

use jobs_shared::job::lease::LOST_ATTEMPT;
use jobs_shared::ErrorClass::{self, LeaseExpired};
use jobs_shared::JobStatus::{Dead, Retrying, Running, Succeeded};
use serde::Deserialize;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement};

use crate::d1::{num, statement};
use jobs_shared::SqlValue;

/// The statement that gives each lost attempt its run record: every job `lost` selects (a
/// WHERE clause over `jobs`: `running`, its lease run out), at `now` (an SQL parameter such as
/// `?1`). The consumer's claim and the sweep's rescuer both write it, whichever finds the job
/// first; the other's insert is a no-op. `found_by` (an SQL expression of JSON text, shared
/// `found_by_consumer` or `FOUND_BY_SWEEP`) says which, and becomes the run's details with the
/// lease the attempt held.
pub(crate) fn record_lost_attempts_sql(now: &str, lost: &str, found_by: &str) -> String {
    format!(
        "INSERT INTO job_runs (job_id, run, attempt, started_at, finished_at, outcome, error_class, \
         error_message, duration_ms, details) \
         SELECT id, runs, attempts, COALESCE(started_at, {now}), {now}, \
         CASE WHEN attempts >= max_attempts THEN '{Dead}' ELSE '{Retrying}' END, '{LeaseExpired}', \
         '{LOST_ATTEMPT}', {now} - COALESCE(started_at, {now}), \
         json_set({found_by}, '$.lease_until', lease_until) FROM jobs WHERE {lost} \
         ON CONFLICT DO NOTHING"
    )
}

/// The run records of one kind of outcome, from `rows` (a JSON array over which `run_values`
/// are SQL, see `jobs::job_set_outcome_many`), each for a job still `running` under that run.
/// The row's field `details_at` (its details, shared `RunDetails`) is written with the lease
/// the job held, read here before the job's own update clears it.
pub(crate) fn job_run_insert_outcomes(
    db: &D1Database,
    rows: &JsValue,
    run_columns: &str,
    run_values: &str,
    details_at: usize,
) -> worker::Result<D1PreparedStatement> {
    db.prepare(format!(
        "INSERT INTO job_runs (job_id, run, attempt, started_at, finished_at, duration_ms, \
         details, {run_columns}) \
         SELECT j.id, j.runs, j.attempts, o.value ->> 2, o.value ->> 3, \
         (o.value ->> 3) - (o.value ->> 2), \
         json_set(o.value ->> {details_at}, '$.lease_until', j.lease_until), {run_values} \
         FROM json_each(?1) o JOIN jobs j ON j.id = o.value ->> 0 \
         AND +j.status = '{Running}' AND j.runs = o.value ->> 1"
    ))
    .bind(std::slice::from_ref(rows))
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

/// Every run of the job `id`, in order.
pub async fn job_run_list(db: &D1Database, id: &str) -> worker::Result<Vec<RunRow>> {
    db.prepare(
        "SELECT run, attempt, started_at, finished_at, outcome, error_class, error_message, \
         duration_ms, cost_cents, details FROM job_runs WHERE job_id = ? ORDER BY run",
    )
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

/// One family's (or `all`'s) window of attempts.
#[derive(Deserialize, Default, Clone)]
pub struct WindowRow {
    pub family: String,
    pub finished: i64,
    pub succeeded: i64,
    pub retried: i64,
    pub dead: i64,
    pub finished_recent: i64,
    pub avg_wait_ms: Option<f64>,
    pub p50_ms: Option<i64>,
    pub p95_ms: Option<i64>,
}

/// The attempts that finished since `since_ms` (rows: [`WindowRow`]), per family, or with
/// `overall` one row with family `all`; "recent" counts those since `recent_ms`. The
/// percentiles are nearest-rank: the value at rank ceil(n * p / 100) by duration.
pub fn job_run_window(
    db: &D1Database,
    overall: bool,
    since_ms: i64,
    recent_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    let key = if overall { "'all'" } else { "j.family" };
    statement(
        db,
        &format!(
            "SELECT family, COUNT(*) AS finished, SUM(outcome = '{Succeeded}') AS succeeded, \
             SUM(outcome = '{Retrying}') AS retried, SUM(outcome = '{Dead}') AS dead, \
             SUM(finished_at >= ?) AS finished_recent, \
             AVG(CASE WHEN run = 1 THEN started_at - created_at END) AS avg_wait_ms, \
             MAX(CASE WHEN rn = (n * 50 + 99) / 100 THEN duration_ms END) AS p50_ms, \
             MAX(CASE WHEN rn = (n * 95 + 99) / 100 THEN duration_ms END) AS p95_ms \
             FROM (SELECT {key} AS family, r.outcome, r.finished_at, r.run, r.started_at, \
               j.created_at, r.duration_ms, \
               ROW_NUMBER() OVER (PARTITION BY {key} ORDER BY r.duration_ms) AS rn, \
               COUNT(*) OVER (PARTITION BY {key}) AS n \
               FROM job_runs r JOIN jobs j ON j.id = r.job_id WHERE r.finished_at >= ?) \
             GROUP BY family"
        ),
        &[SqlValue::Int(recent_ms), SqlValue::Int(since_ms)],
    )
}

/// Each family's attempts since `since_ms`, as the alert rules judge them (rows: shared
/// `FamilyWindow`): failed ones (retried or dead; a skip is no failure) and rate-limited ones, the average duration, the p95 latency of
/// those that ended their job (from the job's due time, `run_at`, which is that attempt's),
/// and the p95 duration of those since `recent_ms` beside the rest's. Nearest-rank
/// percentiles, as in [`job_run_window`].
pub fn job_run_alert_window_by_family(
    db: &D1Database,
    since_ms: i64,
    recent_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    let ended = format!("r.outcome IN ('{Succeeded}', '{Dead}')");
    let p95 = |rank: &str, n: &str| format!("{rank} = ({n} * 95 + 99) / 100");
    db.prepare(format!(
        "SELECT family, COUNT(*) AS runs, SUM(outcome IN ('{Retrying}', '{Dead}')) AS failed, \
         IFNULL(SUM(error_class = '{rate_limited}'), 0) AS rate_limited, AVG(duration_ms) AS avg_ms, \
         SUM(ended) AS ended, SUM(recent) AS recent_runs, SUM(NOT recent) AS baseline_runs, \
         MAX(CASE WHEN ended AND {lat} THEN latency_ms END) AS p95_latency_ms, \
         MAX(CASE WHEN recent AND {dur} THEN duration_ms END) AS p95_recent_ms, \
         MAX(CASE WHEN NOT recent AND {dur} THEN duration_ms END) AS p95_baseline_ms \
         FROM (SELECT j.family, r.outcome, r.error_class, r.duration_ms, \
           {ended} AS ended, r.finished_at >= ?2 AS recent, r.finished_at - j.run_at AS latency_ms, \
           ROW_NUMBER() OVER (PARTITION BY j.family, {ended} ORDER BY r.finished_at - j.run_at) AS lat_rn, \
           COUNT(*) OVER (PARTITION BY j.family, {ended}) AS lat_n, \
           ROW_NUMBER() OVER (PARTITION BY j.family, r.finished_at >= ?2 ORDER BY r.duration_ms) AS dur_rn, \
           COUNT(*) OVER (PARTITION BY j.family, r.finished_at >= ?2) AS dur_n \
           FROM job_runs r JOIN jobs j ON j.id = r.job_id WHERE r.finished_at >= ?1) \
         GROUP BY family",
        rate_limited = ErrorClass::RateLimited,
        lat = p95("lat_rn", "lat_n"),
        dur = p95("dur_rn", "dur_n"),
    ))
    .bind(&[num(since_ms), num(recent_ms)])
}
