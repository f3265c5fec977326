//! Enqueue's write: ONE D1 batch (one round trip, one transaction) whether the request carries
//! one job or a hundred.

use std::collections::HashMap;
use std::sync::LazyLock;

use jobs_shared::job::enqueue::NewJob;
use jobs_shared::job::lifecycle::JobStatus;
use jobs_shared::observe::d1_stats::D1Stats;
use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;
use worker::D1Database;

use super::chain::CHAIN_RUNNING;
use crate::d1::counted_batch;
use crate::sql::{rows_cte, status_list};

/// What enqueue did with one job: written now, or an existing live job with its dedup key.
pub struct Written {
    pub id: String,
    pub status: String,
    pub deduplicated: bool,
}

/// A new job as the INSERT reads it: [id, type, family, status, priority, payload, dedup_key,
/// max_attempts, run_at, next_steps, retry_policy, expires_at, correlation_id, enqueued_by,
/// created_at].
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
    &'a str,
    &'a str,
    i64,
);

/// What every job of an enqueue request records of the request: its correlation id, the
/// caller's name (never its token), and when it was accepted.
pub struct Accepted<'a> {
    pub correlation_id: &'a str,
    pub enqueued_by: &'a str,
    pub at_ms: i64,
}

#[derive(Deserialize)]
struct LiveRow {
    requested: String,
    id: String,
    status: String,
}

/// The rows of `jobs` as the INSERT binds them, each with what it records of the request that
/// brought it: one JSON value, whose size enqueue bounds before writing
/// (jobs_shared::job::enqueue::check_stored_size).
pub fn rows_json(jobs: &[NewJob], request: &Accepted<'_>) -> serde_json::Result<String> {
    // Positional arrays, not objects: each field SQLite extracts from a row's JSON is work per
    // row, and a key lookup costs more than an index.
    let rows: Vec<Row> = jobs
        .iter()
        .map(|job| {
            Row(
                &job.id,
                job.job_type.as_str(),
                job.family.as_str(),
                job.initial_status().as_str(),
                job.priority,
                &job.payload,
                job.dedup_key.as_deref(),
                job.max_attempts,
                job.run_at_ms,
                job.steps.as_deref(),
                job.retry_policy.as_deref(),
                job.expires_at_ms,
                request.correlation_id,
                request.enqueued_by,
                request.at_ms,
            )
        })
        .collect();
    serde_json::to_string(&rows)
}

/// Several requests' [`rows_json`] as the one array a grouped write binds, in order.
pub fn joined_rows<'a>(parts: impl Iterator<Item = &'a str>) -> String {
    let inner: Vec<&str> = parts
        .filter_map(|rows| rows.strip_prefix('[')?.strip_suffix(']'))
        .filter(|rows| !rows.is_empty())
        .collect();
    format!("[{}]", inner.join(","))
}

/// Inserts every job (`rows`: their [`rows_json`], or several requests' [`joined_rows`]) in one
/// batch of at most two set-based statements, whatever the number of jobs (per-statement
/// overhead is most of D1's cost at these sizes). A job whose (type, dedup_key) is already
/// live is not inserted; the SELECT after the INSERT names the live one. Rows start in the
/// outbox (`sent_at` NULL): the consumer's claim proves the send.
pub async fn job_insert_many(
    db: &D1Database,
    jobs: &[&NewJob],
    rows: &str,
) -> worker::Result<(Vec<Written>, D1Stats)> {
    let sql = &*INSERT_SQL;
    let rows = JsValue::from_str(rows);
    let insert = db.prepare(&sql.insert).bind(std::slice::from_ref(&rows))?;
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
                status: job.initial_status().as_str().to_string(),
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
            // Rows are inserted in order, so of two jobs in one write with the same live
            // dedup key the first is written and the second answered with its id.
            // (`WHERE true` tells SQLite's parser the ON CONFLICT belongs to the INSERT, not
            // to a join.)
            insert: format!(
                "{cte} INSERT INTO jobs (id, type, family, status, priority, payload, dedup_key, \
                 attempts, max_attempts, run_at, created_at, updated_at, next_steps, chain_status, \
                 correlation_id, retry_policy, expires_at, enqueued_by) \
                 SELECT o.value ->> 0, o.value ->> 1, o.value ->> 2, o.value ->> 3, \
                 o.value ->> 4, o.value ->> 5, o.value ->> 6, 0, o.value ->> 7, o.value ->> 8, \
                 o.value ->> 14, o.value ->> 14, o.value ->> 9, \
                 IIF(o.value ->> 9 IS NULL, NULL, '{CHAIN_RUNNING}'), o.value ->> 12, \
                 o.value ->> 10, o.value ->> 11, o.value ->> 13 FROM o WHERE true \
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joined_rows_is_one_array_of_every_request_s_rows_in_order() {
        let parts = ["[[\"a\",1],[\"b\",[2]]]", "[]", "[[\"c\",null]]"];
        let joined = joined_rows(parts.into_iter());
        assert_eq!(joined, "[[\"a\",1],[\"b\",[2]],[\"c\",null]]");
        let value: serde_json::Value = serde_json::from_str(&joined).unwrap();
        assert_eq!(value.as_array().unwrap().len(), 3);
        assert_eq!(joined_rows(std::iter::empty()), "[]");
    }
}
