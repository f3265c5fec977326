//! Counts over `jobs` for the operator's stats, GET /metrics and the sweep's alerts: each reads
//! one partial index (live jobs, or jobs that ended unsucceeded), never the succeeded history,
//! which is counted from `job_minutes`. Each is a statement for the caller's one batch.

use jobs_shared::api::job_filter::SqlValue;
use jobs_shared::job::family::Family;
use jobs_shared::job::lifecycle::JobStatus::{Queued, Retrying, Running, Scheduled, Succeeded};
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement};

use super::indexes::{ENDED, UNFINISHED};
use crate::d1::{num, statement};
use crate::sql::status_list;

/// The jobs of one family and status, and of those waiting for their run the ones due (the
/// backlog), held by a pause, and the oldest due time.
#[derive(Deserialize)]
pub struct CountRow {
    pub family: String,
    pub status: String,
    pub count: i64,
    pub due: i64,
    pub held: i64,
    pub oldest_due_at: Option<i64>,
}

/// Jobs counted by family and status at `now_ms` (rows: [`CountRow`]): every live job, read
/// once through its index (with the due backlog among them), every job that ended
/// unsucceeded, through its index, and the jobs that succeeded within the history
/// `job_minutes` keeps (RETAIN_HISTORY_DAYS), summed from its rows: counting the succeeded
/// history itself would read every row of it.
pub fn job_count_by_family_and_status(
    db: &D1Database,
    now_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    let due = format!("status IN ({}) AND run_at <= ?1", backlog_statuses());
    statement(
        db,
        &format!(
            "SELECT family, status, COUNT(*) AS count, SUM({due}) AS due, \
             SUM({due} AND held_at IS NOT NULL) AS held, MIN(IIF({due}, run_at, NULL)) AS oldest_due_at \
             FROM {unfinished} GROUP BY family, status \
             UNION ALL SELECT family, status, COUNT(*), 0, 0, NULL FROM {ended} GROUP BY family, status \
             UNION ALL SELECT family, '{Succeeded}', SUM(succeeded), 0, 0, NULL \
             FROM job_minutes GROUP BY family",
            unfinished = UNFINISHED.rows(),
            ended = ENDED.rows(),
        ),
        &[SqlValue::Int(now_ms)],
    )
}

/// `FROM ... WHERE` the live jobs in `statuses`: the counts' way into the index.
fn live_in(statuses: &str) -> String {
    format!("{} AND status IN ({statuses})", UNFINISHED.rows())
}

/// The states of a job waiting for its run (the backlog once due).
fn backlog_statuses() -> String {
    status_list(&[Scheduled, Queued, Retrying])
}

/// Each family's due backlog at `?1` (columns `family`, `backlog`).
pub(crate) fn backlog_by_family_sql() -> String {
    format!(
        "SELECT family, COUNT(*) AS backlog FROM {} AND run_at <= ?1 GROUP BY family",
        live_in(&backlog_statuses())
    )
}

/// Each family's due backlog (rows: shared `FamilyWindow`): GET /metrics and the alerts.
pub fn job_count_backlog_by_family(
    db: &D1Database,
    now_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    db.prepare(backlog_by_family_sql()).bind(&[num(now_ms)])
}

/// The running jobs of `family`, as one row `value` (GET /metrics).
pub fn job_count_running(db: &D1Database, family: Family) -> worker::Result<D1PreparedStatement> {
    statement(
        db,
        &format!(
            "SELECT COUNT(*) AS value FROM {} AND family = '{}'",
            live_in(&status_list(&[Running])),
            family.as_str()
        ),
        &[],
    )
}

#[derive(Deserialize, Default)]
pub struct RunningRow {
    pub family: String,
    pub running: i64,
    pub long_running: i64,
    pub oldest_started_at: Option<i64>,
}

/// Each family's running jobs, and those started before `long_before_ms` (rows:
/// [`RunningRow`]).
pub fn job_count_running_by_family(
    db: &D1Database,
    long_before_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    db.prepare(format!(
        "SELECT family, COUNT(*) AS running, SUM(started_at < ?1) AS long_running, \
         MIN(started_at) AS oldest_started_at FROM {} GROUP BY family",
        live_in(&status_list(&[Running]))
    ))
    .bind(&[num(long_before_ms)])
}
