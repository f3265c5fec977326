//! What a DLQ arrival does to its job. An arrival means the queue gave up on one message, not
//! that the job is over, so only a job that waits for a message (`queued` or `retrying`, not
//! held by a pause) is touched: back to the outbox (`sent_at` NULL, `run_at` kept) for the
//! sweep to send again, or `dead` (delivery_exhausted) if it has no attempt left.

use worker::{D1Database, D1PreparedStatement};

/// The two statements for `arrivals` (the JSON array of `dead_letters::Arrival`s, see
/// `dead_letters::arrivals_json`), each returning the ids it touched (rows: `id`): the jobs
/// made dead, then the jobs put back in the outbox.
pub fn job_settle_dlq_arrivals(
    db: &D1Database,
    arrivals: &str,
    now_ms: i64,
) -> worker::Result<[D1PreparedStatement; 2]> {
    let exhausted = sql!(
        db,
        "UPDATE jobs SET status = 'dead', error_class = 'delivery_exhausted', \
         last_error = 'the queue gave up delivering this job and it has no attempt left', \
         finished_at = ?1, updated_at = ?1, lease_until = NULL, escalated_at = NULL \
         WHERE id IN (SELECT value ->> 'id' FROM json_each(?2)) \
         AND +status IN ('queued', 'retrying') AND held_at IS NULL \
         AND attempts >= max_attempts RETURNING id",
        now_ms,
        arrivals
    )?;
    let requeue = sql!(
        db,
        "UPDATE jobs SET sent_at = NULL, updated_at = ?1 \
         WHERE id IN (SELECT value ->> 'id' FROM json_each(?2)) \
         AND +status IN ('queued', 'retrying') AND held_at IS NULL RETURNING id",
        now_ms,
        arrivals
    )?;
    Ok([exhausted, requeue])
}
