//! SQL for writing new jobs and reading them back. Enqueue is ONE D1 batch (one round trip,
//! one transaction) whether the request carries one job or a hundred.

use jobs_shared::{sql_in_list, D1Stats, Delivery, JobStatus, NewJob};
use serde::Deserialize;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, D1Result};

/// What enqueue did with one job: written now, or an existing live job with its dedup key.
pub struct Written {
    pub id: String,
    pub status: String,
    pub deduplicated: bool,
}

#[derive(Deserialize)]
struct LiveRow {
    id: String,
    status: String,
}

pub fn initial_status(job: &NewJob) -> JobStatus {
    match job.delivery {
        Delivery::Send { .. } => JobStatus::Queued,
        Delivery::Hold { .. } => JobStatus::Scheduled,
    }
}

/// Inserts every job in one batch. A job whose (type, dedup_key) is already live is not
/// inserted; the SELECT that follows its INSERT in the same batch names the live one.
/// Rows start in the outbox (`sent_at` NULL): the consumer's claim proves the send.
pub async fn insert(
    db: &D1Database,
    jobs: &[NewJob],
    now_ms: i64,
    correlation_id: &str,
) -> worker::Result<(Vec<Written>, D1Stats)> {
    let live = sql_in_list(&JobStatus::live());
    let insert_sql = format!(
        "INSERT INTO jobs (id, type, family, status, priority, payload, dedup_key, attempts, \
         max_attempts, run_at, created_at, updated_at, next_steps, chain_status, correlation_id) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, ?8, ?9, ?10, ?10, ?11, \
         CASE WHEN ?11 IS NULL THEN NULL ELSE 'running' END, ?12) \
         ON CONFLICT (type, dedup_key) WHERE dedup_key IS NOT NULL AND status IN ({live}) DO NOTHING"
    );
    let live_sql = format!(
        "SELECT id, status FROM jobs WHERE type = ?1 AND dedup_key = ?2 AND status IN ({live})"
    );

    let mut statements: Vec<D1PreparedStatement> = Vec::with_capacity(jobs.len() * 2);
    for job in jobs {
        statements.push(db.prepare(&insert_sql).bind(&[
            job.id.as_str().into(),
            job.job_type.as_str().into(),
            job.family.as_str().into(),
            initial_status(job).as_str().into(),
            num(job.priority),
            job.payload.as_str().into(),
            opt_str(job.dedup_key.as_deref()),
            num(job.max_attempts.into()),
            num(job.run_at_ms),
            num(now_ms),
            opt_str(job.steps.as_deref()),
            correlation_id.into(),
        ])?);
        if let Some(key) = &job.dedup_key {
            statements.push(
                db.prepare(&live_sql)
                    .bind(&[job.job_type.as_str().into(), key.as_str().into()])?,
            );
        }
    }

    let results = db.batch(statements).await?;
    let mut stats = D1Stats::default();
    stats.add_round_trip(results.iter().map(rows_touched));
    let mut results = results.into_iter();
    let mut written = Vec::with_capacity(jobs.len());
    for job in jobs {
        results.next(); // the INSERT
        let fresh = Written {
            id: job.id.clone(),
            status: initial_status(job).as_str().to_string(),
            deduplicated: false,
        };
        if job.dedup_key.is_none() {
            written.push(fresh);
            continue;
        }
        let rows: Vec<LiveRow> = match results.next() {
            Some(result) => result.results()?,
            None => Vec::new(),
        };
        written.push(match rows.into_iter().next() {
            Some(row) if row.id != job.id => Written {
                id: row.id,
                status: row.status,
                deduplicated: true,
            },
            _ => fresh,
        });
    }
    Ok((written, stats))
}

/// (rows read, rows written) from a statement's meta, for D1Stats.
fn rows_touched(result: &D1Result) -> (Option<usize>, Option<usize>) {
    result
        .meta()
        .ok()
        .flatten()
        .map_or((None, None), |m| (m.rows_read, m.rows_written))
}

pub fn num(n: i64) -> JsValue {
    JsValue::from_f64(n as f64)
}

pub fn opt_str(s: Option<&str>) -> JsValue {
    s.map_or(JsValue::NULL, JsValue::from_str)
}

/// A job row as the API shows it.
pub struct JobRow {
    pub id: String,
    pub job_type: String,
    pub family: String,
    pub status: String,
    pub priority: i64,
    pub payload: String,
    pub dedup_key: Option<String>,
    pub attempts: i64,
    pub max_attempts: i64,
    pub run_at: i64,
    pub error_class: Option<String>,
    pub last_error: Option<String>,
    pub result: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    pub correlation_id: Option<String>,
}

/// One attempt's record.
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
}

/// The job and its runs, read concurrently (one round trip of latency).
pub async fn find(
    conn: &sqlx_d1::D1Connection,
    id: &str,
) -> Result<Option<(JobRow, Vec<RunRow>)>, sqlx_d1::Error> {
    let job = sqlx_d1::query_as!(
        JobRow,
        "SELECT id, type AS job_type, family, status, priority, payload, dedup_key, attempts, max_attempts, \
         run_at, error_class, last_error, result, created_at, updated_at, started_at, \
         finished_at, correlation_id FROM jobs WHERE id = ?",
        id
    )
    .fetch_optional(conn);
    let runs = sqlx_d1::query_as!(
        RunRow,
        "SELECT run, attempt, started_at, finished_at, outcome, error_class, error_message, \
         duration_ms, cost_cents FROM job_runs WHERE job_id = ? ORDER BY run",
        id
    )
    .fetch_all(conn);
    let (job, runs) = futures::join!(job, runs);
    let runs = runs?;
    Ok(job?.map(|job| (job, runs)))
}
