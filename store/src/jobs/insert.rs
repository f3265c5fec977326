//! Enqueue's write: ONE D1 batch (one round trip, one transaction) whether the request carries
//! one job or a hundred.

use std::collections::HashMap;
use std::sync::LazyLock;

use jobs_shared::{D1Stats, DeliveryPlan, JobStatus, NewJob};
use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;
use worker::D1Database;

use super::chain::CHAIN_RUNNING;
use crate::d1::{counted_batch, num};
use crate::sql::{rows_cte, status_list};

/// What enqueue did with one job: written now, or an existing live job with its dedup key.
pub struct Written {
    pub id: String,
    pub status: String,
    pub deduplicated: bool,
}

/// A new job as the INSERT reads it: [id, type, family, status, priority, payload, dedup_key,
/// max_attempts, run_at, next_steps, retry_policy, expires_at].
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
    Option<&'a str>,
    Option<i64>,
);

#[derive(Deserialize)]
struct LiveRow {
    requested: String,
    id: String,
    status: String,
}

pub(super) fn initial_status(job: &NewJob) -> JobStatus {
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
                job.retry_policy.as_deref(),
                job.expires_at_ms,
            )
        })
        .collect();
    serde_json::to_string(&rows).unwrap_or_default()
}

/// Inserts every job (`rows` is their [`rows_json`]) in one batch of at most two set-based
/// statements, whatever the number of jobs (per-statement overhead is most of D1's cost at
/// these sizes). A job whose (type, dedup_key) is already live is not inserted; the SELECT
/// after the INSERT names the live one. Rows start in the outbox (`sent_at` NULL): the
/// consumer's claim proves the send. `enqueued_by` names the caller (never its token).
pub async fn job_insert_many(
    db: &D1Database,
    jobs: &[NewJob],
    rows: &str,
    now_ms: i64,
    (correlation_id, enqueued_by): (&str, &str),
) -> worker::Result<(Vec<Written>, D1Stats)> {
    let sql = &*INSERT_SQL;
    let rows = JsValue::from_str(rows);
    let insert = db.prepare(&sql.insert).bind(&[
        rows.clone(),
        num(now_ms),
        correlation_id.into(),
        enqueued_by.into(),
    ])?;
    let mut statements = vec![insert];
    if jobs.iter().any(|job| job.dedup_key.is_some()) {
        statements.push(db.prepare(&sql.holders).bind(&[rows])?);
    }

    let mut stats = D1Stats::default();
    let results = counted_batch(db, statements, &mut stats).await?;
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

/// Enqueue's two statements (see [`job_insert_many`]), built once per isolate: every enqueue
/// request runs them.
static INSERT_SQL: LazyLock<InsertSql> = LazyLock::new(InsertSql::build);

struct InsertSql {
    insert: String,
    holders: String,
}

impl InsertSql {
    fn build() -> InsertSql {
        let live = status_list(&JobStatus::live());
        InsertSql {
            // Rows are inserted in request order, so of two jobs in one request with the
            // same live dedup key the first is written and the second answered with its
            // id. (`WHERE true` tells SQLite's parser the ON CONFLICT belongs to the
            // INSERT, not to a join.)
            insert: format!(
                "{cte} INSERT INTO jobs (id, type, family, status, priority, payload, dedup_key, \
                 attempts, max_attempts, run_at, created_at, updated_at, next_steps, chain_status, \
                 correlation_id, retry_policy, expires_at, enqueued_by) \
                 SELECT o.value ->> 0, o.value ->> 1, o.value ->> 2, o.value ->> 3, o.value ->> 4, \
                 o.value ->> 5, o.value ->> 6, 0, o.value ->> 7, o.value ->> 8, ?2, ?2, o.value ->> 9, \
                 IIF(o.value ->> 9 IS NULL, NULL, '{CHAIN_RUNNING}'), ?3, o.value ->> 10, \
                 o.value ->> 11, ?4 FROM o WHERE true \
                 ON CONFLICT (type, dedup_key) WHERE dedup_key IS NOT NULL AND status IN ({live}) DO NOTHING",
                cte = rows_cte("?1"),
            ),
            // The live job now holding each requested dedup key: the new one, or the one
            // it duplicates. INDEXED BY: the planner cannot see how short a json_each list
            // is and would rather scan every live job by status; SQLite refuses the
            // statement if the index cannot serve it.
            holders: format!(
                "SELECT r.value ->> 0 AS requested, live.id, live.status \
                 FROM json_each(?1) r JOIN jobs live INDEXED BY jobs_dedup_live \
                 ON live.type = r.value ->> 1 \
                 AND live.dedup_key = r.value ->> 6 \
                 AND live.dedup_key IS NOT NULL AND live.status IN ({live})"
            ),
        }
    }
}
