//! SQL for writing new jobs and reading them back. Enqueue is ONE D1 batch (one round trip,
//! one transaction) whether the request carries one job or a hundred.

use jobs_shared::{sql_in_list, D1Stats, DeliveryPlan, JobStatus, NewJob};
use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;
use worker::{D1Database, D1Result};

/// What enqueue did with one job: written now, or an existing live job with its dedup key.
pub struct Written {
    pub id: String,
    pub status: String,
    pub deduplicated: bool,
}

/// A new job as the INSERT reads it: [id, type, family, status, priority, payload, dedup_key,
/// max_attempts, run_at, next_steps].
#[derive(Serialize)]
struct Row<'a>(
    &'a str,
    &'a str,
    &'a str,
    &'a str,
    i64,
    &'a str,
    Option<&'a str>,
    u32,
    i64,
    Option<&'a str>,
);

#[derive(Deserialize)]
struct LiveRow {
    requested: String,
    id: String,
    status: String,
}

pub fn initial_status(job: &NewJob) -> JobStatus {
    match job.delivery {
        DeliveryPlan::Send { .. } => JobStatus::Queued,
        DeliveryPlan::Hold { .. } => JobStatus::Scheduled,
    }
}

/// The rows of `jobs` as the INSERT binds them: one JSON value, whose size enqueue bounds
/// before writing (jobs_shared::check_stored_size).
pub fn rows_json(jobs: &[NewJob]) -> String {
    // Positional arrays, not objects: each field SQLite extracts from a row's JSON is work per
    // row, and a key lookup costs more than an index.
    let rows: Vec<Row> = jobs
        .iter()
        .map(|job| {
            Row(
                &job.id,
                job.job_type.as_str(),
                job.family.as_str(),
                initial_status(job).as_str(),
                job.priority,
                &job.payload,
                job.dedup_key.as_deref(),
                job.max_attempts,
                job.run_at_ms,
                job.steps.as_deref(),
            )
        })
        .collect();
    serde_json::to_string(&rows).unwrap_or_default()
}

/// Inserts every job (`rows` is their [`rows_json`]) in one batch of at most two set-based
/// statements, whatever the number of jobs (per-statement overhead is most of D1's cost at
/// these sizes). A job whose (type, dedup_key) is already live is not inserted; the SELECT
/// after the INSERT names the live one. Rows start in the outbox (`sent_at` NULL): the
/// consumer's claim proves the send.
pub async fn insert(
    db: &D1Database,
    jobs: &[NewJob],
    rows: &str,
    now_ms: i64,
    correlation_id: &str,
) -> worker::Result<(Vec<Written>, D1Stats)> {
    let live = sql_in_list(&JobStatus::live());
    let rows = JsValue::from_str(rows);
    // Rows are inserted in request order, so of two jobs in one request with the same live
    // dedup key the first is written and the second answered with its id. (`WHERE true`
    // tells SQLite's parser the ON CONFLICT belongs to the INSERT, not to a join.)
    let insert = db
        .prepare(format!(
            "INSERT INTO jobs (id, type, family, status, priority, payload, dedup_key, attempts, \
             max_attempts, run_at, created_at, updated_at, next_steps, chain_status, correlation_id) \
             SELECT j ->> 0, j ->> 1, j ->> 2, j ->> 3, j ->> 4, j ->> 5, j ->> 6, 0, j ->> 7, \
             j ->> 8, ?2, ?2, j ->> 9, CASE WHEN j ->> 9 IS NULL THEN NULL ELSE 'running' END, ?3 \
             FROM (SELECT value AS j FROM json_each(?1)) WHERE true \
             ON CONFLICT (type, dedup_key) WHERE dedup_key IS NOT NULL AND status IN ({live}) DO NOTHING"
        ))
        .bind(&[rows.clone(), num(now_ms), correlation_id.into()])?;
    // The live job now holding each requested dedup key: the new one, or the one it duplicates.
    // INDEXED BY: the planner cannot see how short a json_each list is and would rather scan
    // every live job by status; SQLite refuses the statement if the index cannot serve it.
    let holders = db
        .prepare(format!(
            "SELECT r.value ->> 0 AS requested, live.id, live.status \
             FROM json_each(?1) r JOIN jobs live INDEXED BY jobs_dedup_live \
             ON live.type = r.value ->> 1 \
             AND live.dedup_key = r.value ->> 6 \
             AND live.dedup_key IS NOT NULL AND live.status IN ({live})"
        ))
        .bind(&[rows])?;
    let with_keys = jobs.iter().any(|job| job.dedup_key.is_some());
    let statements = if with_keys {
        vec![insert, holders]
    } else {
        vec![insert]
    };

    let results = db.batch(statements).await?;
    let mut stats = D1Stats::default();
    stats.add_round_trip(results.iter().map(rows_touched));
    let holders: HashMap<String, LiveRow> = match results.get(1) {
        Some(result) => result
            .results::<LiveRow>()?
            .into_iter()
            .map(|row| (row.requested.clone(), row))
            .collect(),
        None => HashMap::new(),
    };
    let written = jobs
        .iter()
        .map(|job| match holders.get(&job.id) {
            Some(row) if row.id != job.id => Written {
                id: row.id.clone(),
                status: row.status.clone(),
                deduplicated: true,
            },
            _ => Written {
                id: job.id.clone(),
                status: initial_status(job).as_str().to_string(),
                deduplicated: false,
            },
        })
        .collect();
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
    /// Its place in a chain (crate::chain_view).
    pub parent_id: Option<String>,
    pub chain_step: Option<i64>,
    pub chain_status: Option<String>,
    pub chain_error: Option<String>,
    pub next_steps: Option<String>,
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
         finished_at, correlation_id, parent_id, chain_step, chain_status, chain_error, next_steps \
         FROM jobs WHERE id = ?",
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
