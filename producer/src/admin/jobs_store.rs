//! SQL for the operator's job lists: filtered, in a stable order (priority high to low, then
//! oldest first, since ids are ULIDs), paged by an opaque cursor; and the recent failed runs.

use jobs_shared::{api::page_cursor, ApiError, JobFilter, JobStatus, SqlValue};
use serde::Deserialize;
use worker::D1Database;

use super::d1;

/// The columns every admin job summary shows; also what a job action's `RETURNING` gives back.
pub const SUMMARY_COLUMNS: &str = "id, type, family, status, priority, attempts, max_attempts, \
     runs, run_at, created_at, finished_at, error_class, last_error, held_at";

/// The dead-letter list's extra columns: how often the job reached its family's DLQ.
const DLQ_COLUMNS: &str = ", (SELECT COUNT(*) FROM dead_letters d WHERE d.job_id = jobs.id) \
     AS dlq_arrivals, (SELECT MAX(arrived_at) FROM dead_letters d WHERE d.job_id = jobs.id) \
     AS dlq_last_arrived_at";

#[derive(Deserialize)]
pub struct SummaryRow {
    pub id: String,
    #[serde(rename = "type")]
    pub job_type: String,
    pub family: String,
    pub status: String,
    pub priority: i64,
    pub attempts: i64,
    pub max_attempts: i64,
    pub runs: i64,
    pub run_at: i64,
    pub created_at: i64,
    pub finished_at: Option<i64>,
    pub error_class: Option<String>,
    pub last_error: Option<String>,
    pub held_at: Option<i64>,
    #[serde(default)]
    pub dlq_arrivals: Option<i64>,
    #[serde(default)]
    pub dlq_last_arrived_at: Option<i64>,
}

pub struct Page<'a> {
    pub filter: &'a JobFilter,
    /// Restricts the statuses (the dead-letter list's `dead`) and adds each job's DLQ arrivals.
    pub only: Option<&'a [JobStatus]>,
    pub after: Option<(i64, String)>,
    pub limit: u32,
}

/// One page, plus one row more than `limit` when there is a next page.
pub async fn list(db: &D1Database, page: &Page<'_>) -> Result<Vec<SummaryRow>, ApiError> {
    let (mut conds, mut values) = page.filter.to_sql(page.only);
    if let Some((priority, id)) = &page.after {
        conds.push_str(" AND (priority < ? OR (priority = ? AND id > ?))");
        values.extend([
            SqlValue::Int(*priority),
            SqlValue::Int(*priority),
            d1::text(id.as_str()),
        ]);
    }
    values.push(SqlValue::Int(i64::from(page.limit) + 1));
    let extra = if page.only.is_some() { DLQ_COLUMNS } else { "" };
    let sql = format!(
        "SELECT {SUMMARY_COLUMNS}{extra} FROM jobs WHERE {conds} \
         ORDER BY priority DESC, id LIMIT ?"
    );
    let results = d1::batch(db, vec![d1::statement(db, &sql, &values)?]).await?;
    d1::rows(&results[0])
}

pub fn cursor(row: &SummaryRow) -> String {
    page_cursor::encode(row.priority, &row.id)
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

/// The latest failed attempts (retried or dead), newest first.
pub async fn recent_failures(db: &D1Database, limit: u32) -> Result<Vec<FailureRow>, ApiError> {
    let stmt = d1::statement(
        db,
        "SELECT r.job_id, j.type, j.family, j.status, r.run, r.attempt, r.finished_at, \
         r.outcome, r.error_class, r.error_message \
         FROM job_runs r JOIN jobs j ON j.id = r.job_id \
         WHERE r.outcome IN ('retrying', 'dead') ORDER BY r.finished_at DESC LIMIT ?",
        &[SqlValue::Int(i64::from(limit))],
    )?;
    let results = d1::batch(db, vec![stmt]).await?;
    d1::rows(&results[0])
}
