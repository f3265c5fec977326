//! The `invocations` table (migration 0018): what the runs one consumer invocation records
//! share (shared `InvocationDetails`), kept once rather than on each succeeded job's row
//! (README "Run records and artifacts"). A job's row names its invocation (`run_invocation`).

use jobs_shared::InvocationDetails;
use worker::{D1Database, D1PreparedStatement};

use crate::d1::{json, num};

/// The invocation `id`'s shared details, written with its batch's record. A second record of
/// the same invocation (its runs recorded one by one after the batch's record was refused)
/// finds the row there: what it shares is the same.
pub fn invocation_insert(
    db: &D1Database,
    id: &str,
    details: &InvocationDetails<'_>,
) -> worker::Result<D1PreparedStatement> {
    db.prepare("INSERT OR IGNORE INTO invocations (id, details) VALUES (?1, ?2)")
        .bind(&[id.into(), json(details)])
}

/// Retention: up to `limit` invocations older than the oldest job, which no job can name (an
/// invocation runs a job after it was created; ids are ULIDs, compared by their 10-character
/// time part). While the table has no job it keeps them all.
pub fn invocation_delete_unnamed(
    db: &D1Database,
    limit: u32,
) -> worker::Result<D1PreparedStatement> {
    db.prepare(
        "DELETE FROM invocations WHERE id IN (SELECT id FROM invocations \
         WHERE id < (SELECT substr(MIN(id), 1, 10) FROM jobs) ORDER BY id LIMIT ?1)",
    )
    .bind(&[num(limit.into())])
}
