//! The `success_batches` table (migration 0016): one row per consumer batch, the successes it
//! recorded packed in one JSON array, so that a success writes no run record of its own
//! (docs/performance.md "Cost"). Read with the failed attempts of `job_runs` as one stream of
//! attempts ([`crate::attempts`]); deleted once out of every window and rolled into the
//! execution histogram.

use std::sync::LazyLock;

use jobs_shared::job::lifecycle::JobStatus::Succeeded;
use serde::Serialize;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement};

use crate::d1::{json, num};
use crate::execution_histogram::WATERMARK;
use crate::sql::outcome_rows_of_jobs;

/// One success as the batch's row packs it: [type, duration_ms, wait_ms, latency_ms], its wait
/// (from enqueue to start) on its job's first run only, its latency from the job's due time.
#[derive(Serialize)]
pub struct Success<'a>(pub &'a str, pub i64, pub Option<i64>, pub i64);

/// The batch's row for the successes of `rows` (a JSON array of [id, run, started_at,
/// finished_at, ...], see `jobs::job_set_outcome_many`), `successes` in the same order:
/// `finished_at` the last one's end, `first_job_id` the smallest id. Only the jobs the
/// succeeded update just moved count, as its guard let them (still `running` under that run):
/// this statement comes right after that update, in the same batch, and reads its count of
/// rows changed (`changes()`; D1 runs a batch's statements in order on one connection). When
/// it moved them all (nearly always) the row holds all of `successes` with the bound ends and
/// reads no job; when it moved some, only theirs (now `succeeded` under that run, ended at their
/// row's end: no other write leaves a job so), with their ends; when it moved none, no row
/// (a record written twice counts once). A batch is one family's. Its SQL is built once per
/// isolate: every consumer batch runs it.
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
    // Empty unless the update moved some of the rows but not all: then the rows it moved.
    let moved = format!(
        "{} AND j.finished_at = o.value ->> 3",
        outcome_rows_of_jobs("IIF(changes() IN (0, ?5), '[]', ?1)", Succeeded)
    );
    format!(
        "INSERT INTO success_batches (finished_at, first_job_id, family, successes) \
         SELECT ?2, ?3, ?4, ?6 WHERE changes() = ?5 \
         UNION ALL SELECT MAX(o.value ->> 3), MIN(j.id), ?4, json_group_array(json(s.value)) \
         FROM {moved} JOIN json_each(?6) s ON s.key = o.key HAVING COUNT(*) > 0"
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
