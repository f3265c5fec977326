//! SQL for the operator's stats, all in ONE D1 batch: counts per family and status, the
//! waiting backlog and its oldest job, and the last hour of run records (outcomes, p50/p95
//! execution time, wait from enqueue to first start), per family and overall.

use jobs_shared::{ApiError, SqlValue};
use serde::Deserialize;
use worker::D1Database;

use super::d1;

#[derive(Deserialize)]
pub struct CountRow {
    pub family: String,
    pub status: String,
    pub count: i64,
}

#[derive(Deserialize)]
pub struct WaitingRow {
    pub family: String,
    pub backlog: i64,
    pub held: i64,
    pub oldest_run_at: Option<i64>,
}

/// One family's (or `all`'s) last hour of attempts.
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

#[derive(Deserialize)]
pub struct PausedRow {
    pub kind: String,
    pub name: String,
}

pub struct Snapshot {
    pub counts: Vec<CountRow>,
    pub waiting: Vec<WaitingRow>,
    /// Per family, then one row with family `all`.
    pub window: Vec<WindowRow>,
    pub pauses: Vec<PausedRow>,
}

/// The window's aggregates grouped by `key` (`j.family`, or `'all'` for the totals). The
/// percentiles are nearest-rank: the value at rank ceil(n * p / 100) by duration.
fn window_sql(key: &str) -> String {
    format!(
        "SELECT family, COUNT(*) AS finished, SUM(outcome = 'succeeded') AS succeeded, \
         SUM(outcome = 'retrying') AS retried, SUM(outcome = 'dead') AS dead, \
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
    )
}

/// `window_ms` of history; "recent" is the last `recent_ms` of it (the live throughput).
pub async fn snapshot(
    db: &D1Database,
    now_ms: i64,
    window_ms: i64,
    recent_ms: i64,
) -> Result<Snapshot, ApiError> {
    let since = SqlValue::Int(now_ms - window_ms);
    let recent = SqlValue::Int(now_ms - recent_ms);
    let statements = vec![
        d1::statement(
            db,
            "SELECT family, status, COUNT(*) AS count FROM jobs GROUP BY family, status",
            &[],
        )?,
        d1::statement(
            db,
            "SELECT family, COUNT(*) AS backlog, SUM(held_at IS NOT NULL) AS held, \
             MIN(run_at) AS oldest_run_at FROM jobs \
             WHERE status IN ('scheduled', 'queued', 'retrying') AND run_at <= ? GROUP BY family",
            &[SqlValue::Int(now_ms)],
        )?,
        d1::statement(
            db,
            &window_sql("j.family"),
            &[recent.clone(), since.clone()],
        )?,
        d1::statement(db, &window_sql("'all'"), &[recent, since])?,
        d1::statement(db, "SELECT kind, name FROM pauses", &[])?,
    ];
    let results = d1::batch(db, statements).await?;
    let mut window: Vec<WindowRow> = d1::rows(&results[2])?;
    window.extend(d1::rows::<WindowRow>(&results[3])?);
    Ok(Snapshot {
        counts: d1::rows(&results[0])?,
        waiting: d1::rows(&results[1])?,
        window,
        pauses: d1::rows(&results[4])?,
    })
}
