//! Counts over `jobs` for the operator's stats, GET /metrics and the sweep's alerts: each reads
//! one partial index (live jobs, or jobs that ended unsucceeded), never the succeeded history,
//! which is counted from `job_minutes`. Each is a statement for the caller's one batch.

use jobs_shared::JobStatus::{Queued, Retrying, Running, Scheduled, Succeeded};
use jobs_shared::{Family, SqlValue};
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement};

use super::indexes::{PartialIndex, ENDED, UNFINISHED};
use crate::d1::{num, statement};
use crate::sql::status_list;

#[derive(Deserialize)]
pub struct CountRow {
    pub family: String,
    pub status: String,
    pub count: i64,
}

/// Jobs counted by family and status (rows: [`CountRow`]): every live job and every job that
/// ended unsucceeded, read through their indexes, and the jobs that succeeded within the
/// history `job_minutes` keeps (RETAIN_HISTORY_DAYS), summed from its rows: counting the
/// succeeded history itself would read every row of it.
pub fn job_count_by_family_and_status(db: &D1Database) -> worker::Result<D1PreparedStatement> {
    let count = |index: &PartialIndex| {
        format!(
            "SELECT family, status, COUNT(*) AS count FROM {} GROUP BY family, status",
            index.rows()
        )
    };
    statement(
        db,
        &format!(
            "{} UNION ALL {} UNION ALL SELECT family, '{Succeeded}', SUM(succeeded) \
             FROM job_minutes GROUP BY family",
            count(&UNFINISHED),
            count(&ENDED)
        ),
        &[],
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

#[derive(Deserialize)]
pub struct WaitingRow {
    pub family: String,
    pub backlog: i64,
    pub held: i64,
    pub oldest_run_at: Option<i64>,
}

/// Each family's due backlog, how much of it a pause holds, and its oldest due time
/// (rows: [`WaitingRow`]).
pub fn job_count_waiting_by_family(
    db: &D1Database,
    now_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    statement(
        db,
        &format!(
            "SELECT family, COUNT(*) AS backlog, SUM(held_at IS NOT NULL) AS held, \
             MIN(run_at) AS oldest_run_at FROM {} AND run_at <= ? GROUP BY family",
            live_in(&backlog_statuses())
        ),
        &[SqlValue::Int(now_ms)],
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
