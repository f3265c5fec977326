//! Counts over `jobs` for the operator's stats, GET /metrics and the sweep's alerts: each reads
//! one partial index (live jobs, or jobs that ended unsucceeded), never the succeeded history,
//! which is counted from `job_minutes`. Each is a statement for the caller's one batch. The
//! backlog is the jobs waiting for their run (`scheduled`, `queued`, `retrying`) once due.

use jobs_shared::job::family::Family;
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement};

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
    sql!(db, CountRow =>
        "SELECT family, status, COUNT(*) AS \"count!: i64\", \
         SUM(status IN ('scheduled', 'queued', 'retrying') AND run_at <= ?1) AS \"due!: i64\", \
         SUM(status IN ('scheduled', 'queued', 'retrying') AND run_at <= ?1 \
         AND held_at IS NOT NULL) AS \"held!: i64\", \
         MIN(IIF(status IN ('scheduled', 'queued', 'retrying') AND run_at <= ?1, run_at, NULL)) \
         AS \"oldest_due_at?: i64\" \
         FROM jobs INDEXED BY jobs_unfinished WHERE finished_at IS NULL GROUP BY family, status \
         UNION ALL SELECT family, status, COUNT(*), 0, 0, NULL \
         FROM jobs INDEXED BY jobs_ended WHERE finished_at IS NOT NULL AND status <> 'succeeded' \
         GROUP BY family, status \
         UNION ALL SELECT family, 'succeeded', SUM(succeeded), 0, 0, NULL \
         FROM job_minutes GROUP BY family",
        now_ms
    )
}

/// Each family's due backlog at `now_ms` (rows: `family`, `backlog`, read as shared
/// `FamilyWindow`): GET /metrics and the alerts. `job_minutes::job_minute_record_backlog`
/// counts it the same way.
pub fn job_count_backlog_by_family(
    db: &D1Database,
    now_ms: i64,
) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "SELECT family, COUNT(*) AS \"backlog!: i64\" \
         FROM jobs INDEXED BY jobs_unfinished WHERE finished_at IS NULL \
         AND status IN ('scheduled', 'queued', 'retrying') AND run_at <= ?1 GROUP BY family",
        now_ms
    )
}

/// The running jobs of `family`, as one row `value` (GET /metrics).
pub fn job_count_running(db: &D1Database, family: Family) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "SELECT COUNT(*) AS value FROM jobs INDEXED BY jobs_unfinished \
         WHERE finished_at IS NULL AND status = 'running' AND family = ?1",
        family.as_str()
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
    sql!(db, RunningRow =>
        "SELECT family AS \"family!\", COUNT(*) AS running, SUM(started_at < ?1) AS \"long_running!: i64\", \
         MIN(started_at) AS oldest_started_at FROM jobs INDEXED BY jobs_unfinished \
         WHERE finished_at IS NULL AND status = 'running' GROUP BY family",
        long_before_ms
    )
}
