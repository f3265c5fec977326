//! Enqueue's write: ONE D1 batch (one round trip, one transaction) whether the request carries
//! one job or a hundred.

use std::collections::HashMap;

use jobs_shared::job::enqueue::NewJob;
use jobs_shared::observe::d1_stats::D1Stats;
use serde::{Deserialize, Serialize};
use worker::D1Database;

use crate::d1::counted_batch;

/// What enqueue did with one job: written now, or an existing live job with its dedup key.
pub struct Written {
    pub id: String,
    pub status: String,
    pub deduplicated: bool,
}

/// A new job as the INSERT reads it: its columns, each under the column's name, with what it
/// records of the request that brought it.
#[derive(Serialize)]
struct Row<'a> {
    id: &'a str,
    r#type: &'a str,
    family: &'a str,
    status: &'a str,
    priority: i64,
    payload: &'a str,
    dedup_key: Option<&'a str>,
    max_attempts: u32,
    run_at: i64,
    next_steps: Option<&'a str>,
    retry_policy: Option<&'a str>,
    expires_at: Option<i64>,
    /// Left out when NULL: nearly every job has none (nor the three after it).
    #[serde(skip_serializing_if = "Option::is_none")]
    flow_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    flow_limits: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dedup_until: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    debounce_ms: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    step_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    callback: Option<&'a str>,
    correlation_id: &'a str,
    enqueued_by: &'a str,
    created_at: i64,
}

/// What every job of an enqueue request records of the request: its correlation id, the
/// caller's name (never its token), and when it was accepted.
pub struct Accepted<'a> {
    pub correlation_id: &'a str,
    pub enqueued_by: &'a str,
    pub at_ms: i64,
}

