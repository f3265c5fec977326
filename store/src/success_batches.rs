//! The `success_batches` table (migration 0016): one row per consumer batch, the successes it
//! recorded packed in one JSON array, so that a success writes no run record of its own
//! (README "Cost"). Read with the failed attempts of `job_runs` as one stream of
//! attempts ([`crate::attempts`]); deleted once out of every window and rolled into the
//! execution histogram.

use std::sync::LazyLock;

use serde::Serialize;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement};

use crate::d1::{json, num};
use crate::execution_histogram::WATERMARK;
use crate::sql::outcome_rows_of_running_jobs;

/// One success as the batch's row packs it: [type, duration_ms, wait_ms, latency_ms], its wait
/// (from enqueue to start) on its job's first run only, its latency from the job's due time.
#[derive(Serialize)]
pub struct Success<'a>(pub &'a str, pub i64, pub Option<i64>, pub i64);

/// The batch's row for the successes of `rows` (a JSON array of [id, run, started_at,
/// finished_at, ...], see `jobs::job_set_outcome_many`), `successes` in the same order:
/// `finished_at` the last one's end, `first_job_id` the smallest id. Only jobs still `running`
/// under that run count, as the jobs' own update is guarded: this statement comes before it,
/// while the guard still holds. When every job passes the guard (nearly always) the row holds
/// all of `successes` with the bound ends, and the statement reads each job once by its key;
/// otherwise only the successes of the jobs that pass, and their ends. A batch is one family's;
/// no row when none counts. Its SQL is built once per isolate: every consumer batch runs it.
pub fn success_batch_insert(
    db: &D1Database,
    rows: &JsValue,
    (finished_at, first_job_id, family): (i64, &str, &str),
    successes: &[Success],
) -> worker::Result<D1PreparedStatement> {
    db.prepare(&*INSERT_SQL).bind(&[
        rows.clone(),
        num(finished_at),
        first_job_id.into(),
        family.into(),
        num(successes.len() as i64),
        json(successes),
    ])
}

static INSERT_SQL: LazyLock<String> = LazyLock::new(|| {
    let running = outcome_rows_of_running_jobs("?1");
    // Empty when every job passes: the fallback then reads no job.
    let passing = outcome_rows_of_running_jobs("IIF((SELECT ok FROM g), '[]', ?1)");
    format!(
        "WITH g AS MATERIALIZED (SELECT COUNT(*) = ?5 AS ok FROM {running}) \
         INSERT INTO success_batches (finished_at, first_job_id, family, successes) \
         SELECT ?2, ?3, ?4, ?6 FROM g WHERE g.ok \
         UNION ALL SELECT MAX(o.value ->> 3), MIN(j.id), ?4, json_group_array(json(s.value)) \
         FROM {passing} JOIN json_each(?6) s ON s.key = o.key HAVING COUNT(*) > 0"
    )
});

/// Deletes up to `limit` rows of batches that finished before `before_ms` and that the
/// histogram's roll-up has already counted.
pub fn success_batch_delete_before(
    db: &D1Database,
    before_ms: i64,
    limit: u32,
) -> worker::Result<D1PreparedStatement> {
    db.prepare(format!(
        "DELETE FROM success_batches WHERE (finished_at, first_job_id) IN \
         (SELECT finished_at, first_job_id FROM success_batches WHERE finished_at < \
         MIN(?1, IFNULL((SELECT value FROM metric_counters WHERE {WATERMARK}), ?1)) LIMIT ?2)"
    ))
    .bind(&[num(before_ms), num(limit.into())])
}
