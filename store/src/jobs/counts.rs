//! Counts over `jobs` for the operator's stats, GET /metrics and the sweep's alerts: each read
//! is bounded by the index on status (or is the operator's whole-table count), and each is a
//! statement for the caller's one batch.

use jobs_shared::JobStatus::{Queued, Retrying, Running, Scheduled};
use jobs_shared::{Family, SqlValue};
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement};

use crate::d1::{num, statement};
use crate::sql::status_list;

#[derive(Deserialize)]
pub struct CountRow {
    pub family: String,
    pub status: String,
    pub count: i64,
}

/// Every job, counted by family and status (rows: [`CountRow`]).
pub fn job_count_by_family_and_status(db: &D1Database) -> worker::Result<D1PreparedStatement> {
    statement(
        db,
        "SELECT family, status, COUNT(*) AS count FROM jobs GROUP BY family, status",
        &[],
    )
}

/// The states of a job waiting for its run (the backlog once due).
pub(crate) fn backlog_statuses() -> String {
    status_list(&[Scheduled, Queued, Retrying])
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
             MIN(run_at) AS oldest_run_at FROM jobs \
             WHERE status IN ({}) AND run_at <= ? GROUP BY family",
            backlog_statuses()
        ),
        &[SqlValue::Int(now_ms)],
    )
}

/// Each family's due backlog (rows: shared `FamilyWindow`): GET /metrics and the alerts.
pub fn job_count_backlog_by_family(
    db: &D1Database,
    now_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    db.prepare(format!(
        "SELECT family, COUNT(*) AS backlog FROM jobs \
         WHERE status IN ({}) AND run_at <= ?1 GROUP BY family",
        backlog_statuses()
    ))
    .bind(&[num(now_ms)])
}

/// The running jobs of `family`, as one row `value` (GET /metrics).
pub fn job_count_running(db: &D1Database, family: Family) -> worker::Result<D1PreparedStatement> {
    statement(
        db,
        &format!(
            "SELECT COUNT(*) AS value FROM jobs WHERE status = '{Running}' AND family = '{}'",
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
         MIN(started_at) AS oldest_started_at FROM jobs WHERE status = '{Running}' GROUP BY family"
    ))
    .bind(&[num(long_before_ms)])
}
