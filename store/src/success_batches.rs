//! The `success_batches` table (migration 0016): one row per consumer batch, the successes it
//! recorded packed in one JSON array, so that a success writes no run record of its own
//! (README "Cost"). Read with the failed attempts of `job_runs` as one stream of
//! attempts ([`crate::attempts`]); deleted once out of every window and rolled into the
//! execution histogram.

use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement};

use crate::d1::num;
use crate::execution_histogram::WATERMARK;
use crate::sql::outcome_rows_of_running_jobs;

/// Records the successes of `rows` (a JSON array of [id, run, started_at, finished_at, ...],
/// see `jobs::job_set_outcome_many`) as one row, each success as [type, duration_ms, wait_ms,
/// latency_ms]: its wait (from enqueue to start) on its job's first run only, its latency from
/// the job's due time. Only jobs still `running` under that run count, as the job's own
/// update is guarded: this statement comes before it, while the guard still holds. A batch is
/// one family's; no row when nothing counts.
pub fn success_batch_insert(
    db: &D1Database,
    rows: &JsValue,
) -> worker::Result<D1PreparedStatement> {
    db.prepare(format!(
        "INSERT INTO success_batches (finished_at, first_job_id, family, successes) \
         SELECT MAX(o.value ->> 3), MIN(j.id), j.family, json_group_array(json_array(j.type, \
         (o.value ->> 3) - (o.value ->> 2), \
         CASE WHEN j.runs = 1 THEN (o.value ->> 2) - j.created_at END, \
         (o.value ->> 3) - j.run_at)) \
         FROM {rows} GROUP BY j.family",
        rows = outcome_rows_of_running_jobs(),
    ))
    .bind(std::slice::from_ref(rows))
}

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