/// The live job holding a requested dedup key.
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
    let rows: Vec<Row> = jobs
        .iter()
        .map(|job| Row {
            id: &job.id,
            r#type: job.job_type.as_str(),
            family: job.family.as_str(),
            status: job.initial_status().as_str(),
            priority: job.priority,
            payload: &job.payload,
            dedup_key: job.dedup_key.as_deref(),
            max_attempts: job.max_attempts,
            run_at: job.run_at_ms,
            next_steps: job.steps.as_deref(),
            retry_policy: job.retry_policy.as_deref(),
            expires_at: job.expires_at_ms,
            flow_key: job.flow_key.as_deref(),
            flow_limits: job.flow_limits.as_deref(),
            dedup_until: job.dedup_until_ms,
            debounce_ms: job.debounce_ms,
            step_name: job.name.as_deref(),
            callback: job.callback.as_deref(),
            correlation_id: request.correlation_id,
            enqueued_by: request.enqueued_by,
            created_at: request.at_ms,
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

/// Enqueue's INSERT of every row of `$rows` with the guard `$where` (a literal): each column
/// of a new job from its row. The rows' CTE is materialized: a row read straight from
/// `json_each` is rendered again at every field read, and materialized the INSERT takes a
/// quarter less time (docs/performance.md "Benchmark"). (A `WHERE` always stands before the
/// ON CONFLICT: it tells SQLite's parser the clause belongs to the INSERT, not to a join.) A
/// chain's first job starts it `running`.
macro_rules! job_insert {
    ($db:expr, $where:literal, $rows:expr) => {
        sql!(
            $db,
            "WITH o AS MATERIALIZED (SELECT value FROM json_each(?1)) \
             INSERT INTO jobs (id, type, family, status, priority, payload, dedup_key, \
             attempts, max_attempts, run_at, created_at, updated_at, next_steps, chain_status, \
             correlation_id, retry_policy, expires_at, enqueued_by, flow_key, flow_limits, \
             dedup_until, step_name, callback) \
             SELECT o.value ->> 'id', o.value ->> 'type', o.value ->> 'family', \
             o.value ->> 'status', o.value ->> 'priority', o.value ->> 'payload', \
             o.value ->> 'dedup_key', 0, o.value ->> 'max_attempts', o.value ->> 'run_at', \
             o.value ->> 'created_at', o.value ->> 'created_at', o.value ->> 'next_steps', \
             IIF(o.value ->> 'next_steps' IS NULL, NULL, 'running'), \
             o.value ->> 'correlation_id', o.value ->> 'retry_policy', o.value ->> 'expires_at', \
             o.value ->> 'enqueued_by', o.value ->> 'flow_key', o.value ->> 'flow_limits', \
             o.value ->> 'dedup_until', o.value ->> 'step_name', o.value ->> 'callback' \
             FROM o WHERE "
                + $where
                + " ON CONFLICT (type, dedup_key) WHERE dedup_key IS NOT NULL \
             AND status IN ('scheduled', 'queued', 'running', 'retrying') DO NOTHING",
            $rows
        )
    };
}

/// Inserts every job (`rows`: their [`rows_json`], or several requests' [`joined_rows`]) in one
/// batch of at most three set-based statements, whatever the number of jobs (per-statement
/// overhead is most of D1's cost at these sizes). A job whose (type, dedup_key) is already live,
/// or held by a finished job's window (`dedup_until`), is not inserted; the SELECT after the
/// INSERT names the job holding it; a debounced job that still waits takes the new payload and
/// waits again (docs/app-guide.md "Dedup windows and debounce"). Rows start in the outbox
/// (`sent_at` NULL): the consumer's claim proves the send.
pub async fn job_insert_many(
    db: &D1Database,
    jobs: &[&NewJob],
    rows: &str,
) -> worker::Result<(Vec<Written>, D1Stats)> {
    let (debounced, keyed) = (
        jobs.iter().any(|job| job.debounce_ms.is_some()),
        jobs.iter().any(|job| job.dedup_key.is_some()),
    );
    // Rows are inserted in order, so of two jobs in one write with the same live dedup key the
    // first is written and the second answered with its id. A request with a dedup key also
    // skips a key a window holds: a guard that costs each row a read (D1 counts one per row
    // wherever the subquery stands), so the others go without.
    let insert = if keyed {
        job_insert!(
            db,
            "(o.value ->> 'dedup_key' IS NULL OR NOT EXISTS (SELECT 1 FROM jobs w \
             INDEXED BY jobs_dedup_window WHERE w.type = o.value ->> 'type' \
             AND w.dedup_key = o.value ->> 'dedup_key' AND w.dedup_until IS NOT NULL \
             AND w.dedup_until > o.value ->> 'created_at'))",
            rows
        )?
    } else {
        job_insert!(db, "true", rows)?
    };
    let mut statements = Vec::with_capacity(3);
    if debounced {
        // A debounced job that still waits takes the new payload and waits again, at most five
        // quiet periods after it was enqueued; the INSERT then finds its key live.
        statements.push(sql!(
            db,
            "UPDATE jobs INDEXED BY jobs_dedup_live SET payload = r.value ->> 'payload', \
             run_at = MIN(r.value ->> 'run_at', created_at + 5 * (r.value ->> 'debounce_ms')), \
             updated_at = r.value ->> 'created_at' FROM json_each(?1) r \
             WHERE r.value ->> 'debounce_ms' IS NOT NULL AND jobs.type = r.value ->> 'type' \
             AND jobs.dedup_key = r.value ->> 'dedup_key' AND jobs.dedup_key IS NOT NULL \
             AND jobs.status IN ('scheduled', 'queued', 'running', 'retrying') \
             AND jobs.status IN ('scheduled', 'queued') AND jobs.started_at IS NULL \
             AND jobs.run_at > r.value ->> 'created_at'",
            rows
        )?);
    }
    statements.push(insert);
    if keyed {
        // The job now holding each requested dedup key: the live one (the new one, or the one
        // it duplicates), else the newest whose window still holds the key. INDEXED BY: the
        // planner cannot see how short a json_each list is and would rather scan every live
        // job by status; SQLite refuses the statement if the index cannot serve it.
        statements.push(sql!(db, LiveRow =>
            "SELECT r.value ->> 'id' AS \"requested!: String\", h.id, h.status \
             FROM json_each(?1) r JOIN jobs h ON h.id = COALESCE(\
             (SELECT live.id FROM jobs live INDEXED BY jobs_dedup_live \
             WHERE live.type = r.value ->> 'type' AND live.dedup_key = r.value ->> 'dedup_key' \
             AND live.dedup_key IS NOT NULL \
             AND live.status IN ('scheduled', 'queued', 'running', 'retrying')), \
             (SELECT w.id FROM jobs w INDEXED BY jobs_dedup_window \
             WHERE w.type = r.value ->> 'type' AND w.dedup_key = r.value ->> 'dedup_key' \
             AND w.dedup_until IS NOT NULL AND w.dedup_until > r.value ->> 'created_at' \
             ORDER BY w.dedup_until DESC LIMIT 1))",
            rows
        )?);
    }

    let mut stats = D1Stats::default();
    let results = counted_batch(db, statements, &mut stats).await?;
    // After the debounce's update, if any, and the insert.
    let holders: HashMap<String, LiveRow> =
        match keyed.then(|| &results[usize::from(debounced) + 1]) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joined_rows_is_one_array_of_every_request_s_rows_in_order() {
        let parts = [
            r#"[{"id":"a","run_at":1},{"id":"b","run_at":2}]"#,
            "[]",
            r#"[{"id":"c","run_at":null}]"#,
        ];
        let joined = joined_rows(parts.into_iter());
        assert_eq!(
            joined,
            r#"[{"id":"a","run_at":1},{"id":"b","run_at":2},{"id":"c","run_at":null}]"#
        );
        let value: serde_json::Value = serde_json::from_str(&joined).unwrap();
        assert_eq!(value.as_array().unwrap().len(), 3);
        assert_eq!(joined_rows(std::iter::empty()), "[]");
    }

    #[test]
    fn the_dedup_guard_repeats_the_index_s_live_states() {
        let live: Vec<String> = jobs_shared::job::lifecycle::JobStatus::live()
            .iter()
            .map(|s| format!("'{s}'"))
            .collect();
        let guard = format!("status IN ({})", live.join(", "));
        let source = crate::sql::written(include_str!("insert.rs"));
        // The insert's conflict target, the holder's read and the debounce's update.
        assert_eq!(source.matches(&guard).count(), 3, "{guard}");
        let migration = include_str!("../../../migrations/0001_jobs.sql").replace(",'", ", '");
        assert!(migration.contains(&guard), "jobs_dedup_live: {guard}");
    }
}
