//! The `invocations` table (migration 0018): what the runs one consumer invocation records
//! share (shared `InvocationDetails`), kept once rather than on each succeeded job's row
//! (docs/app-guide.md "Run records and artifacts"). A job's row names its invocation
//! (`run_invocation`).

use jobs_shared::job::ids::job_id;
use jobs_shared::job::run_details::InvocationDetails;
use worker::{D1Database, D1PreparedStatement};

use crate::d1::json_text;

/// The invocation `id`'s shared details, written with its batch's record. A second record of
/// the same invocation (its runs recorded one by one after the batch's record was refused)
/// finds the row there: what it shares is the same.
pub fn invocation_insert(
    db: &D1Database,
    id: &str,
    details: &InvocationDetails<'_>,
) -> worker::Result<D1PreparedStatement> {
    let details = json_text(details);
    sql!(
        db,
        "INSERT OR IGNORE INTO invocations (id, details) VALUES (?1, ?2)",
        id,
        &details
    )
}

/// A day, the margin past a consumer invocation's wall time.
const DAY_MS: i64 = 86_400_000;

/// Retention: up to `limit` invocations begun before a day before `succeeded_before_ms`, once
/// no job can name them. Only a succeeded job names one, the invocation that ran it, which
/// began after the job was created and at most a consumer's wall time (15 min) before it
/// finished. The last of `jobs::job_delete_finished`'s statements, right after its delete of
/// jobs (cutoff `succeeded_before_ms`, at most `limit`), whose count of rows deleted it reads
/// (`changes()`; D1 runs a batch's statements in order on one connection): fewer than `limit`
/// means no succeeded job that delete takes is left, so every job kept was created or finished
/// after the cutoff and names no invocation this deletes. Otherwise the next tick tries again.
/// A dead or delayed job holds back nothing (ids are ULIDs, compared as text).
pub(crate) fn invocation_delete_unnamed(
    db: &D1Database,
    succeeded_before_ms: i64,
    limit: u32,
) -> worker::Result<D1PreparedStatement> {
    let before = job_id(succeeded_before_ms - DAY_MS, 0);
    sql!(
        db,
        "DELETE FROM invocations WHERE changes() < ?2 AND id IN \
         (SELECT id FROM invocations WHERE id < ?1 ORDER BY id LIMIT ?2)",
        &before,
        limit
    )
}
