//! The `job_runs` table: one row per attempt that did not succeed (its run number, times,
//! outcome, error and cost), written with the job's next state and read by the job's view, the
//! operator's failures and, as [`crate::attempts`], the windows over attempts. A success's
//! record is on its job's row instead (migration 0016). A lost attempt's record is written by
//! whichever finds it first, the consumer's claim (`jobs::job_claim`) or the sweep's rescue
//! (`jobs::job_rescue_many`); an attempt an operator's skip ends, by the skip
//! (`jobs::job_move_one`).

use jobs_shared::observe::last_hour::FailedRow;
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement};

/// The run records of failed attempts (retried, held, dead or skipped) from `rows`, the JSON
/// array of the record's failed rows (`jobs::job_set_outcome_many`: `id`, `run`, `started_at`,
/// `finished_at`, `cost_cents`, `outcome`, `error_class`, `error_message`, `details`...), each
/// for a job still `running` under that run: the guard the jobs' own update repeats right
/// after, so an attempt overtaken by a rescue or an operator's retry records nothing. The
/// details are written with the lease the job held, read here before that update clears it.
/// The unary `+` keeps SQLite on the primary key.
pub(crate) fn job_run_insert_failed(
    db: &D1Database,
    rows: &str,
) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "INSERT INTO job_runs (job_id, run, attempt, started_at, finished_at, duration_ms, \
         details, cost_cents, outcome, error_class, error_message) \
         SELECT j.id, j.runs, j.attempts, o.value ->> 'started_at', o.value ->> 'finished_at', \
         (o.value ->> 'finished_at') - (o.value ->> 'started_at'), \
         json_set(o.value ->> 'details', '$.lease_until', j.lease_until), \
         o.value ->> 'cost_cents', o.value ->> 'outcome', o.value ->> 'error_class', \
         o.value ->> 'error_message' \
         FROM json_each(?1) o JOIN jobs j ON j.id = o.value ->> 'id' \
         AND +j.status = 'running' AND j.runs = o.value ->> 'run'",
        rows
    )
}

/// The failed attempts that finished since `since_ms` (rows: shared [`FailedRow`]), grouped
/// by family, outcome and duration bucket (shared `execution_histogram::bucket_of`, as a
/// `CASE`): stats' last hour, whose successes are counted per minute in `job_minutes`.
/// "Recent" ones finished since `recent_ms`; a wait is from enqueue to start, first runs only.
/// Read through `job_runs_failed` (migration 0015), whose condition it repeats.
pub fn job_run_failed_window(
    db: &D1Database,
    since_ms: i64,
    recent_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    sql!(db, FailedRow =>
        "SELECT j.family AS \"family!\", r.outcome AS \"outcome!\", \
         CASE WHEN r.duration_ms <= 5 THEN 0 WHEN r.duration_ms <= 10 THEN 1 \
         WHEN r.duration_ms <= 25 THEN 2 WHEN r.duration_ms <= 50 THEN 3 \
         WHEN r.duration_ms <= 100 THEN 4 WHEN r.duration_ms <= 250 THEN 5 \
         WHEN r.duration_ms <= 500 THEN 6 WHEN r.duration_ms <= 1000 THEN 7 \
         WHEN r.duration_ms <= 2500 THEN 8 WHEN r.duration_ms <= 5000 THEN 9 \
         WHEN r.duration_ms <= 10000 THEN 10 WHEN r.duration_ms <= 30000 THEN 11 \
         WHEN r.duration_ms <= 60000 THEN 12 WHEN r.duration_ms <= 300000 THEN 13 \
         WHEN r.duration_ms <= 900000 THEN 14 ELSE 15 END AS \"bucket!: i64\", \
         COUNT(*) AS \"count!: i64\", SUM(r.finished_at >= ?2) AS \"recent!: i64\", \
         COUNT(CASE WHEN r.run = 1 THEN r.started_at - j.created_at END) AS \"waited!: i64\", \
         IFNULL(SUM(CASE WHEN r.run = 1 THEN r.started_at - j.created_at END), 0) \
         AS \"wait_sum_ms!: i64\", MAX(r.duration_ms) AS \"max_ms!: i64\" \
         FROM job_runs r INDEXED BY job_runs_failed JOIN jobs j ON j.id = r.job_id \
         WHERE r.outcome <> 'succeeded' AND r.finished_at >= ?1 \
         GROUP BY j.family, r.outcome, \"bucket!: i64\"",
        since_ms,
        recent_ms
    )
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
    sql!(db, RunRow =>
        "SELECT run, attempt, started_at, finished_at, outcome, error_class, error_message, \
         duration_ms, cost_cents, details FROM job_runs WHERE job_id = ?1 \
         UNION ALL SELECT runs, attempts, started_at, finished_at, status, NULL, NULL, \
         finished_at - started_at, run_cost_cents, \
         IIF(run_invocation IS NULL, run_details, \
         json_patch(json_set(COALESCE((SELECT details FROM invocations WHERE id = run_invocation), \
         '{}'), '$.invocation', run_invocation), run_details)) FROM jobs \
         WHERE id = ?1 AND status = 'succeeded' AND run_cost_cents IS NOT NULL ORDER BY run",
        id
    )?
    .all()
    .await?
    .results()
}

/// A failed attempt with its job, as the operator's failures list it.
#[derive(Deserialize)]
pub struct FailureRow {
    pub job_id: String,
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
    let stmt = sql!(db, FailureRow =>
        "SELECT r.job_id, j.type AS job_type, j.family, j.status, r.run, r.attempt, \
         r.finished_at, r.outcome, r.error_class, r.error_message \
         FROM job_runs r INDEXED BY job_runs_failed JOIN jobs j ON j.id = r.job_id \
         WHERE r.outcome <> 'succeeded' AND r.outcome IN ('retrying', 'dead') \
         ORDER BY r.finished_at DESC LIMIT ?1",
        limit
    )?;
    let results = db.batch(vec![stmt]).await?;
    results[0].results()
}

#[cfg(test)]
mod tests {
    use jobs_shared::observe::execution_histogram::DURATION_BUCKETS_MS;

    use crate::sql::written;

    #[test]
    fn the_failed_window_buckets_durations_as_the_histogram_does() {
        let arms: Vec<String> = DURATION_BUCKETS_MS
            .iter()
            .enumerate()
            .map(|(i, le)| format!("WHEN r.duration_ms <= {le} THEN {i}"))
            .collect();
        let case = format!(
            "CASE {} ELSE {} END",
            arms.join(" "),
            DURATION_BUCKETS_MS.len()
        );
        assert!(
            written(include_str!("job_runs.rs")).contains(&case),
            "{case}"
        );
    }
}
