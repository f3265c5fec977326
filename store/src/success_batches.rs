//! The `success_batches` table (migration 0016): one row per consumer batch, the successes it
//! recorded packed in one JSON array, so that a success writes no run record of its own
//! (docs/performance.md "Cost"). Read with the failed attempts of `job_runs` as one stream of
//! attempts ([`crate::attempts`]); deleted once out of every window and rolled into the
//! execution histogram.

use jobs_shared::job::family::Family;
use serde::Serialize;
use worker::{D1Database, D1PreparedStatement};

use crate::d1::json_text;

/// One success as the batch's row keeps it: `[type, duration_ms, wait_ms, latency_ms]`, its
/// wait (from enqueue to start) on its job's first run only, its latency from the job's due
/// time. An array, not an object: the layout migration 0016 stores, kept small since every
/// success writes one; the view `success_attempts` (migration 0021) names its fields for every
/// statement that reads them.
#[derive(Serialize)]
pub struct Success<'a>(pub &'a str, pub i64, pub Option<i64>, pub i64);

/// A batch's successes as its row records them: `rows`, the record's succeeded rows (the JSON
/// array `jobs::job_set_outcome_many` binds: `id`, `run`, `finished_at`...), and `successes`
/// in the same order; `finished_at` the last one's end, `first_job_id` the smallest id, of one
/// family's batch.
pub struct SuccessBatch<'a> {
    pub rows: &'a str,
    pub successes: &'a [Success<'a>],
    pub finished_at: i64,
    pub first_job_id: &'a str,
    pub family: Family,
}

/// The batch's row. Only the jobs the succeeded update just moved count, as its guard let
/// them (still `running` under that run): this statement comes right after that update, in
/// the same batch, and reads its count of rows changed (`changes()`; D1 runs a batch's
/// statements in order on one connection). When it moved them all (nearly always) the row
/// holds all of `successes` with the bound ends and reads no job; when it moved some, only
/// theirs (now `succeeded` under that run, ended at their row's end: no other write leaves a
/// job so), with their ends; when it moved none, no row (a record written twice counts once).
pub fn success_batch_insert(
    db: &D1Database,
    batch: &SuccessBatch<'_>,
) -> worker::Result<D1PreparedStatement> {
    let successes = json_text(batch.successes);
    // The second SELECT reads the rows only when the update moved some but not all; the
    // unary `+` keeps SQLite on the primary key.
    sql!(
        db,
        "INSERT INTO success_batches (finished_at, first_job_id, family, successes) \
         SELECT ?2, ?3, ?4, ?6 WHERE changes() = ?5 \
         UNION ALL SELECT MAX(o.value ->> 'finished_at'), MIN(j.id), ?4, \
         json_group_array(json(s.value)) \
         FROM json_each(IIF(changes() IN (0, ?5), '[]', ?1)) o JOIN jobs j \
         ON j.id = o.value ->> 'id' AND +j.status = 'succeeded' AND j.runs = o.value ->> 'run' \
         AND j.finished_at = o.value ->> 'finished_at' \
         JOIN json_each(?6) s ON s.key = o.key HAVING COUNT(*) > 0",
        batch.rows,
        batch.finished_at,
        batch.first_job_id,
        batch.family.as_str(),
        batch.successes.len() as i64,
        &successes
    )
}

/// Deletes up to `limit` rows of batches that finished before `before_ms` and that the
/// histogram's roll-up has already counted (its watermark in `metric_counters`).
pub fn success_batch_delete_before(
    db: &D1Database,
    before_ms: i64,
    limit: u32,
) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "DELETE FROM success_batches WHERE (finished_at, first_job_id) IN \
         (SELECT finished_at, first_job_id FROM success_batches WHERE finished_at < \
         MIN(?1, IFNULL((SELECT value FROM metric_counters \
         WHERE name = 'watermark' AND label = 'execution_histogram'), ?1)) LIMIT ?2)",
        before_ms,
        limit
    )
}
